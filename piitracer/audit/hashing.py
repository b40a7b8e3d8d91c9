"""Canonical JSON, entry hashes and per-request Merkle roots.

Merkle tree (RFC 6962 shape, so no two leaf lists share a root): leaf = SHA-256(0x00 || entry
hash as ASCII hex); node = SHA-256(0x01 || left || right); a list of n > 1 leaves splits at the
largest power of two below n; the root of no leaves is SHA-256 of the empty string. Leaves are the
request's entries in ascending sequence number.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Sequence


def canonical_json(data: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 text: the same data always gives the same bytes."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def entry_hash(fields: dict[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of an entry's fields (everything but its own hash)."""
    return hashlib.sha256(canonical_json(fields).encode("utf-8")).hexdigest()


def merkle_root(entry_hashes: Sequence[str]) -> str:
    """The Merkle root (hex) over entry hashes in the given (sequence) order."""
    if not entry_hashes:
        return hashlib.sha256(b"").hexdigest()
    return _root([hashlib.sha256(b"\x00" + h.encode("ascii")).digest() for h in entry_hashes]).hex()


def _root(leaves: list[bytes]) -> bytes:
    if len(leaves) == 1:
        return leaves[0]
    split = 1
    while split * 2 < len(leaves):
        split *= 2
    return hashlib.sha256(b"\x01" + _root(leaves[:split]) + _root(leaves[split:])).digest()
