#!/usr/bin/env bash
# Run the three benchmarks with their default sizes; figures go to benchmarks/results/*.json.
# Usage: benchmarks/run_all.sh [python]   (default: .venv/bin/python of this checkout)
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${1:-.venv/bin/python}"
"$PY" benchmarks/bench_openlineage.py
"$PY" benchmarks/bench_sql_lineage.py
"$PY" benchmarks/bench_planning.py
