"""The tamper-evident audit trail: an append-only, hash-chained, sealed SQLite log with a Merkle
root per request. Subject values are stored only as HMACs under the audit key."""

from piitracer.audit.anchor import Anchor, AnchorError, AnchorFile
from piitracer.audit.keys import AuditKey, AuditKeyError, load_audit_key
from piitracer.audit.recorder import (attestations, record_approval_entry, record_attestation_entry, record_download_entry, record_estimate_entry,
                                     record_execution_entry, record_person_entry, record_plan_entry, record_request_entry,
                                     record_step_entries, record_verification_entry)
from piitracer.audit.records import plan_body, step_body, verification_body
from piitracer.audit.store import AuditError, AuditLog
from piitracer.audit.verify import AuditProblem, VerifyResult, verify_log

__all__ = [
    "Anchor", "AnchorError", "AnchorFile", "AuditError", "AuditKey", "AuditKeyError", "AuditLog", "AuditProblem", "VerifyResult",
    "attestations", "load_audit_key", "record_approval_entry", "record_attestation_entry", "record_download_entry", "record_estimate_entry", "record_execution_entry", "record_person_entry", "record_plan_entry", "record_request_entry", "record_step_entries", "record_verification_entry", "plan_body", "step_body", "verification_body", "verify_log",
]
