#!/usr/bin/env bash
# Quickstart: installs what is missing (scripts/setup.sh), starts a private MariaDB and a cdc server, creates a
# changefeed to a local directory (default ./quickstart-data), runs a short mixed workload with a DDL, waits for
# the checkpoint to cover it, prints the storage-sink tree and checkpoint, and stops everything it started.
#   scripts/quickstart.sh [OUTPUT_DIR] [--work-dir DIR] [--spark-master local[*]]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${SPARKCDC_VENV:-$ROOT/.venv}"
"$ROOT/scripts/setup.sh"
export SPARK_LOCAL_IP=127.0.0.1
export PYSPARK_PYTHON="$VENV/bin/python"
export PYSPARK_DRIVER_PYTHON="$VENV/bin/python"
export GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false
exec "$VENV/bin/python" -m sparkcdc.devtools.quickstart "$@"
