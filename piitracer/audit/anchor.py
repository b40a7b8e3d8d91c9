"""The audit log's anchor: its sealed head, written outside the workspace at every append.

Everything inside the workspace can be wiped together: the log's own sealed head, its request
roots, the journal. The anchor is the one copy that is not there: a small JSON document (``seq``,
``entry_hash``, the key's fingerprint and an HMAC seal under the audit key) at ``audit.anchor``,
a path or URI that should live on storage the workspace's users cannot rewrite (a separate mount,
a bucket with object lock). ``audit verify`` then checks that the log still holds the anchored
entry with the anchored hash; a log emptied or cut back is caught even when every in-database
trace of it was removed too.
"""

from __future__ import annotations

import hmac
import json
from dataclasses import dataclass

from piitracer.audit.hashing import canonical_json
from piitracer.audit.keys import AuditKey
from piitracer.model.errors import AuditLogError
from piitracer.storage.locations import Location
from piitracer.storage.store import StorageError, Store

ANCHOR_FORMAT = "piitracer-audit-anchor/1"


class AnchorError(AuditLogError):
    """The anchor cannot be written (the append it follows is committed; the next verify says so)."""


@dataclass(frozen=True)
class Anchor:
    """The head of the log as last anchored."""

    seq: int
    entry_hash: str
    workspace_id: str | None = None  # the workspace whose log this is the head of (None: an older anchor)


@dataclass(frozen=True)
class AnchorFile:
    """Where the anchor lives, and the store that reaches it."""

    location: Location
    store: Store

    def write(self, key: AuditKey, seq: int, entry_hash: str, workspace_id: str | None = None) -> None:
        """Replace the anchor with this head of the log of ``workspace_id`` (a temporary file, then
        an atomic replace / one PUT)."""
        document = {"format": ANCHOR_FORMAT, "key_id": key.key_id, "seq": seq, "entry_hash": entry_hash,
                    "seal": key.seal(_sealed_text(key.key_id, seq, entry_hash, workspace_id))}
        if workspace_id is not None:
            document["workspace_id"] = workspace_id
        temporary = Location.parse(str(self.location) + ".tmp")
        try:
            self.store.write_bytes(temporary, canonical_json(document).encode("utf-8") + b"\n")
            self.store.replace(temporary, self.location)
        except (StorageError, OSError) as error:
            raise AnchorError(f"audit.anchor {self.location}: cannot write the anchor: {error}") from None

    def foreign_object(self) -> bool:
        """Whether something that is not an anchor document is already at the anchor's place (a
        mistyped path naming a data file): writing there would replace it."""
        try:
            if not self.store.exists(self.location):
                return False
            document = json.loads(self.store.read_bytes(self.location))
        except (StorageError, OSError, ValueError):
            return True
        return not (isinstance(document, dict) and document.get("format") == ANCHOR_FORMAT)

    def read(self, key: AuditKey) -> Anchor | str | None:
        """The anchor; None when there is none; a sentence when it is there but not a valid anchor
        of this key (unreadable, edited, written with another key)."""
        try:
            if not self.store.exists(self.location):
                return None
            data = self.store.read_bytes(self.location)
        except (StorageError, OSError) as error:
            return f"the anchor at {self.location} cannot be read: {error}"
        try:
            document = json.loads(data)
            seq, digest, key_id, seal = (int(document["seq"]), str(document["entry_hash"]), str(document["key_id"]),
                                         str(document["seal"]))
            workspace_id = document.get("workspace_id")
            workspace_id = None if workspace_id is None else str(workspace_id)
        except (ValueError, TypeError, KeyError, AttributeError):
            return f"the anchor at {self.location} is not an anchor document"
        if key_id != key.key_id:
            return f"the anchor at {self.location} was written with another audit key (key id {key_id})"
        if not hmac.compare_digest(key.seal(_sealed_text(key_id, seq, digest, workspace_id)), seal):
            return f"the anchor at {self.location} was rewritten without the audit key (its seal does not match)"
        return Anchor(seq, digest, workspace_id)


def _sealed_text(key_id: str, seq: int, entry_hash: str, workspace_id: str | None = None) -> str:
    # An anchor without a workspace id (written before logs were bound) keeps its old sealed text.
    return f"anchor:{key_id}:{seq}:{entry_hash}" + (f":{workspace_id}" if workspace_id is not None else "")
