"""A pyiceberg catalog that counts what piitracer asks of it: pyiceberg's own ``sql`` catalog
(``SqlCatalog``) named by ``py-catalog-impl: counting_catalog.CountingSqlCatalog`` in a workspace's
``iceberg.catalogs``, so piitracer loads it exactly as it loads any catalog. Each instance made and
each table loaded (``load_table``, which a pyiceberg ``Table.refresh()`` also calls) is counted in
the class's counters, which a test reads and resets around one use case. The ``sql`` catalog reads a
table's row itself to check a commit's requirements (inside ``commit_table``): that read is part of
the commit, counted with the commits, not as a load piitracer asked for."""

from __future__ import annotations

from collections import Counter

from pyiceberg.catalog.sql import SqlCatalog


class CountingSqlCatalog(SqlCatalog):
    """``SqlCatalog`` counting its instances and its ``load_table`` calls per table."""

    made = 0
    loads: Counter = Counter()
    commits: Counter = Counter()

    def __init__(self, name: str, **properties: str) -> None:
        type(self).made += 1
        self._committing = False
        super().__init__(name, **properties)

    def load_table(self, identifier):
        if not self._committing:
            type(self).loads[_name(identifier)] += 1
        return super().load_table(identifier)

    def commit_table(self, table, requirements, updates):
        type(self).commits[_name(table.name())] += 1
        self._committing = True
        try:
            return super().commit_table(table, requirements, updates)
        finally:
            self._committing = False

    @classmethod
    def reset(cls) -> None:
        cls.made = 0
        cls.loads = Counter()
        cls.commits = Counter()


def _name(identifier) -> str:
    return identifier if isinstance(identifier, str) else ".".join(identifier)
