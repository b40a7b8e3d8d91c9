"""Where piitracer keeps its own files in a workspace: the one module that spells ``.piitracer/``.

Everything piitracer writes for itself lives in ``<workspace>/.piitracer/`` (folder mode 0700):
the journal, the audit log, the request store, the lineage store and the OpenLineage events it
received, the console's token hashes, the workspace's identity, and the demo's own keys and build
markers. No dataset location may hold any of it (:meth:`StateLayout.protected`): an orphan removal
or a rewrite there would destroy the audit trail.

>>> layout = StateLayout(Path("/lake/ws"))
>>> layout.journal
PosixPath('/lake/ws/.piitracer/journal.sqlite')
>>> StateLayout.relative("lineage", "store.sqlite")
PosixPath('.piitracer/lineage/store.sqlite')
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

STATE_FOLDER = ".piitracer"
WORKSPACE_FILE = "piitracer.yaml"
DISCOVERED_FILE = "catalog.discovered.yaml"


@dataclass(frozen=True)
class StateLayout:
    """piitracer's own files under one workspace folder ``root``."""

    root: Path

    @staticmethod
    def relative(*parts: str) -> Path:
        """A path under the state folder, relative to a workspace (``.piitracer/<parts>``)."""
        return Path(STATE_FOLDER, *parts)

    def path(self, *parts: str) -> Path:
        """A path under this workspace's state folder."""
        return Path(self.root) / self.relative(*parts)

    @property
    def folder(self) -> Path:
        """``<root>/.piitracer``."""
        return self.path()

    @property
    def journal(self) -> Path:
        """The executor's journal (every step before and after it runs; resolved values sealed)."""
        return self.path("journal.sqlite")

    @property
    def audit_log(self) -> Path:
        """The tamper-evident audit log."""
        return self.path("audit.sqlite")

    @property
    def request_store(self) -> Path:
        """The request store (values only under per-request data keys)."""
        return self.path("requests.sqlite")

    @property
    def workspace_id(self) -> Path:
        """The workspace's random identity, which its audit log is bound to."""
        return self.path("workspace_id")

    @property
    def lineage(self) -> Path:
        """The lineage store's folder (the store, received events, rejected bodies)."""
        return self.path("lineage")

    @property
    def people(self) -> Path:
        """The people's credentials: their tokens' hashes and their signing keys sealed under them."""
        return self.path("people.json")

    @property
    def suppression(self) -> Path:
        """The suppression list: keyed hashes of erased identifiers, and where the last guard scan got to."""
        return self.path("suppression.sqlite")

    def demo_key(self, kind: str) -> Path:
        """The demo's own key of ``kind`` (audit, master, signing): made once per demo folder."""
        return self.path(f"demo-{kind}.key")

    def protected(self) -> tuple[Path, ...]:
        """piitracer's own files in the workspace (its state folder and the workspace files): no
        dataset's location may hold them."""
        return (self.folder, Path(self.root) / WORKSPACE_FILE, Path(self.root) / DISCOVERED_FILE)
