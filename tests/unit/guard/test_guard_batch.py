"""The guard on one Arrow batch (issue 52): a row goes when any guarded identifier is on the
suppression list (the user id, or only the PAN), every other row stays as it was; report mode keeps
everything and counts; columns are found whatever their case, and a wrong column or mode is
refused by name."""

from __future__ import annotations

import random
import secrets

import pyarrow as pa
import pytest

from piitracer.guard import GuardResult, SuppressionList, guard_batch, suppression_hash

KEY = secrets.token_bytes(32)
# user 8841302 erased (every identifier); user 502's PAN alone is on the list (a card another
# erased person used); the phone of user 77 shares its last four digits with an erased phone.
ERASED = [8841302, "4111111111111111", "+44 7700 900123", "5500000000000004"]
SUPPRESSION = SuppressionList(KEY, [suppression_hash(KEY, value) for value in ERASED])


def batch() -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({
        "user_id": pa.array([8841302, 501, 502, 77, None, 8841303], pa.int64()),
        "PAN": pa.array(["4111111111111111", "4000000000000002", "5500000000000004", None, "4111111111111112",
                         "4000000000000010"]),
        "phone": pa.array(["+44 7700 900123", "+44 7700 900001", None, "+44 7700 901123", "+44 7700 900123", None]),
        "amount": pa.array([1, 2, 3, 4, 5, 6], pa.int32()),
    })


def test_drop_removes_every_row_with_an_identifier_on_the_list() -> None:
    result = guard_batch(batch(), SUPPRESSION, ["user_id", "pan", "phone"])
    assert isinstance(result, GuardResult) and isinstance(result.batch, pa.RecordBatch)
    # row 0: every identifier; row 2: only its PAN; row 4: only its phone (no user id at all)
    assert result.batch.column("amount").to_pylist() == [2, 4, 6]
    assert result.batch.schema == batch().schema
    assert result.batch.equals(batch().take([1, 3, 5]))
    assert result.rows_matched == 3
    assert result.matches_by_column == {"PAN": 2, "phone": 2, "user_id": 1}
    assert list(result.matches_by_column) == sorted(result.matches_by_column)


def test_report_keeps_every_row_and_counts_the_same() -> None:
    plain = batch()
    result = guard_batch(plain, SUPPRESSION, ["user_id", "pan", "phone"], mode="report")
    assert result.batch.equals(plain)
    assert (result.rows_matched, result.matches_by_column) == (3, {"PAN": 2, "phone": 2, "user_id": 1})


def test_only_the_guarded_columns_are_checked() -> None:
    result = guard_batch(batch(), SUPPRESSION, ["USER_ID"])
    assert result.batch.column("amount").to_pylist() == [2, 3, 4, 5, 6]
    assert result.matches_by_column == {"user_id": 1}
    nothing = SuppressionList(KEY, [suppression_hash(KEY, "someone else")])
    untouched = guard_batch(batch(), nothing, ["user_id", "PAN", "phone"])
    assert untouched.batch.equals(batch()) and untouched.rows_matched == 0
    assert untouched.matches_by_column == {"PAN": 0, "phone": 0, "user_id": 0}


def test_a_table_of_chunks_is_guarded_like_its_rows() -> None:
    plain = batch()
    table = pa.Table.from_batches([plain.slice(0, 2), plain.slice(2, 3), plain.slice(5)])
    result = guard_batch(table, SUPPRESSION, ["user_id", "pan", "phone"])
    assert isinstance(result.batch, pa.Table)
    assert result.batch.equals(pa.Table.from_batches([plain.take([1, 3, 5])]))
    assert result.rows_matched == 3


def test_random_batches_agree_with_each_row_checked_alone() -> None:
    rng = random.Random(52)
    ids = [rng.randrange(1, 300) for _ in range(3_000)]
    rows = {
        "user_id": pa.array([None if rng.random() < 0.1 else i for i in ids], pa.int64()),
        "pan": pa.array([f"4{i:015d}" if rng.random() < 0.9 else None for i in ids]).dictionary_encode(),
        "phone": pa.array([f"+44 7700 9{i % 97:05d}" for i in ids], pa.large_string()),
        "n": pa.array(range(len(ids)), pa.int64()),
    }
    plain = pa.RecordBatch.from_pydict(rows)
    erased = [*rng.sample(range(1, 300), 5), *(f"4{i:015d}" for i in rng.sample(range(1, 300), 5)),
              *(f"+44 7700 9{i:05d}" for i in rng.sample(range(97), 2))]
    suppression = SuppressionList(KEY, [suppression_hash(KEY, value) for value in erased])
    on_list = {suppression_hash(KEY, value) for value in erased}
    keep = [not any(suppression_hash(KEY, plain.column(name)[row].as_py()) in on_list
                    for name in ("user_id", "pan", "phone")) for row in range(plain.num_rows)]
    result = guard_batch(plain, suppression, ["user_id", "pan", "phone"])
    assert result.batch.column("n").to_pylist() == [n for n in range(len(ids)) if keep[n]]
    assert result.rows_matched == keep.count(False) > 0


def test_a_missing_column_or_an_unknown_mode_is_refused_by_name() -> None:
    with pytest.raises(ValueError) as caught:
        guard_batch(batch(), SUPPRESSION, ["user_id", "email"])
    assert "'email'" in str(caught.value) and "user_id, PAN, phone, amount" in str(caught.value)
    with pytest.raises(ValueError, match="'drop' or 'report', not 'delete'"):
        guard_batch(batch(), SUPPRESSION, ["user_id"], mode="delete")
    with pytest.raises(ValueError, match="at least one column"):
        guard_batch(batch(), SUPPRESSION, [])
    twice = pa.RecordBatch.from_pydict({"id": [1], "ID": [2]})
    assert guard_batch(twice, SUPPRESSION, ["ID"]).matches_by_column == {"ID": 0}  # the exact name first
    with pytest.raises(ValueError, match="2 columns"):
        guard_batch(twice, SUPPRESSION, ["Id"])
