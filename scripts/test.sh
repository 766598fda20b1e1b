#!/usr/bin/env bash
# The test command: set up (idempotent), lint, type-check, then run every test suite.
# Extra arguments go to pytest (e.g. scripts/test.sh tests/unit -x).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
"$ROOT/scripts/setup.sh"
VENV="${SPARKCDC_VENV:-$ROOT/.venv}"
cd "$ROOT"
export SPARK_LOCAL_IP=127.0.0.1
export PYSPARK_PYTHON="$VENV/bin/python"
export PYSPARK_DRIVER_PYTHON="$VENV/bin/python"
export GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false
export PATH="$VENV/bin:$PATH"

echo "== ruff"; ruff check src tests benchmarks
echo "== mypy"; mypy
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
echo "== cargo fmt, clippy, test (native/)"
(cd native && cargo fmt --check && PYO3_PYTHON="$VENV/bin/python" cargo clippy -q --all-targets -- -D warnings \
  && PYO3_PYTHON="$VENV/bin/python" cargo test -q)
echo "== pytest"
# Two xdist workers share the machine's two cores; a test module's tests stay on one worker, tests marked
# exclusive run alone, and the queue keeps the order tests/fixtures/scheduling.py gives it (long modules first).
# The slowest tests are printed at the end.
set +e
pytest -n "${SPARKCDC_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder --durations=25 "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi
exit "$rc"
