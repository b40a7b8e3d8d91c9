"""Classification accuracy: ``catalog classify``'s classifier scored on the labelled corpus of
tests/support/classify_corpus.py (Faker's locales, python-stdnum's valid and failing numbers, decoys of each
kind, public column-name shapes; seeded, deterministic): precision, recall and F1 per kind and
overall (binary: personal data or not; typed: the right kind), and the decoys flagged.

    .venv/bin/python benchmarks/bench_classify.py [--seed 31] [--rows 40] [--seeds 3]

``--seeds N`` scores N corpora (seed, seed+1, ...) and reports each and the worst: a rule tuned to
one draw shows here.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))
from _common import peak_rss_mb, print_table, write_results  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--rows", type=int, default=40, help="values per column")
    parser.add_argument("--seeds", type=int, default=3, help="corpora scored (seed, seed+1, ...)")
    args = parser.parse_args()

    from classify_corpus import LOCALES, classify, corpus, score

    runs = []
    for seed in range(args.seed, args.seed + args.seeds):
        columns = corpus(seed, args.rows)
        started = time.perf_counter()
        predicted = classify(columns)
        seconds = time.perf_counter() - started
        result = score(columns, predicted)
        runs.append((seed, columns, result, seconds))
    seed, columns, first, seconds = runs[0]
    made = Counter(c.label or ("decoy" if c.decoy else "other") for c in columns)
    print(f"corpus (seed {seed}): {len(columns)} columns, {args.rows} values each, locales {', '.join(LOCALES)}")
    print("  " + ", ".join(f"{kind} {count}" for kind, count in sorted(made.items())))
    rows = [[kind, k["tp"] + k["fn"], k["tp"], k["fp"], k["fn"], k["precision"], k["recall"], k["f1"]]
            for kind, k in first["per_kind"].items()]
    print_table(f"per kind (seed {seed})", ["kind", "labelled", "tp", "fp", "fn", "precision", "recall", "F1"], rows)
    overall = [[s, r["columns"], r["flagged"], r["precision"], r["recall"], r["f1"], r["typed_f1"], len(r["decoys_flagged"]),
                round(t, 2)] for s, _, r, t in runs]
    print_table("overall", ["seed", "columns", "flagged", "precision", "recall", "binary F1", "typed F1", "decoys flagged",
                            "seconds"], overall)
    for s, _, r, _ in runs:
        if r["decoys_flagged"]:
            print(f"seed {s}: decoys flagged: {', '.join(r['decoys_flagged'])}")
    worst = min(runs, key=lambda run: run[2]["f1"])[2]
    print(f"worst binary F1 {worst['f1']}, typed F1 {worst['typed_f1']}; peak RSS {peak_rss_mb():.0f} MB")
    write_results("bench_classify", {
        "rows": args.rows, "composition": dict(sorted(made.items())),
        "runs": [{"seed": s, "seconds": t, **{k: v for k, v in r.items()}} for s, _, r, t in runs],
        "worst_f1": worst["f1"], "worst_typed_f1": worst["typed_f1"], "peak_rss_mb": peak_rss_mb()})


if __name__ == "__main__":
    main()
