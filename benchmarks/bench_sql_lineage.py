"""SQL column lineage: statements per second through piitracer, side by side with sqllineage.

What is measured, in one run on one pinned core, over the same corpus of statements: the time of
piitracer's ``ingest_sql_text`` (sqlglot, Spark dialect) and of sqllineage 1.5.9's
``LineageRunner(sql, dialect="sparksql").get_column_lineage()`` (sqlfluff), one call per
statement for both. piitracer: median of ``--runs``; sqllineage: one run (it is the slow side).

The corpus (seeded, deterministic; ``--statements`` generated plus the demo lakehouse's): INSERT
INTO / INSERT OVERWRITE (with PARTITION), CREATE TABLE AS SELECT, chained CTEs, joins with
aliases, UNION ALL, MERGE (UPDATE SET and INSERT), window functions, CASE, hashes and renames.
A fixture file's ``USE db`` is kept in front of each later statement of its file.

Agreement, per statement: the set of value-carrying column edges ``source db.table.column ->
target db.table.column`` of each tool is compared after normalising names (lower case, a
``spark_catalog.``/``lake.`` catalog dropped, sqllineage's ``<default>`` database as
``default``). For piitracer those are its DIRECT edges with a target column (its INDIRECT edges,
e.g. join and filter keys, have no counterpart in sqllineage); for sqllineage the first and last
column of every path. ``agree``: equal sets; ``differ``: both ran, sets differ; ``sqllineage
failed``: it raised. A difference is not always a piitracer error: the printed examples show
which side is right (e.g. sqllineage counts a CASE condition's columns as sources of the value).

Target: piitracer >= 10x sqllineage's statements/s.

    python benchmarks/bench_sql_lineage.py                     # 600 generated + the fixtures
    python benchmarks/bench_sql_lineage.py --statements 100    # quicker
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import median_of, pin_one_core, print_table, timed, write_results  # noqa: E402

from piitracer.ingest.sql.lineage import ingest_sql_text  # noqa: E402
from piitracer.model.lineage import EdgeKind  # noqa: E402
from piitracer.model.naming import DatasetNamer  # noqa: E402

SEED = 5
CATALOGS = ("spark_catalog", "lake")
COLUMNS = ["user_id", "customer_id", "pan", "phone", "email", "amount", "merchant_id", "city", "dt", "status"]


# ---- the corpus ---------------------------------------------------------------------------------


class Corpus:
    """Generates statements of the kinds listed in the module docstring."""

    def __init__(self, seed: int = SEED) -> None:
        self.rng = random.Random(seed)

    def table(self) -> str:
        rng = self.rng
        name = f"{rng.choice(['prod', 'analytics', 'risk', 'ml'])}.t{rng.randrange(300):03d}"
        return f"lake.{name}" if rng.random() < 0.3 else name

    def cols(self, k: int) -> list[str]:
        return self.rng.sample(COLUMNS, k)

    def select_list(self, alias: str, k: int) -> list[str]:
        rng, items = self.rng, []
        for c in self.cols(k):
            roll = rng.random()
            if roll < 0.5:
                items.append(f"{alias}.{c}")
            elif roll < 0.7:
                items.append(f"{alias}.{c} AS {c}_x")
            elif roll < 0.85:
                items.append(f"sha2(CAST({alias}.{c} AS STRING), 256) AS {c}_hash")
            else:
                items.append(f"lower(trim({alias}.{c})) AS {c}_norm")
        return items

    def statement(self, n: int) -> str:
        kind = n % 8
        return [self.insert_join, self.overwrite_partition, self.ctas_group, self.ctes, self.union,
                self.merge, self.window, self.case][kind]()

    def insert_join(self) -> str:
        left, right = self.select_list("a", 3), self.select_list("b", 2)
        return (f"INSERT INTO {self.table()}\nSELECT {', '.join(left + right)}\nFROM {self.table()} AS a\n"
                f"JOIN {self.table()} AS b ON a.merchant_id = b.merchant_id\nWHERE a.amount > {self.rng.randrange(100)}")

    def overwrite_partition(self) -> str:
        items = self.select_list("p", 4)
        return (f"INSERT OVERWRITE TABLE {self.table()} PARTITION (dt)\nSELECT {', '.join(items)}, p.dt\n"
                f"FROM {self.table()} AS p\nWHERE p.status = 'ok'")

    def ctas_group(self) -> str:
        key = self.rng.choice(["user_id", "pan", "merchant_id"])
        return (f"CREATE TABLE {self.table()} USING delta AS\nSELECT s.{key}, sum(s.amount) AS total, "
                f"count(DISTINCT s.phone) AS phones, max(s.dt) AS last_dt\nFROM {self.table()} AS s\nGROUP BY s.{key}")

    def ctes(self) -> str:
        return (f"INSERT INTO {self.table()}\nWITH base AS (\n  SELECT user_id, phone, amount, dt FROM {self.table()}\n"
                f"  WHERE dt >= '2026-01-01'\n), hashed AS (\n  SELECT sha2(CAST(user_id AS STRING), 256) AS user_hash,\n"
                f"         lower(phone) AS phone_norm, amount FROM base\n)\n"
                f"SELECT user_hash, phone_norm, sum(amount) AS spend FROM hashed GROUP BY user_hash, phone_norm")

    def union(self) -> str:
        a, b = self.cols(2)
        return (f"INSERT OVERWRITE TABLE {self.table()}\nSELECT x.{a} AS contact, x.dt FROM {self.table()} AS x "
                f"WHERE x.{a} IS NOT NULL\nUNION ALL\nSELECT y.{b}, y.dt FROM {self.table()} AS y WHERE y.{b} IS NOT NULL")

    def merge(self) -> str:
        a, b = self.cols(2)
        return (f"MERGE INTO {self.table()} AS t\nUSING {self.table()} AS s\nON t.user_id = s.user_id\n"
                f"WHEN MATCHED THEN UPDATE SET t.{a} = s.{a}, t.{b} = s.{b}\n"
                f"WHEN NOT MATCHED THEN INSERT (user_id, {a}) VALUES (s.user_id, s.{a})")

    def window(self) -> str:
        return (f"CREATE OR REPLACE TABLE {self.table()} USING delta AS\nSELECT w.user_id, w.merchant_id, w.amount,\n"
                f"       row_number() OVER (PARTITION BY w.user_id ORDER BY w.dt DESC) AS rn,\n"
                f"       sum(w.amount) OVER (PARTITION BY w.user_id) AS user_total\nFROM {self.table()} AS w")

    def case(self) -> str:
        return (f"INSERT INTO {self.table()}\nSELECT c.customer_id,\n       CASE WHEN c.amount > 1000 THEN 'high' "
                f"WHEN c.status = 'new' THEN 'new' ELSE 'low' END AS band,\n       c.dt\nFROM {self.table()} AS c")


def fixture_statements() -> list[str]:
    """Every statement of lineage_fixtures/sql, with its file's ``USE`` in front of later ones."""
    result = []
    for path in sorted((ROOT / "lineage_fixtures" / "sql").glob("*.sql")):
        text = "\n".join(line for line in path.read_text().splitlines() if not line.strip().startswith("--"))
        use = ""
        for part in (p.strip() for p in text.split(";")):
            if not part:
                continue
            if part.upper().startswith("USE "):
                use = part + ";\n"
            else:
                result.append(use + part)
    return result


# ---- the two tools ------------------------------------------------------------------------------


def _norm(dataset: str, column: str) -> str:
    parts = dataset.lower().replace("<default>", "default").split(".")
    if len(parts) == 3 and parts[0] in CATALOGS:
        parts = parts[1:]
    return ".".join(parts) + "." + column.lower()


def piitracer_edges(sql: str, namer: DatasetNamer) -> set[tuple[str, str]]:
    batch = ingest_sql_text(sql, file="corpus.sql", namer=namer)
    return {(_norm(e.source.dataset, e.source.column), _norm(e.target_dataset, e.target_column))
            for e in batch.column_edges if e.kind is EdgeKind.DIRECT and e.target_column is not None}


def sqllineage_edges(sql: str) -> set[tuple[str, str]]:
    from sqllineage.runner import LineageRunner

    paths = LineageRunner(sql, dialect="sparksql", silent_mode=True).get_column_lineage()
    return {(_norm(str(p[0].parent), p[0].raw_name), _norm(str(p[-1].parent), p[-1].raw_name)) for p in paths}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--statements", type=int, default=600, help="generated statements (the fixtures are added)")
    parser.add_argument("--runs", type=int, default=3, help="piitracer runs (median); sqllineage runs once")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    core = pin_one_core()
    corpus = Corpus()
    statements = [corpus.statement(n) for n in range(args.statements)] + fixture_statements()
    namer = DatasetNamer(spark_catalogs=CATALOGS)

    ours_s, ours_runs, ours = median_of(args.runs, lambda: [piitracer_edges(s, namer) for s in statements])

    def run_sqllineage() -> list[set | Exception]:
        found: list[set | Exception] = []
        for sql in statements:
            try:
                found.append(sqllineage_edges(sql))
            except Exception as error:  # noqa: BLE001 (any failure of the baseline is counted)
                found.append(error)
        return found

    theirs_s, theirs = timed(run_sqllineage)
    agree = differ = failed = 0
    examples: list[dict[str, object]] = []
    for sql, a, b in zip(statements, ours, theirs):
        if isinstance(b, Exception):
            failed += 1
        elif a == b:
            agree += 1
        else:
            differ += 1
            if len(examples) < 5 or not any(sql.split()[0] == str(e["sql"]).split()[0] for e in examples):
                examples.append({"sql": sql, "only_piitracer": sorted(a - b), "only_sqllineage": sorted(b - a)})
    n = len(statements)
    ratio = theirs_s / ours_s
    print_table(f"{n} statements ({args.statements} generated + {n - args.statements} fixture), one core",
                ["tool", "seconds", "statements/s", "x"],
                [[f"piitracer (median of {args.runs})", ours_s, n / ours_s, ratio],
                 ["sqllineage 1.5.9 (1 run)", theirs_s, n / theirs_s, 1.0]])
    print_table("Column edges per statement (DIRECT source column -> target column, names normalised)",
                ["agree", "differ", "sqllineage failed"], [[agree, differ, failed]])
    for example in examples[:6]:
        print(f"\n-- differs:\n{example['sql']}\n   only piitracer:  {example['only_piitracer']}"
              f"\n   only sqllineage: {example['only_sqllineage']}")
    print(f"\ntarget >= 10x sqllineage: {ratio:.1f}x -> {'holds' if ratio >= 10 else 'FAILS'}")
    write_results("sql_lineage", {
        "statements": n, "generated": args.statements, "core": core,
        "piitracer_s": ours_s, "piitracer_runs_s": ours_runs, "piitracer_statements_per_s": n / ours_s,
        "sqllineage_s": theirs_s, "sqllineage_statements_per_s": n / theirs_s, "ratio": ratio,
        "agree": agree, "differ": differ, "sqllineage_failed": failed,
        "failures": sorted({type(b).__name__ for b in theirs if isinstance(b, Exception)}),
        "examples": examples, "target_ratio": 10, "target_holds": ratio >= 10,
    })


if __name__ == "__main__":
    main()
