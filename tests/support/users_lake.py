"""The small plain-Parquet lake of the request and approval tests: ``crm.users`` (two bigint user
ids, the subject key) feeding the external topic ``stream.cdc`` through one SQL statement, owned by
``streaming-team``. No Spark: plans, requests, approvals and attestations run on it in-process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

USER_IDS = (7_000_000_001, 8_000_000_002)


def users_lake(root: Path, **settings: Any) -> Path:
    """The workspace, written at ``root``; ``settings`` are added to its piitracer.yaml (``policy``,
    ``approvers``...). Returns ``root``."""
    (root / "users").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"user_id": pa.array(USER_IDS, pa.int64())}), root / "users" / "part-0.parquet")
    (root / "sql").mkdir(exist_ok=True)
    (root / "sql" / "p.sql").write_text("INSERT INTO stream.cdc SELECT user_id FROM crm.users;\n")
    (root / "piitracer.yaml").write_text(yaml.safe_dump({
        "lineage": {"sql": [{"path": "sql"}]}, "owners": ["streaming-team"], **settings,
        "catalog": {"crm.users": {"format": "parquet", "location": "users", "columns": ["user_id"],
                                  "identifiers": ["user_id"], "subject_key": "user_id"},
                    "stream.cdc": {"format": "external", "owner": "streaming-team (topic cdc)", "columns": ["user_id"]}}}))
    return root
