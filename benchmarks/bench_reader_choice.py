"""Which reader proves absence fastest (issue 29, point 1: "choose the reader by measurement"):
the verifier's own chunk-proof reader against DuckDB's Parquet reader and pyarrow's dataset
filter, on the same files, with the bare ``pyarrow.parquet.read_table`` of those files as the floor.

The lakehouses are ``bench_proof_scale``'s (generate them once with ``bench_proof_scale.py --keep
DIR``; this script reads ``DIR/default``, ``DIR/prepared`` and ``DIR/worst``). The search is the
verifier's per-column claim: user_id, pan and phone (identifier columns) for whole values of their
own value sets; merchant (free text) for every value inside its text.

- ``verifier``: ``verify.engine: driver`` (statistics, page index, Bloom filters, dictionaries,
  pages; decodes only what they do not prove), exactly as ``bench_proof_scale.verify``.
- ``duckdb``: one query over the same files, ``user_id IN (...) OR pan IN (...) OR phone IN (...)
  OR regexp_matches(merchant, '<every value>')``. DuckDB prunes row groups by min/max and Bloom
  filters for the ``IN`` lists and reads only these four columns. Its text test is a substring
  match, a superset of the verifier's whole-token rule, so it is at least as much work as needed.
- ``duckdb whole values only``: the same without the merchant test (what DuckDB costs when no
  column is searched inside text).
- ``pyarrow dataset filter``: ``pyarrow.dataset`` with the same ``isin`` filters (row groups pruned by
  statistics) and ``match_substring_regex`` on merchant.

Each reader's files with a hit must equal the verifier's (the script fails otherwise). Figures are
CPU seconds (``time.process_time``, every thread of the process: DuckDB and pyarrow use several)
beside wall time, medians of ``--repeats`` runs taken in turn, files in the page cache first.

    .venv/bin/python benchmarks/bench_reader_choice.py --lakes /tmp/proof-scale [--files 500] [--in-range 10]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.dataset as ds

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, write_results  # noqa: E402
from bench_proof_scale import _files, bare, clocked, verify, with_in_range  # noqa: E402

READERS = ("verifier", "duckdb", "duckdb whole values only", "pyarrow dataset filter")


def _pattern(value_sets: dict) -> str:
    values = sorted({str(v) for values in value_sets.values() for v in values}, key=lambda v: (-len(v), v))
    return "|".join(re.escape(v) for v in values)


def _relative(root: Path, path: str) -> str:
    """A file as the path below its lakehouse (the readers name files differently)."""
    path = path.removeprefix("file://")
    return path[len(str(root)) + 1:] if path.startswith(str(root) + "/") else path


def verifier_files(root: Path, names: list[str], value_sets: dict) -> set[str]:
    result = verify(root, names, value_sets)
    return {_relative(root, hit.file) for hit in result.hits if hit.kind == "data"}


def duckdb_files(root: Path, names: list[str], value_sets: dict, inside_text: bool) -> set[str]:
    import duckdb

    ids = ", ".join(str(int(v)) for v in value_sets["t.user_id"])
    pans = ", ".join("'" + str(v).replace("'", "''") + "'" for v in value_sets["t.pan"])
    phones = ", ".join("'" + str(v).replace("'", "''") + "'" for v in value_sets["t.phone"])
    where = f"user_id IN ({ids}) OR pan IN ({pans}) OR phone IN ({phones})"
    if inside_text:
        where += " OR regexp_matches(merchant, '" + _pattern(value_sets).replace("'", "''") + "')"
    files = "[" + ", ".join("'" + str(root / name) + "'" for name in names) + "]"
    connection = duckdb.connect()
    rows = connection.execute(f"SELECT DISTINCT filename FROM read_parquet({files}, filename = true) WHERE {where}").fetchall()
    connection.close()
    return {_relative(root, row[0]) for row in rows}


def pyarrow_files(root: Path, names: list[str], value_sets: dict) -> set[str]:
    import pyarrow as pa

    dataset = ds.dataset([str(root / name) for name in names], format="parquet")
    expression = (ds.field("user_id").isin(pa.array(value_sets["t.user_id"], pa.int64()))
                  | ds.field("pan").isin(value_sets["t.pan"]) | ds.field("phone").isin(value_sets["t.phone"])
                  | pc.match_substring_regex(ds.field("merchant"), _pattern(value_sets)))
    # Per file, so the files with a hit are known; row groups are pruned by their statistics.
    return {_relative(root, fragment.path) for fragment in dataset.get_fragments()
            if fragment.to_table(columns=["user_id"], filter=expression).num_rows}


def measure(root: Path, names: list[str], value_sets: dict, repeats: int) -> dict:
    """Median CPU and wall seconds of the bare read and each reader; the files each found."""
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in ("bare", *READERS)}
    found: dict[str, set[str]] = {}
    work = {
        "bare": lambda: bare(root, names),
        "verifier": lambda: verifier_files(root, names, value_sets),
        "duckdb": lambda: duckdb_files(root, names, value_sets, True),
        "duckdb whole values only": lambda: duckdb_files(root, names, {**value_sets}, False),
        "pyarrow dataset filter": lambda: pyarrow_files(root, names, value_sets),
    }
    bare(root, names)  # the page cache
    for _ in range(repeats):
        for name, fn in work.items():
            wall, cpu, result = clocked(fn)
            runs[name].append((wall, cpu))
            if name != "bare":
                found[name] = result
    medians = {name: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r)) for name, r in runs.items()}
    return {"medians": medians, "found": {k: sorted(v) for k, v in found.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lakes", type=Path, required=True, help="bench_proof_scale.py --keep's folder")
    parser.add_argument("--files", type=int, default=500, help="the first N files of each lakehouse")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--in-range", type=int, default=0, metavar="N", help="as bench_proof_scale.py --in-range")
    args = parser.parse_args()
    value_sets = with_in_range(json.loads((args.lakes / "default.json").read_text())["made"], args.in_range)
    rows, results = [], {}
    for lake in ("default", "prepared", "worst"):
        root = args.lakes / lake
        names = _files(root)[:args.files]
        result = results[lake] = measure(root, names, value_sets, args.repeats)
        truth = set(result["found"]["verifier"])
        for reader in READERS:
            got = set(result["found"][reader])
            # DuckDB and pyarrow test merchant by substring: they may find more, never less.
            exact = got == truth if reader == "verifier" else truth <= got
            if reader == "duckdb whole values only":
                exact = got <= truth
            if not exact:
                raise SystemExit(f"{lake}: {reader} found {sorted(got)}, the verifier {sorted(truth)}")
        bare_wall, bare_cpu = result["medians"]["bare"]
        for reader in READERS:
            wall, cpu = result["medians"][reader]
            rows.append([lake, len(names), reader, bare_cpu, cpu, cpu / bare_cpu, wall / bare_wall, len(result["found"][reader])])
    print_table(f"Readers on the same files (first {args.files} of each lakehouse; CPU s, medians of {args.repeats}; "
                f"in-range values: {args.in_range})",
                ["lakehouse", "files", "reader", "bare CPU s", "reader CPU s", "x (CPU)", "x (wall)", "files found"], rows)
    write_results("reader_choice" + (f"_in_range{args.in_range}" if args.in_range else ""),
                  {"files": args.files, "repeats": args.repeats, "in_range": args.in_range, "results": results})


if __name__ == "__main__":
    main()
