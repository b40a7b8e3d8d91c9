"""The pipeline guard in a Spark job (issue 52): a DataFrame of 2,000 rows with three erased
people's rows among them (some carrying only their PAN) guarded through mapInArrow on local Spark
and written as Parquet; the files, decoded with pyarrow, hold none of the erased people's values
and every other row as it was, and the accumulator counts the rows dropped. Report mode writes
every row and counts the same."""

from __future__ import annotations

import random
import secrets

import pyarrow.parquet as pq
import pytest

from byte_scan import find_values
from piitracer.guard import SuppressionList, guard_dataframe, number_hash, suppression_hash
from spark_lakehouse import checksum, spark_for

COLUMNS = ["user_id", "pan", "phone", "amount"]
SCHEMA = "user_id bigint, pan string, phone string, amount int"
# The erased: (user id, PAN, phone). The list holds the first one's id as text (a backfill's id
# column was a string then): the id 8841302 still matches.
ERASED = [(8841302, "4111111111111111", "+44 7700 900123"), (120, "5500000000000004", "+44 7700 900456"),
          (1777, "340000000000009", "+44 20 7946 0999")]


def scene() -> list[tuple]:
    """2,000 rows of 400 ordinary people, neighbours of the erased among them, and the erased's own
    rows: with every identifier, with the PAN alone (a card payment before sign-up), with the phone alone."""
    rng = random.Random(52)
    people = [(1000 + n, f"4000{n:012d}", f"+44 7700 8{n:05d}") for n in range(400)]
    # decoys: the neighbouring id, a PAN one digit off, a phone with the same last four digits
    people += [(8841303, "4111111111111112", "+44 7700 901123"), (121, "5500000000000005", "+44 7800 900456"),
               (1776, "340000000000008", "+44 20 7946 1999")]
    rows = []
    ordinal = 10_000_000  # the amounts: never one of the ids the byte scan looks for
    for n in range(ordinal, ordinal + 2_000 - 24):
        user, pan, phone = rng.choice(people)
        rows.append((user, pan if rng.random() < 0.8 else None, phone if rng.random() < 0.8 else None, n))
    for n, (user, pan, phone) in enumerate(ERASED * 8, start=ordinal + len(rows)):
        shape = n % 4  # every identifier, the PAN alone, the phone alone, id and PAN
        rows.append((user if shape in (0, 3) else None, pan if shape in (0, 1, 3) else None,
                     phone if shape in (0, 2) else None, n))
    return rows


def written(folder) -> list[tuple]:
    """The rows of every Parquet file Spark wrote, decoded with pyarrow (not Spark)."""
    table = pq.read_table(folder)
    return [tuple(row[name] for name in COLUMNS) for row in table.to_pylist()]


@pytest.mark.parametrize("numbers", [False, True], ids=["ids-by-text", "ids-by-number"])
def test_a_guarded_write_holds_no_erased_row_and_every_other_row(warehouse, tmp_path, numbers) -> None:
    """(ids-by-number: the list holds the ids' number forms, as a store's list does, and the
    executors hash the integer column by number.)"""
    spark = spark_for(warehouse)
    key = secrets.token_bytes(32)
    erased_values = [str(ERASED[0][0]), *ERASED[0][1:], *(value for person in ERASED[1:] for value in person)]
    hashes = [suppression_hash(key, value) for value in erased_values]
    if numbers:
        hashes += [h for h in (number_hash(key, value) for value in erased_values) if h is not None]
    suppression = SuppressionList(key, hashes, numbers=numbers)
    rows = scene()
    erased = {value for person in ERASED for value in person}
    kept = [row for row in rows if not erased & set(row[:3])]
    assert len(rows) == 2_000 and len(rows) - len(kept) == 24
    frame = spark.createDataFrame(rows, SCHEMA).repartition(3)

    guarded = guard_dataframe(frame, suppression, ["user_id", "PAN", "phone"])
    guarded.frame.write.parquet(str(tmp_path / "drop"))
    assert guarded.matched.value == 24
    back = written(tmp_path / "drop")
    assert checksum(back) == checksum(kept)
    assert find_values(tmp_path / "drop", [value for person in ERASED for value in person]) == []
    assert {row[0] for row in back} >= {8841303, 121, 1776}  # the neighbours are still there

    reported = guard_dataframe(frame, suppression, ["user_id", "pan", "phone"], mode="report")
    reported.frame.write.parquet(str(tmp_path / "report"))
    assert reported.matched.value == 24
    assert checksum(written(tmp_path / "report")) == checksum(rows)


def test_a_wrong_column_is_refused_on_the_driver(warehouse) -> None:
    frame = spark_for(warehouse).createDataFrame([(1, "x")], "user_id bigint, pan string")
    suppression = SuppressionList(secrets.token_bytes(32), [])
    with pytest.raises(ValueError, match="no column 'email'.*columns: user_id, pan"):
        guard_dataframe(frame, suppression, ["user_id", "email"])
    with pytest.raises(ValueError, match="not 'delete'"):
        guard_dataframe(frame, suppression, ["user_id"], mode="delete")
