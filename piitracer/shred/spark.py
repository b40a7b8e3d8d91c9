"""Crypto-shredding in a Spark job: the Arrow functions of :mod:`piitracer.shred.cipher` as
``DataFrame.mapInArrow`` functions.

Each task opens the vault once from a :class:`~piitracer.shred.spec.VaultSpec` (the master key is
read where the task runs, from the key file the spec names; the key never travels in the pickled
function) and asks it once per Arrow batch for the keys of that batch's subjects. Tasks that
create keys for the same new subject at once end with one key (the vault's insert-when-absent).

``pyspark`` is imported only by the two DataFrame helpers: the partition functions need nothing
but pyarrow, so a job can also hand them to another Arrow engine.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping

import pyarrow as pa

from piitracer.shred.cipher import RAISE, ShredColumns, decrypt_batch, encrypt_batch
from piitracer.shred.keys import ShredInputError
from piitracer.shred.spec import VaultSpec

Batches = Iterator[pa.RecordBatch]


def encrypt_partitions(spec: VaultSpec, columns: ShredColumns) -> Callable[[Batches], Batches]:
    """A ``mapInArrow`` function that encrypts ``columns`` of every batch (keys created as needed).

    Args:
        spec: the vault, opened once per task.
        columns: the subject key column and the columns to encrypt.

    Returns:
        A function from an iterator of plaintext batches to an iterator of encrypted batches.
    """
    def encrypt(batches: Batches) -> Batches:
        """One task's batches, encrypted (the vault opened once for the task)."""
        with spec.open() as vault:
            for batch in batches:
                yield encrypt_batch(batch, vault, columns)

    return encrypt


def decrypt_partitions(spec: VaultSpec, columns: ShredColumns, types: Mapping[str, pa.DataType] | None = None,
                       missing: str = RAISE) -> Callable[[Batches], Batches]:
    """A ``mapInArrow`` function that decrypts ``columns`` of every batch (no key is created).

    Args:
        spec: the vault, opened once per task.
        columns: the subject key column and the encrypted columns.
        types: each column's plaintext Arrow type.
        missing: ``"raise"`` (a destroyed key fails the task with ``SubjectShreddedError``) or
            ``"null"`` (that subject's values read as null).

    Returns:
        A function from an iterator of stored batches to an iterator of plaintext batches.
    """
    def decrypt(batches: Batches) -> Batches:
        """One task's batches, decrypted (the vault opened once for the task)."""
        with spec.open() as vault:
            for batch in batches:
                yield decrypt_batch(batch, vault, columns, types, missing)

    return decrypt


def _absent(frame: Any, columns: ShredColumns) -> None:
    names = frame.schema.fieldNames()
    absent = [name for name in (columns.key, *columns.columns) if name not in names]
    if absent:
        raise ShredInputError(f"the DataFrame has no column {', '.join(absent)} (columns: {', '.join(names)})")


def encrypt_dataframe(frame: Any, spec: VaultSpec, columns: ShredColumns) -> Any:
    """``frame`` with ``columns`` encrypted (binary columns of ciphertext), through ``mapInArrow``.

    Args:
        frame: a Spark DataFrame holding the subject key column and the columns to encrypt.
        spec: the key vault.
        columns: the subject key column and the columns to encrypt.

    Returns:
        The DataFrame to write (lazy, like any Spark transformation).

    Raises:
        ShredInputError: a column is absent.
    """
    from pyspark.sql.types import BinaryType, StructField, StructType

    _absent(frame, columns)
    schema = StructType([StructField(field.name, BinaryType(), field.nullable) if field.name in columns.columns
                         else field for field in frame.schema.fields])
    return frame.mapInArrow(encrypt_partitions(spec, columns), schema)


def decrypt_dataframe(frame: Any, spec: VaultSpec, columns: ShredColumns, types: Mapping[str, Any],
                      missing: str = RAISE) -> Any:
    """``frame`` with ``columns`` decrypted to the Spark types ``types`` gives, through ``mapInArrow``.

    Args:
        frame: a Spark DataFrame as stored (the encrypted columns binary).
        spec: the key vault.
        columns: the subject key column and the encrypted columns.
        types: each encrypted column's plaintext Spark type (``StringType()``, ``DateType()``...).
        missing: ``"raise"`` or ``"null"`` for a subject whose key is destroyed.

    Returns:
        The plaintext DataFrame (lazy).

    Raises:
        ShredInputError: a column is absent, or an encrypted column has no type in ``types``.
    """
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import StructField, StructType

    _absent(frame, columns)
    untyped = [name for name in columns.columns if name not in types]
    if untyped:
        raise ShredInputError(f"no plaintext type for column {', '.join(untyped)}: give types={{name: a Spark type}}")
    schema = StructType([StructField(field.name, types[field.name], True) if field.name in columns.columns
                         else field for field in frame.schema.fields])
    arrow = {name: to_arrow_type(types[name]) for name in columns.columns}
    return frame.mapInArrow(decrypt_partitions(spec, columns, arrow, missing), schema)
