"""piitracer's own runs as OpenLineage events (the workspace's ``openlineage:`` block): a START
when an execution begins, COMPLETE or FAIL when it ends, with the datasets it changed as outputs,
so erasure jobs appear in Marquez or DataHub like any other job.

What an event may hold: the plan id, dataset ids and locations, step counts, the run's status and
an error line (errors never carry subject values). Never a subject value, never the request ids.
A transport failure is logged and the erasure goes on: lineage reporting must not stop it.
"""

from __future__ import annotations

import logging
import os
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Sequence

from piitracer.model.settings import LineageEmitSettings

log = logging.getLogger(__name__)
PRODUCER = "https://github.com/piitracer/piitracer"


@dataclass(frozen=True)
class ChangedDataset:
    """One dataset a run changed: its catalog id and, when catalogued, its storage location."""

    dataset: str
    location: str | None


def run_uuid(plan_id: str, run_id: str) -> str:
    """The OpenLineage run id (a UUID) of one execution of a plan."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"piitracer:{plan_id}:{run_id}"))


def emit_run_event(settings: LineageEmitSettings, state: str, run: str, plan_id: str,
                   changed: Sequence[ChangedDataset] = (), error: str | None = None) -> bool:
    """Send one event (``state``: START, COMPLETE or FAIL); True when the transport took it."""
    from openlineage.client import OpenLineageClient
    from openlineage.client.event_v2 import Job, OutputDataset, Run, RunEvent, RunState
    from openlineage.client.facet_v2 import error_message_run, symlinks_dataset

    facets: dict[str, Any] = {}
    if error:
        facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(message=error, programmingLanguage="python",
                                                                          producer=PRODUCER)
    outputs = []
    for item in changed:
        namespace, name = dataset_name(item)
        alias = symlinks_dataset.SymlinksDatasetFacet(identifiers=[symlinks_dataset.Identifier(
            namespace=settings.namespace, name=item.dataset, type="TABLE")], producer=PRODUCER)
        outputs.append(OutputDataset(namespace=namespace, name=name, facets={"symlinks": alias}))
    event = RunEvent(eventType=RunState[state], eventTime=datetime.now(timezone.utc).isoformat(),
                     run=Run(runId=run, facets=facets),
                     job=Job(namespace=settings.namespace, name=f"{settings.job_name}.{plan_id[:16]}"),
                     producer=PRODUCER, outputs=outputs)
    try:
        OpenLineageClient(config={"transport": transport_config(settings)}).emit(event)
    except Exception as failure:  # reporting lineage must never stop or fail an erasure
        log.warning("could not emit the OpenLineage %s event: %s", state, type(failure).__name__)
        return False
    return True


def transport_config(settings: LineageEmitSettings) -> dict[str, Any]:
    """openlineage-python's transport config, with the API key from ``api_key_env`` when set."""
    config = dict(settings.transport)
    if settings.api_key_env:
        key = os.environ.get(settings.api_key_env)
        if key:
            config["auth"] = {"type": "api_key", "apiKey": key}
    return config


def dataset_name(item: ChangedDataset) -> tuple[str, str]:
    """OpenLineage's naming of a stored dataset: ``s3://bucket`` + key prefix, ``file`` + path;
    the catalog id under the ``piitracer`` namespace when there is no location."""
    location = item.location
    if not location:
        return "piitracer", item.dataset
    if "://" in location:
        scheme, rest = location.split("://", 1)
        if scheme == "file":
            return "file", "/" + rest.lstrip("/")
        bucket, _, path = rest.partition("/")
        return f"{scheme}://{bucket}", "/" + path.strip("/")
    return "file", location
