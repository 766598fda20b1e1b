#!/usr/bin/env bash
# Fetches and builds what benchmarks/peers.py runs besides sparkcdc: Debezium 3.6.1.Final's MySQL connector in the
# embedded engine with our small driver (benchmarks/peers/), into .cache/peers/ (git-ignored): target/classes and
# the runtime jars in lib/. Needs Java 17+ and Maven (apt-get install openjdk-17-jdk-headless maven). Idempotent: a
# second run only checks (seconds); it rebuilds when the pom or the Java source changed. Only the benchmark needs it,
# so scripts/setup.sh (and the test command) never pays for it.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SRC="$ROOT/benchmarks/peers"
OUT="$ROOT/.cache/peers"
stamp="$OUT/.built"

for tool in java javac mvn; do
  command -v "$tool" >/dev/null 2>&1 || { echo "peers_setup: $tool not found; apt-get install openjdk-17-jdk-headless maven" >&2; exit 1; }
done
if [ -f "$stamp" ] && [ -z "$(find "$SRC" -newer "$stamp" -type f -print -quit)" ]; then
  exit 0
fi
echo "peers_setup: fetching Debezium 3.6.1.Final and building the driver into $OUT (about a minute the first time)"
rm -rf "$OUT/lib" "$OUT/target"
mvn -q -B -f "$SRC/pom.xml" package -Dpeers.out="$OUT"
touch "$stamp"
