"""Crypto-shredding in a Spark job (issue 42 point 2): a tiny table encrypted through mapInArrow on
local Spark (two tasks creating keys at once), written as Parquet with no plaintext in any decoded
file, read back and decrypted to the same rows; after one subject's key is destroyed, that
subject's values fail by name or read as null, everyone else's still decrypt."""

from __future__ import annotations

import pytest
from pyspark.sql.types import StringType

from byte_scan import find_values
from piitracer.crypto.envelope import write_master_key
from piitracer.shred.cipher import ShredColumns
from piitracer.shred.spark import decrypt_dataframe, encrypt_dataframe
from piitracer.shred.spec import VaultSpec
from spark_lakehouse import spark_for

USERS = [11, 12, 13, 14]
ROWS = [(USERS[n % 4], f"user{USERS[n % 4]}@example.org", f"+44 7700 900{n:03d}", n) for n in range(12)]
COLUMNS = ShredColumns(key="user_id", deterministic=("email",), randomised=("phone",))
TYPES = {"email": StringType(), "phone": StringType()}


def test_a_table_encrypted_on_spark_decrypts_until_its_key_is_destroyed(warehouse, tmp_path) -> None:
    spark = spark_for(warehouse)
    key_file = tmp_path / "master.key"
    write_master_key(key_file)
    spec = VaultSpec("sqlite", str(tmp_path / "vault.sqlite"), str(key_file))
    plain = spark.createDataFrame(ROWS, "user_id bigint, email string, phone string, amount int").repartition(2)
    folder = tmp_path / "contacts"
    encrypt_dataframe(plain, spec, COLUMNS).write.parquet(str(folder))

    assert find_values(folder, [row[1] for row in ROWS] + [row[2] for row in ROWS]) == []
    stored = spark.read.parquet(str(folder))
    by_row = {row["amount"]: row for row in stored.collect()}
    for n in range(4):  # one subject's address, in rows of both tasks: one ciphertext
        assert len({bytes(by_row[m]["email"]) for m in range(n, 12, 4)}) == 1
    assert len({bytes(row["phone"]) for row in by_row.values()}) == 12
    with spec.open() as vault:
        assert vault.backend.count() == 4  # two tasks, one key per subject

    back = decrypt_dataframe(stored, spec, COLUMNS, TYPES).collect()
    assert sorted(tuple(row) for row in back) == sorted(ROWS)

    with spec.open() as vault:
        assert vault.destroy([13]).keys_destroyed == 1
    with pytest.raises(Exception) as caught:
        decrypt_dataframe(stored, spec, COLUMNS, TYPES).collect()
    assert "SubjectShreddedError" in str(caught.value) and "crypto-shredded" in str(caught.value)
    assert "user13@" not in str(caught.value)
    readable = sorted(tuple(row) for row in decrypt_dataframe(stored, spec, COLUMNS, TYPES, missing="null").collect())
    assert readable == sorted((u, e, p, n) if u != 13 else (u, None, None, n) for u, e, p, n in ROWS)
