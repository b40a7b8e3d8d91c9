"""What the verifier found, per dataset: the evidence the audit log records and the report shows.

A finding names the file, the column or field and which value set (identifier) matched — never the
raw value, so reports and audit entries stay free of personal data.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum

from pydantic import Field

from piitracer.model.lineage import Frozen


class ErasureState(str, Enum):
    """The verifier's verdict on one dataset. Only ERASED, ATTESTED and NO_ACTION mean done
    (``VerificationReport.complete``): every other state keeps ``verify`` at exit 1."""

    ERASED = "erased"  # no retained snapshot/version and no file under the location holds a subject value
    ATTESTED = "attested"  # a person's step (manual, manual_review, recompute) confirmed by its owner, nothing found
    NO_ACTION = "no_action"  # holds no value of the subjects (a view, an indirect influence) and none was found
    # Planned shred: the subjects' keys are gone from every file of the key vault, their stored
    # ciphertext no longer decrypts, and no plaintext of theirs is left but the key column's id.
    CRYPTO_SHREDDED = "crypto_shredded"
    PENDING = "pending"  # bytes remain only where a planned step or a retention window will remove them
    AWAITING_ATTESTATION = "awaiting_attestation"  # a person's step is open: piitracer cannot prove it
    FOUND = "found"  # subject data is still there and nothing planned will remove it
    UNPLANNED = "unplanned"  # the sweep found subject data in a dataset or folder the plan does not reach
    NOT_CHECKED = "not_checked"  # a dataset the plan erases could not be checked (no location, missing folder)


DONE_STATES = frozenset({ErasureState.ERASED, ErasureState.ATTESTED, ErasureState.NO_ACTION, ErasureState.CRYPTO_SHREDDED})


class Finding(Frozen):
    """One place that still holds a subject value."""

    file: str = Field(description="Path relative to the dataset's location ('' for a logical finding).")
    where: str = Field(description="Column, footer statistics, manifest bound, log field, snapshot id...")
    value_set: str = Field(description="Which resolved value set matched (e.g. 'prod.payments.pan'), never the value.")
    kind: str = Field(description="data | statistics | manifest_bound | manifest | log_stats | log | metadata | raw | path | snapshot")


class ChunkProofs(Frozen):
    """How the Parquet column chunks (one column of one row group) of a dataset's files were settled
    (design.md, "Proof at scale"), and the bytes read from those files against their size."""

    type: int = Field(0, description="Proven because no searched value has the column's type.")
    statistics: int = Field(0, description="Proven by footer min/max (integers and dates) excluding every searched value.")
    page_index: int = Field(0, description="Proven page by page by the column index (integers and dates).")
    bloom: int = Field(0, description="Proven by a split-block Bloom filter missing every searched value (whole values).")
    dictionary: int = Field(0, description="Wholly dictionary-encoded (read from the page headers) and the dictionary "
                            "holds no searched value, whole or inside text.")
    pages: int = Field(0, description="Every data page PLAIN or dictionary-encoded (a string column), and neither its "
                       "dictionary page nor its PLAIN pages, decompressed, hold any searched value's text.")
    decoded: int = Field(0, description="Decoded and searched row by row.")
    bytes_read: int = Field(0, description="Bytes read from the dataset's Parquet files (footers, headers, dictionaries, "
                            "filters, indexes, decoded chunks).")
    bytes_total: int = Field(0, description="Total size of the dataset's Parquet files.")

    @property
    def proven(self) -> int:
        """Chunks proven without decoding their rows."""
        return self.type + self.statistics + self.page_index + self.bloom + self.dictionary + self.pages


class DecodedChunkNote(Frozen):
    """A chunk the verifier had to decode, and why (``verify --explain``); never a value."""

    file: str = Field(description="Path relative to the dataset's location, values redacted.")
    row_group: int
    column: str
    why: str


class ColumnSearch(Frozen):
    """How one column of a dataset was searched (``piitracer.verify.scope``); never a value."""

    column: str = Field(description="Top-level column name (lower-case); '*' for every column not listed.")
    search: str = Field(description="'whole values': an identifier or key column, searched for the whole values of "
                        "the value sets it carries only; 'inside text': every value set searched, whole and inside text.")
    value_sets: tuple[str, ...] = Field((), description="For 'whole values': the value sets it is searched for.")


class ShredEvidence(Frozen):
    """The proof behind a ``crypto_shredded`` dataset (issues 42 and 49): what was read and opened
    before the keys were destroyed, the key vault's files decoded after, the plaintext searched for,
    the other people whose ciphertext still opens; counts and names only, never a value, a key or a
    lookup."""

    vault: str = Field(description="The key vault (its catalog dataset and location, or its SQLite file).")
    vault_copies: tuple[str, ...] = Field((), description="Catalogued copies of the vault (replicas, clones), "
                                          "destroyed and searched as the vault.")
    destroyed_by: tuple[str, ...] = Field((), description="The destroy_subject_key steps that destroyed the keys.")
    keys_destroyed: int = Field(0, description="Subjects' keys the vault held and the steps destroyed.")
    vault_files_decoded: int = Field(0, description="Files of the vault and its copies decoded: none holds a "
                                     "subject's lookup or a destroyed wrapped key.")
    wrapped_keys_searched: int = Field(0, description="Destroyed wrapped keys searched for (by their SHA-256).")
    ciphertext_files_read: int = Field(0, description="Stored files of the dataset (every version) read before the keys "
                                       "were destroyed.")
    ciphertext_rows_tried: int = Field(0, description="Rows of the subjects found in them; every one's ciphertext was "
                                       "opened under its subject's key before the key was destroyed, and no key of "
                                       "theirs is left to open it.")
    ciphertext_values_opened: int = Field(0, description="Ciphertext values of the subjects opened before the keys were "
                                          "destroyed (their plaintext kept, sealed, for the search).")
    subjects_with_rows: int = Field(0, description="Subjects with ciphertext in the dataset (each had a key destroyed).")
    plaintext_sets: tuple[str, ...] = Field((), description="The value sets of the subjects' decrypted values searched for.")
    plaintext_values_searched: int = Field(0, description="Decrypted values searched for, in every column, statistic, "
                                           "log and manifest of every file of the dataset (every retained version).")
    files_searched: int = Field(0, description="Files of the dataset decoded and searched after the destruction.")
    versions_searched: int = Field(0, description="Retained versions or snapshots of the dataset checked.")
    key_column: str | None = Field(None, description="The column keeping the subjects' ids in plaintext (the key the "
                                   "vault found them by); what it holds was accepted.")
    key_column_places: int = Field(0, description="Places of the key column holding a subject's id (accepted).")
    other_subjects_checked: int = Field(0, description="Other subjects of the dataset whose keys were looked up.")
    other_subjects_with_keys: int = Field(0, description="Of those, how many the vault still holds a key for.")
    other_rows_opened: int = Field(0, description="Other people's ciphertext values of the dataset opened with the "
                                   "vault now: the vault is the one the dataset was encrypted with.")


class DatasetVerification(Frozen):
    """The result for one dataset of a plan."""

    dataset: str
    state: ErasureState
    files_scanned: int = 0
    snapshots_checked: int = 0
    findings: tuple[Finding, ...] = ()
    pending_until: str | None = Field(None, description="For pending: the step or retention window that removes the bytes, and when.")
    reason: str | None = None
    value_sets: tuple[str, ...] = Field((), description="Names of the value sets searched in this dataset (never the values).")
    notes: tuple[str, ...] = Field((), description="Files decoded only as raw bytes, versions that could not be read back.")
    column_chunks_proven: int = Field(0, description="Parquet column chunks proven to hold no searched value without "
                                      "decoding them (chunk_proofs says how).")
    column_chunks_decoded: int = Field(0, description="Parquet column chunks decoded and searched.")
    chunk_proofs: ChunkProofs = Field(default_factory=ChunkProofs, description="How each Parquet column chunk was "
                                      "proven or decoded, and the bytes read.")
    decoded_chunks: tuple[DecodedChunkNote, ...] = Field((), description="verify --explain: each chunk decoded and why "
                                                         "(the first 10,000; chunk_proofs.decoded counts them all).")
    column_search: tuple[ColumnSearch, ...] = Field((), description="Which search each column got: identifier and key "
                                                    "columns whole values of their own value sets, every other inside text.")
    shred: ShredEvidence | None = Field(None, exclude_if=lambda value: value is None,
                                        description="For a dataset planned shred: the key destruction's proof.")


class VerificationReport(Frozen):
    """Every dataset of one plan, checked at one moment (and, with a sweep, what lies beyond it)."""

    plan_id: str
    checked_at: datetime
    datasets: tuple[DatasetVerification, ...]
    sweep: str | None = Field(None, description="'catalog' or 'roots' when verify --sweep looked beyond the plan.")
    swept: tuple[str, ...] = Field((), description="Datasets (and folders) the sweep decoded besides the plan's.")
    swept_files: int = 0

    @property
    def complete(self) -> bool:
        """True when every dataset is erased, attested or needs no action (``verify`` exit 0)."""
        return all(d.state in DONE_STATES for d in self.datasets)

    @property
    def all_erased(self) -> bool:
        """Same as :attr:`complete` (kept for callers of the first API)."""
        return self.complete

    def open_items(self) -> list[DatasetVerification]:
        """Datasets that keep the erasure from being complete."""
        return [d for d in self.datasets if d.state not in DONE_STATES]

    def result(self, dataset: str) -> DatasetVerification:
        """The verification of one dataset; KeyError if it was not checked."""
        for item in self.datasets:
            if item.dataset == dataset:
                return item
        raise KeyError(f"dataset {dataset!r} was not verified")
