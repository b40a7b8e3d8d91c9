"""Proof at scale (issue 29, point 5): the verifier's Parquet scan (``verify.engine: driver``, the
current code) against the bare ``pyarrow.parquet.read_table`` of the same files, side by side in
one run, on three lakehouses of the same rows:

- ``default``: the 2,000-file / ~2 GB lakehouse of RESULTS 8, exactly as
  ``bench_verify_engines.generate`` writes it (pyarrow's defaults: dictionary encoding, snappy);
- ``prepared``: a copy of it after one piitracer rewrite with ``verify.prepare`` on
  (``formats.parquet.rewrite_files`` with ``prepare=("pan", "phone", "user_id")``: Bloom filters on
  those columns, dictionary kept, statistics and the page index written). The rewrite erases one
  other person per file (each file's first row), so every file is rewritten and the searched
  subjects' rows stay;
- ``worst``: the same rows with unique high-cardinality strings (the merchant made unique too),
  written plain (``use_dictionary=False``), no Bloom filter, no page index; a searched PAN is also
  planted inside a merchant text in a few files.

And how the cost grows with files: the first 1,000 files of ``default``, all 2,000, and a
``many`` lakehouse of 8,000 smaller files (``--many-rows`` rows each, 6,250 by default: the same
total bytes as 2,000 x 25,000, so the per-file cost shows).

Each figure is the median of ``--repeats`` runs of (bare read, verifier scan) taken in turn, in
this process, with its wall time and its CPU seconds (``time.process_time``: every thread of this
process), since the machine is shared. The ratio is against the bare read measured in the same
repeat loop. Bytes read / total are the verifier's own counts (``ChunkCounts``), and the decoded
chunks are grouped by column and reason (what ``verify --explain`` lists).

The verifier gets the column search the catalog gives (``piitracer.verify.scope``): ``user_id``,
``pan`` and ``phone`` are the dataset's identifiers (``t`` is the source: value sets ``t.user_id``,
``t.pan``, ``t.phone``), each searched for the whole values of its own value set; ``merchant`` (free
text) and ``amount`` for every value, whole and inside text.

``--in-range N`` adds N searched values to each string identifier set that lie inside every
chunk's min/max and sit in no file (``AB5000000X``: the files' PANs are ``AB`` and 8 digits;
``+91985000000``: their phones have 8 digits after ``+9198``). The generators' subjects lie outside
the filler's ranges (``ZZPAN…``, ``+91999…``, ids from 9e9), so footer statistics alone prove those
chunks; these values make the Bloom filters and dictionaries do the proving. Findings are unchanged.

Exactness: on a sample of every lakehouse's files (all files holding a planted subject, and
``--sample`` more), the verifier's data findings must equal a brute-force full decode of every
column (``pq.read_table`` + ``column_hits``, under the same per-column search); the script fails
otherwise.

``--concurrent`` runs the repeats as that many processes at once (on a shared, loaded machine:
CPU seconds are per process). ``--keep`` generates into (or reuses) a folder; ``--generate-only
--only LAKE`` makes one lakehouse (independent ones in parallel processes).

    .venv/bin/python benchmarks/bench_proof_scale.py [--files 2000] [--rows 25000] [--many 8000]
        [--many-rows 6250] [--repeats 3] [--sample 30] [--keep /tmp/proof-scale] [--concurrent]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, write_results  # noqa: E402
from bench_verify_engines import PLANTED_FILES, generate  # noqa: E402

PREPARE = ("pan", "phone", "user_id")
DATASET = "t"  # the generators' value sets are t.user_id, t.pan, t.phone
IDENTIFIERS = PREPARE  # what the catalog says of t (merchant: free text)
BLOOM_ONLY = "prepared, Bloom filters only (footer + filters: a lower bound)"
WEEKLY_TB = 200
CLUSTER_CORES = 100


# ---- the lakehouses ----------------------------------------------------------------------------

def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.parquet"))


def make_default(root: Path, files: int, rows: int) -> dict:
    return generate(root, files, rows)


def make_prepared(source: Path, root: Path) -> dict:
    """A copy of ``source`` after one ``rewrite_files`` with ``verify.prepare``: each file's first
    row's user id is erased (another person: every file is rewritten, the subjects' rows stay)."""
    from piitracer.formats.parquet import rewrite_files
    from piitracer.storage.locations import Location
    from piitracer.storage.store import Store

    shutil.copytree(source, root)
    erased = sorted({pq.ParquetFile(root / name).read_row_group(0, columns=["user_id"]).column(0)[0].as_py()
                     for name in _files(root)})
    start = time.perf_counter()
    cpu = time.process_time()
    outcome = rewrite_files(Location.parse(root), Store(), "user_id", erased, prepare=PREPARE)
    return {"files_rewritten": outcome.files_rewritten, "rows_deleted": outcome.rows_deleted,
            "rewrite_wall_s": time.perf_counter() - start, "rewrite_cpu_s": time.process_time() - cpu}


def make_worst(source: Path, root: Path, value_sets: dict) -> dict:
    """The same rows, every string unique, plain-encoded, no Bloom filter, no page index; a
    searched PAN inside a merchant text in ``PLANTED_FILES`` files."""
    pans = value_sets["t.pan"]
    names = _files(source)
    planted = 0
    for name in names:
        number = int(name.rsplit("-", 1)[1].split(".")[0])  # the generator's file number
        table = pq.ParquetFile(source / name).read()
        rows = table.num_rows
        suffix = pa.array(np.arange(number * rows, (number + 1) * rows).astype(str))
        merchant = pc.binary_join_element_wise(table.column("merchant").combine_chunks(), suffix, " #")
        if number % max(1, len(names) // PLANTED_FILES) == 1:  # not the files holding a subject's row
            texts = merchant.to_pylist()
            texts[0] = f"paid {pans[number % len(pans)]} at the counter"
            merchant = pa.array(texts)
            planted += 1
        table = table.set_column(table.schema.get_field_index("merchant"), "merchant", merchant)
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, root / name, use_dictionary=False, write_page_index=False)
    return {"inside_text_planted": planted}


def with_in_range(value_sets: dict, count: int) -> dict:
    """``value_sets`` with ``count`` more PANs and phones inside every chunk's bounds, in no file."""
    if not count:
        return value_sets
    return {**value_sets, "t.pan": value_sets["t.pan"] + [f"AB5{n:06d}X" for n in range(count)],
            "t.phone": value_sets["t.phone"] + [f"+91985{n:06d}" for n in range(count)]}


def lakes(base: Path, args) -> tuple[dict, dict]:
    """Generate (or reuse, under ``--keep``) every lakehouse (or only ``--only``'s: independent
    ones can be made in parallel processes); the value sets and the facts of making them. A
    lakehouse is whole once its ``<name>.json`` facts file exists."""
    makers = {
        "default": lambda: make_default(base / "default", args.files, args.rows),
        "prepared": lambda: make_prepared(base / "default", base / "prepared"),
        "worst": lambda: make_worst(base / "default", base / "worst", value_sets),
        "many": lambda: make_default(base / "many", args.many, args.many_rows),
    }
    facts: dict = {}
    value_sets: dict = {}
    for lake, make in makers.items():
        done = base / f"{lake}.json"
        if not done.exists() and args.only in (None, lake):
            shutil.rmtree(base / lake, ignore_errors=True)  # a half-made one
            wall, cpu, made = clocked(make)
            done.write_text(json.dumps({"made": made, "wall_s": wall, "cpu_s": cpu}))
            print(f"{lake}: made in {wall:.0f} s ({cpu:.0f} s CPU)", flush=True)
        if done.exists():
            facts[lake] = json.loads(done.read_text())
            if lake in ("default", "many"):
                assert not value_sets or facts[lake]["made"] == value_sets, "the lakehouses' subjects differ"
                value_sets = facts[lake]["made"]
        elif lake == "default" and args.only is None:
            raise SystemExit(f"{base / lake}: not generated yet")
    return value_sets, facts


# ---- the measured work ---------------------------------------------------------------------------

def bare(root: Path, names: list[str]) -> int:
    rows = 0
    for name in names:
        rows += pq.read_table(root / name).num_rows
    return rows


def scope(value_sets: dict):
    """The column search the catalog gives ``t`` (its identifiers; the verifier's own rule)."""
    from piitracer.verify.scope import column_scope

    return column_scope(DATASET, IDENTIFIERS, True, value_sets)


def verify(root: Path, names: list[str], value_sets: dict):
    """The driver engine's scan of these files (what ``verify`` runs with ``verify.engine: driver``)."""
    from piitracer.storage.locations import Location
    from piitracer.storage.store import FileEntry, Store
    from piitracer.verify.engines import FileScanner, ScanPlan, ScanRequest

    store = Store()
    request = ScanRequest(Location.parse(root), tuple(sorted(value_sets)), scope=scope(value_sets))
    plan = ScanPlan((request,), (tuple(FileEntry(name, (root / name).stat().st_size) for name in names),))
    return FileScanner().scan(plan, value_sets, store)[0]


def bloom_only(root: Path, names: list[str], value_sets: dict) -> dict:
    """The floor of a prepared file's proof: the footer and the Bloom filters of ``PREPARE`` read,
    each chunk checked with the verifier's own reader (``parquet_proofs``) and each column's own
    value set (``verify.scope``); the chunks a filter admits are counted, not decoded here."""
    from piitracer.storage.locations import Location
    from piitracer.storage.store import Store
    from piitracer.verify.parquet_bloom import bloom_may_hold
    from piitracer.verify.parquet_pages import CountingFile, read_metadata
    from piitracer.verify.parquet_proofs import ParquetProver
    from piitracer.verify.scope import ScopedIndex

    scoped, store = ScopedIndex.build(value_sets, sorted(value_sets), scope(value_sets)), Store()
    admitted = checked = read = total = 0
    for name in names:
        with CountingFile(store.open_input(Location.parse(root / name))) as handle:
            metadata, footer = read_metadata(handle)
            schema = metadata.schema.to_arrow_schema()
            prover = ParquetProver(handle, metadata, schema, scoped.index, footer, scoped.for_schema(schema))
            for group in range(metadata.num_row_groups):
                for column_name in PREPARE:
                    column = prover.column(column_name)
                    chunk = metadata.row_group(group).column(column.leaf)
                    checked += 1
                    if chunk.bloom_filter_offset is None or column.hashes is None or \
                            bloom_may_hold(handle, chunk, column.hashes):
                        admitted += 1
            read += handle.bytes_read
            total += handle.size()
    return {"chunks": checked, "admitted": admitted, "bytes_read": read, "bytes_total": total}


def clocked(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def brute_force(root: Path, names: list[str], value_sets: dict) -> set[tuple[str, str, str]]:
    """Every column of every row group decoded and searched (each under the verifier's per-column
    search: identifier columns for their own whole values): the places a full decode finds."""
    from piitracer.verify.columns import column_hits
    from piitracer.verify.scope import ScopedIndex

    scoped = ScopedIndex.build(value_sets, sorted(value_sets), scope(value_sets))
    found = set()
    for name in names:
        table = pq.ParquetFile(root / name).read()
        per_column = scoped.for_schema(table.schema)
        for column in table.column_names:
            for where, sets in column_hits(column, table.column(column), per_column.get(column, scoped.index),
                                           redact=scoped.index):
                found |= {(name, where, s) for s in sets}
    return found


def explain(result) -> list[list[object]]:
    """Decoded chunks by column and reason (``verify --explain``'s notes, grouped)."""
    groups = Counter((c.column, c.why) for c in result.chunks.decoded_chunks)
    return [[column, why, count] for (column, why), count in sorted(groups.items())]


def configurations(base: Path) -> tuple[dict[str, list[str]], dict[str, tuple[str, list[str]]]]:
    """Every lakehouse's files, and the measured configurations: name -> (lakehouse, files)."""
    listing = {lake: _files(base / lake) for lake in ("default", "prepared", "worst", "many")}
    return listing, {
        "default, 1k files": ("default", listing["default"][:len(listing["default"]) // 2]),
        "default, 2k files": ("default", listing["default"]),
        "many, 8k small files": ("many", listing["many"]),
        "prepared, 2k files": ("prepared", listing["prepared"]),
        "worst, 2k files": ("worst", listing["worst"]),
    }


def one_repeat(base: Path, value_sets: dict, label: str) -> dict:
    """One repeat: every configuration's bare read then verifier scan, in turn, in this process;
    then the Bloom-only pass beside the prepared one. Figures only (JSON)."""
    listing, configs = configurations(base)
    for lake, names in listing.items():  # imports and first-use set-up out of the clock
        bare(base / lake, names[:2])
        verify(base / lake, names[:2], value_sets)
        if lake == "prepared":
            bloom_only(base / lake, names[:2], value_sets)
    figures: dict[str, dict] = {}
    for name, (lake, names) in configs.items():
        root = base / lake
        # Every file in the page cache before either is timed: otherwise whichever runs first pays
        # the disk (kernel CPU included) for both.
        for name_ in names:
            (root / name_).read_bytes()
        bare_wall, bare_cpu, _ = clocked(lambda: bare(root, names))
        wall, cpu, result = clocked(lambda: verify(root, names, value_sets))
        chunks = result.chunks
        figures[name] = {"bare_wall": bare_wall, "bare_cpu": bare_cpu, "verify_wall": wall, "verify_cpu": cpu,
                         "data_files": sorted({h.file for h in result.hits if h.kind == "data"}),
                         "places": len(result.hits), "proven": chunks.proven, "decoded": chunks.decoded,
                         "bytes_read": chunks.bytes_read, "bytes_total": chunks.bytes_total,
                         "by_method": dict(sorted(chunks.by_method.items())), "decoded_by_reason": explain(result)}
        print(f"{label} {name}: bare {bare_cpu:.2f} s CPU ({bare_wall:.1f} s wall), verify {cpu:.2f} s CPU "
              f"({wall:.1f} s wall), load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
        if lake == "prepared":  # beside it, the Bloom-only lower bound (same bare read)
            wall, cpu, bloom = clocked(lambda: bloom_only(root, names, value_sets))
            figures[BLOOM_ONLY] = {"bare_wall": bare_wall, "bare_cpu": bare_cpu, "verify_wall": wall,
                                   "verify_cpu": cpu, **bloom}
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--rows", type=int, default=25000, help="rows per file (25,000: about 1 MB)")
    parser.add_argument("--many", type=int, default=8000, help="files of the growth lakehouse")
    parser.add_argument("--many-rows", type=int, default=6250)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sample", type=int, default=30, help="files checked against a full decode, besides the planted")
    parser.add_argument("--keep", type=Path, help="generate into (or reuse) this folder")
    parser.add_argument("--generate-only", action="store_true")
    parser.add_argument("--concurrent", action="store_true",
                        help="run the repeats as concurrent processes (a shared, loaded machine)")
    parser.add_argument("--repeat-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--only", choices=["default", "prepared", "worst", "many"], help="generate this lakehouse only")
    parser.add_argument("--in-range", type=int, default=0, metavar="N",
                        help="add N searched values per string identifier set inside every chunk's bounds (in no file)")
    args = parser.parse_args()
    load_at_start = os.getloadavg()
    print(f"load average at start: {load_at_start[0]:.2f} {load_at_start[1]:.2f} {load_at_start[2]:.2f}", flush=True)
    base = args.keep or Path(tempfile.mkdtemp(prefix="bench-proof-scale-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        value_sets, facts = lakes(base, args)
        if args.generate_only:
            return
        value_sets = with_in_range(value_sets, args.in_range)
        listing, configs = configurations(base)
        if args.repeat_child:
            print(json.dumps(one_repeat(base, value_sets, f"repeat {args.repeat_child}")))
            return
        # The repeats: in turn in this process, or (--concurrent) as that many processes at once,
        # each doing every configuration in turn (CPU seconds are per process; on a shared,
        # loaded machine this bounds the wall time of the whole run).
        children = []
        if args.concurrent:
            import subprocess

            children = [subprocess.Popen([sys.executable, __file__, "--keep", str(base), "--files", str(args.files),
                                          "--rows", str(args.rows), "--many", str(args.many), "--many-rows",
                                          str(args.many_rows), "--in-range", str(args.in_range),
                                          "--repeat-child", str(n + 1)], stdout=subprocess.PIPE,
                                         text=True) for n in range(args.repeats)]
        # Exactness first: on a sample (every file a subject was planted in, by the generators'
        # rule, and random others), the verifier's data findings equal a brute-force decode of
        # every column; after the timed runs, no full scan finds data outside its sample.
        rng = random.Random(29)
        exact, samples = {}, {}
        for lake in ("default", "prepared", "worst", "many"):
            root, names = base / lake, listing[lake]
            step = max(1, len(names) // PLANTED_FILES)
            planted = [n for n in names if int(n.rsplit("-", 1)[1].split(".")[0]) % step in (0, 1)]
            sample = sorted(set(planted) | set(rng.sample(names, min(args.sample, len(names)))))
            found = {(h.file, h.where, h.value_set) for h in verify(root, sample, value_sets).hits if h.kind == "data"}
            truth = brute_force(root, sample, value_sets)
            assert found == truth, f"{lake}: the verifier's findings differ from a full decode: {found ^ truth}"
            assert truth, f"{lake}: nothing planted was found"
            samples[lake] = set(sample)
            exact[lake] = {"sample_files": len(sample), "places": len(truth), "holders": len({f for f, _, _ in truth}),
                           "where": sorted(Counter(w for _, w, _ in truth).items())}
            print(f"exact on {lake}: {len(sample)} files, {len(truth)} places in {exact[lake]['holders']} files, "
                  "the same as a full decode", flush=True)
        if children:
            repeats = []
            for child in children:
                out, _ = child.communicate()
                if child.returncode:
                    raise SystemExit(f"a repeat process failed (exit {child.returncode})")
                repeats.append(json.loads(out.strip().splitlines()[-1]))
        else:
            repeats = [one_repeat(base, value_sets, f"repeat {n + 1}") for n in range(args.repeats)]
        keys = ("bare_wall", "bare_cpu", "verify_wall", "verify_cpu")
        runs = {name: {key: [r[name][key] for r in repeats] for key in keys} for name in [*configs, BLOOM_ONLY]}
        outcome = repeats[0]  # the counts are the same in every repeat (checked)
        for name, (lake, names) in configs.items():
            assert all(r[name]["by_method"] == outcome[name]["by_method"] and r[name]["data_files"] ==
                       outcome[name]["data_files"] for r in repeats), f"{name}: the repeats disagree"
            outside = set(outcome[name]["data_files"]) - samples[lake]
            assert not outside, f"{name}: data found outside the files checked against a full decode: {sorted(outside)}"
        table, figures = [], {}
        for name, (lake, names) in configs.items():
            medians = {key: statistics.median(values) for key, values in runs[name].items()}
            got = outcome[name]
            size = sum((base / lake / n).stat().st_size for n in names)
            figures[name] = {"files": len(names), "bytes": size, **medians, "runs": runs[name],
                             "cpu_ratio": medians["verify_cpu"] / medians["bare_cpu"],
                             "wall_ratio": medians["verify_wall"] / medians["bare_wall"],
                             **{k: got[k] for k in ("bytes_read", "bytes_total", "by_method", "decoded_by_reason",
                                                    "proven", "decoded", "places")}}
            table.append([name, len(names), size / 1e9, medians["bare_cpu"], medians["verify_cpu"],
                          figures[name]["cpu_ratio"], medians["bare_wall"], medians["verify_wall"],
                          figures[name]["wall_ratio"], f"{got['bytes_read'] / got['bytes_total']:.0%}",
                          f"{got['proven']:,}/{got['proven'] + got['decoded']:,}"])
        medians = {key: statistics.median(values) for key, values in runs[BLOOM_ONLY].items()}
        bloom = {k: v for k, v in outcome[BLOOM_ONLY].items() if k not in keys}
        holders = exact["prepared"]["holders"]
        assert bloom["admitted"] >= len(PREPARE) * holders, "a Bloom filter missed a chunk holding a subject"
        figures[BLOOM_ONLY] = {**medians, "runs": runs[BLOOM_ONLY], **bloom,
                               "cpu_ratio": medians["verify_cpu"] / medians["bare_cpu"],
                               "wall_ratio": medians["verify_wall"] / medians["bare_wall"]}
        table.append([BLOOM_ONLY, len(listing["prepared"]), bloom["bytes_total"] / 1e9, medians["bare_cpu"],
                      medians["verify_cpu"], figures[BLOOM_ONLY]["cpu_ratio"], medians["bare_wall"], medians["verify_wall"],
                      figures[BLOOM_ONLY]["wall_ratio"], f"{bloom['bytes_read'] / bloom['bytes_total']:.1%}",
                      f"{bloom['chunks'] - bloom['admitted']:,}/{bloom['chunks']:,} (Bloom)"])
        print_table(f"verifier (driver) vs bare pyarrow read, medians of {args.repeats}; load at start "
                    f"{load_at_start[0]:.1f}", ["files", "n", "GB", "bare CPU s", "verify CPU s", "x (CPU)",
                                                "bare wall s", "verify wall s", "x (wall)", "bytes read",
                                                "chunks proven"], table)
        for name in configs:
            print(f"\n{name}: chunks by method {figures[name]['by_method']}")
            for column, why, count in figures[name]["decoded_by_reason"]:
                print(f"  decoded {count:>6,} x {column}: {why}")
        # The projection: per-core rate = bytes / verifier CPU seconds, measured above.
        projection = []
        for name in ("default, 2k files", "prepared, 2k files", "worst, 2k files", BLOOM_ONLY):
            size = figures[name].get("bytes", figures[name].get("bytes_total"))
            rate = size / figures[name]["verify_cpu"]
            bare_rate = size / figures[name]["bare_cpu"]
            core_hours = WEEKLY_TB * 1e12 / rate / 3600
            projection.append([name, rate / 1e6, bare_rate / 1e6, figures[name]["bytes_read"] / figures[name]["bytes_total"],
                               core_hours, core_hours / CLUSTER_CORES])
            figures[name]["projection_core_hours"] = core_hours
        print_table(f"projection: {WEEKLY_TB} TB proven weekly on {CLUSTER_CORES} cores at the measured per-core rates",
                    ["lakehouse", "verify MB/s/core", "bare read MB/s/core", "bytes read/TB (fraction)",
                     "core-hours", f"hours on {CLUSTER_CORES} cores"], projection)
        write_results("proof_scale_scoped" + (f"_in_range{args.in_range}" if args.in_range else ""), {
                                      "load_avg_at_start": load_at_start, "repeats": args.repeats, "in_range": args.in_range,
                                      "concurrent": args.concurrent, "facts": facts,
                                      "exact": exact, "configs": figures})
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
