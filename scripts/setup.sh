#!/usr/bin/env bash
# Set up everything piitracer needs on a fresh Debian machine, idempotently:
#   - Debian's graphviz (the `dot` program) when it is missing,
#   - Debian's chromium and chromium-driver (the console's browser tests) when missing,
#   - Debian's postgresql and libpostgresql-jdbc-java (the Iceberg JDBC catalog tests) when missing,
#   - a virtualenv at .venv/ in the repo root with piitracer and its pinned stack (+ test tools).
# Re-running is cheap: the Python install is skipped while pyproject.toml is unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v dot >/dev/null 2>&1; then
  echo "setup: installing Debian's graphviz (dot)" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq graphviz >/dev/null
fi

# The console's browser tests drive Debian's Chromium through its matching chromedriver.
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  echo "setup: installing Debian's chromium and chromium-driver (the console's browser tests)" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi

# PostgreSQL and its JDBC driver: the Iceberg JDBC catalog that Spark (through the driver's jar) and
# pyiceberg's sql catalog share in the tests (tests/support/postgres_server.py starts a throwaway server).
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || [ ! -f /usr/share/java/postgresql.jar ]; then
  echo "setup: installing Debian's postgresql and libpostgresql-jdbc-java (the JDBC catalog tests)" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql libpostgresql-jdbc-java >/dev/null
fi

if ! command -v java >/dev/null 2>&1; then
  echo "setup: warning: no java on PATH; Spark (execute, demo) needs Java 17" >&2
fi

PYTHON="${PYTHON:-}"
if [ -z "$PYTHON" ]; then
  for candidate in python3.11 python3.12 python3.10 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(not ((3,10) <= sys.version_info[:2] < (3,13)))'; then
      PYTHON="$candidate"; break
    fi
  done
fi
[ -n "$PYTHON" ] || { echo "setup: need Python 3.10-3.12" >&2; exit 2; }

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $PYTHON" >&2
  "$PYTHON" -m venv .venv
fi

stamp=.venv/.piitracer-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing Python packages (pyspark builds from source: ~2-3 minutes the first time)" >&2
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[dev]"
  echo "$want" > "$stamp"
fi
