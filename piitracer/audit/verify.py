"""Recompute the whole audit log and name the first thing that is wrong.

Checks, entry by entry in sequence order: the sequence has no gap and no repeat, the row parses,
``prev_hash`` is the previous entry's hash, the entry hash is the SHA-256 of its canonical fields,
and the seal is the HMAC of that hash under the audit key. Then the sealed head (catches entries
cut off the end) and every request's Merkle root.

A log emptied together with its head and roots is a valid empty chain; three checks catch it
from outside the database: the log's structure (its append-only triggers were dropped to do it),
the anchor written outside the workspace at every append, and a head an auditor noted earlier
(``expect_head``). The journal cross-check lives in ``piitracer.api`` (the audit layer does not
read the executor's journal).

The log is read through :class:`piitracer.audit.rows.LogReader` (the store implements it): this
module does not import the store, so the store can call it without an import circle.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from pydantic import ValidationError

from piitracer.audit.anchor import Anchor
from piitracer.audit.hashing import entry_hash, merkle_root
from piitracer.audit.rows import AuditError, LogReader, entry_from_row
from piitracer.model.audit import GENESIS_HASH, EntryKind


@dataclass(frozen=True)
class AuditProblem:
    """The first bad entry: its sequence number (None when the problem is not one entry's) and what."""

    seq: int | None
    what: str

    def __str__(self) -> str:
        return f"entry {self.seq}: {self.what}" if self.seq is not None else self.what


@dataclass(frozen=True)
class VerifyResult:
    """The outcome of :func:`verify_log`."""

    ok: bool
    entries: int
    head_hash: str
    problem: AuditProblem | None = None
    anchored_seq: int | None = None  # the entry the anchor names, when an anchor was checked
    checks: tuple[str, ...] = ()  # what was checked beyond the chain (anchor, expected head, journal)


# The shortest prefix of an entry hash accepted as --expect-head (64 bits: no accidental match).
MIN_HEAD_PREFIX = 16


def verify_log(log: LogReader, expect_head: str | None = None) -> VerifyResult:
    """Recompute chain, entry hashes, seals, sequence numbers, the head and the Merkle roots; then
    the log's structure, its anchor (when configured) and ``expect_head`` (a hash, or a prefix of
    at least 16 hex digits, of an entry the log must still hold)."""
    if log.damage:
        return VerifyResult(False, 0, GENESIS_HASH, AuditProblem(
            None, f"the log's structure was altered: {', '.join(log.damage)} missing (an append-only log's "
                  "triggers are only dropped to change or delete entries)"))
    rows = log.raw_rows()
    previous_seq, previous_hash = 0, GENESIS_HASH
    by_request: dict[str, list[str]] = {}

    def bad(seq: int | None, what: str) -> VerifyResult:
        return VerifyResult(False, len(rows), previous_hash, AuditProblem(seq, what))

    for row in rows:
        seq = row["seq"]
        if seq != previous_seq + 1:
            if seq > previous_seq + 1:
                missing = f"entry {previous_seq + 1}" if seq == previous_seq + 2 else f"entries {previous_seq + 1}-{seq - 1}"
                return bad(seq, f"sequence jumps from {previous_seq} to {seq}: {missing} deleted")
            return bad(seq, f"sequence number {seq} follows {previous_seq}: entries reordered")
        try:
            entry = entry_from_row(row)
        except (ValueError, TypeError, ValidationError) as error:
            return bad(seq, f"malformed entry: {str(error).splitlines()[0]}")
        if entry.prev_hash != previous_hash:
            return bad(seq, f"previous-hash link broken (expected {previous_hash[:16]}…, entry holds "
                            f"{entry.prev_hash[:16]}…): an entry before it was deleted, reordered or altered")
        recomputed = entry_hash(entry.hashed_fields())
        if recomputed != entry.entry_hash:
            return bad(seq, f"{entry.kind.value} entry altered: its fields hash to {recomputed[:16]}…, "
                            f"stored hash is {entry.entry_hash[:16]}…")
        if not hmac.compare_digest(log.key.seal(entry.entry_hash), str(row["seal"])):
            return bad(seq, "seal does not match: the entry hash was rewritten without the audit key")
        if entry.kind is EntryKind.WORKSPACE and seq > 1:
            return bad(seq, "a workspace entry after the first: the log was spliced from two histories")
        if seq == 1 and entry.kind is not EntryKind.WORKSPACE and log.workspace_id is not None:
            return bad(seq, "the log's first entry binds it to no workspace: it was not begun in this workspace")
        for request_id in entry.request_ids:
            by_request.setdefault(request_id, []).append(entry.entry_hash)
        previous_seq, previous_hash = seq, entry.entry_hash

    head = log.meta("head")
    expected_head = f"{previous_seq}:{previous_hash}" if rows else None
    if head != expected_head:
        last = head.split(":")[0] if head else "none"
        return bad(None, f"the sealed head names entry {last} but the log ends at entry {previous_seq}: "
                         "entries were removed from (or added to) the end")
    if head is not None and not hmac.compare_digest(log.key.seal(head), log.meta("head_seal") or ""):
        return bad(None, "the head record's seal does not match: it was rewritten without the audit key")

    stored = log.stored_roots()
    for request_id in sorted(set(stored) | set(by_request)):
        root = merkle_root(by_request.get(request_id, []))
        if request_id not in stored:
            return bad(None, f"request {request_id}: no stored Merkle root")
        if stored[request_id][0] != root:
            return bad(None, f"request {request_id}: stored Merkle root {stored[request_id][0][:16]}… does not "
                             f"match its entries ({root[:16]}… over {len(by_request.get(request_id, []))} entries)")

    hashes = [row["entry_hash"] for row in rows]
    checks: list[str] = []
    bound = log.bound_workspace()
    if log.workspace_id is not None and rows:
        if bound != log.workspace_id:
            return bad(1, f"the log belongs to workspace {bound}, not to this workspace ({log.workspace_id}): a log "
                          "copied from another workspace")
        checks.append("bound to this workspace")
    anchored_seq = None
    if log.anchor is not None:
        anchor = log.anchor.read(log.key)
        if isinstance(anchor, str):
            return bad(None, anchor)
        if anchor is None:
            if rows:
                return bad(None, f"the anchor at {log.anchor.location} is missing but the log has {len(rows)} entries: "
                                 "it was deleted, or the log was written without it")
            checks.append("anchor: none yet, log empty")
        else:
            problem = _anchor_problem(anchor, hashes, bound)
            if problem:
                return bad(None, problem)
            anchored_seq = anchor.seq
            checks.append(f"anchor at entry {anchor.seq} matches")
    if expect_head is not None:
        wanted = expect_head.strip().lower()
        if len(wanted) < MIN_HEAD_PREFIX or any(c not in "0123456789abcdef" for c in wanted):
            raise AuditError(f"--expect-head: expected an entry hash (at least {MIN_HEAD_PREFIX} hex digits), "
                             f"got {len(wanted)} characters")
        held = [seq for seq, digest in enumerate(hashes, start=1) if digest.startswith(wanted)]
        if not held:
            return bad(None, f"the expected head {wanted[:16]}… is not an entry of this log: the log was emptied, "
                             "cut back or replaced since that head was noted")
        checks.append(f"expected head is entry {held[0]}")
    return VerifyResult(True, len(rows), previous_hash, anchored_seq=anchored_seq, checks=tuple(checks))


def _anchor_problem(anchor: Anchor, hashes: list[str], bound: str | None) -> str | None:
    """What is wrong between the anchored head and the log: the log's head must BE the anchored
    head — a log cut back, replaced, or longer (entries appended by something that did not move
    the anchor: a copy of the log extended elsewhere) is reported, never accepted."""
    if anchor.seq > len(hashes):
        return (f"the anchor names entry {anchor.seq} ({anchor.entry_hash[:16]}…) but the log ends at entry "
                f"{len(hashes)}: entries were removed")
    if anchor.seq >= 1 and hashes[anchor.seq - 1] != anchor.entry_hash:
        return (f"entry {anchor.seq} is not the anchored entry (anchored {anchor.entry_hash[:16]}…, log holds "
                f"{hashes[anchor.seq - 1][:16]}…): the log was replaced")
    if anchor.workspace_id is not None and anchor.workspace_id != bound:
        return (f"the anchor is the head of workspace {anchor.workspace_id}'s log, and this log belongs to "
                f"{bound or 'no workspace'}: the log was replaced")
    if anchor.seq < len(hashes):
        return (f"the log has {len(hashes) - anchor.seq} entr{'y' if len(hashes) - anchor.seq == 1 else 'ies'} past the "
                f"anchored head (entry {anchor.seq}): appended without moving the anchor (a copy of the log extended "
                "elsewhere, or an append whose anchor write failed)")
    return None
