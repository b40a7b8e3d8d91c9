#!/usr/bin/env bash
# Run every benchmark with its default sizes (about 2 hours on 2 cores, most of it generating the proof-scale lakehouses; a quiet machine).
# Figures go to benchmarks/results/<name>.json, printed output to benchmarks/results/<name>.txt.
# Usage: benchmarks/run_all.sh [python]   (default: .venv/bin/python of this checkout)
# Needs the bench extra: .venv/bin/pip install -e '.[bench]'
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${1:-.venv/bin/python}"
mkdir -p benchmarks/results
run() { local name=$1; shift; echo "== $name: $*"; "$@" 2>&1 | grep -v -E '^\s*$|WARN|setLogLevel|NativeCodeLoader' | tee "benchmarks/results/$name.txt"; }
run openlineage "$PY" benchmarks/bench_openlineage.py
run sql_lineage "$PY" benchmarks/bench_sql_lineage.py
run planning "$PY" benchmarks/bench_planning.py
run lineage_store "$PY" benchmarks/bench_lineage_store.py
run erasure "$PY" benchmarks/bench_erasure.py
run delete_modes "$PY" benchmarks/bench_delete_modes.py
run verify_engines "$PY" benchmarks/bench_verify_engines.py
proof_dir=$(mktemp -d)  # the proof-scale lakehouses, generated once for both runs
run proof_scale "$PY" benchmarks/bench_proof_scale.py --repeats 3 --sample 30 --keep "$proof_dir"
run proof_scale_in_range "$PY" benchmarks/bench_proof_scale.py --repeats 3 --sample 30 --in-range 10 --keep "$proof_dir"
run reader_choice "$PY" benchmarks/bench_reader_choice.py --lakes "$proof_dir" --files 500
run reader_choice_in_range "$PY" benchmarks/bench_reader_choice.py --lakes "$proof_dir" --files 500 --in-range 10
rm -rf "$proof_dir"
run prepare_write "$PY" benchmarks/bench_prepare_write.py
run classify "$PY" benchmarks/bench_classify.py --seeds 4
run rewrite_engines "$PY" benchmarks/bench_rewrite_engines.py
run discovery "$PY" benchmarks/bench_discovery.py
run shred_overhead "$PY" benchmarks/bench_shred_overhead.py
run shred_erase "$PY" benchmarks/bench_shred_erase.py
run requests_add "$PY" benchmarks/bench_requests_add.py
run catalog_asks "$PY" benchmarks/bench_catalog_asks.py
run seed_erasure "$PY" benchmarks/bench_seed_erasure.py --runs 3
run verify_process "$PY" benchmarks/bench_verify_process.py
run guard_scan "$PY" benchmarks/bench_guard_scan.py
demo_dir=$(mktemp -d)
run demo /usr/bin/time -v "$(dirname "$PY")/piitracer" demo --dir "$demo_dir/demo"
rm -rf "$demo_dir"
