#!/usr/bin/env bash
# Installs everything sparkcdc and its tests need on a fresh Debian machine. Idempotent: a second run
# only checks. Used by scripts/test.sh and scripts/quickstart.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${SPARKCDC_VENV:-$ROOT/.venv}"

need_apt=()
command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || need_apt+=(mariadb-server mariadb-client)
[ -e /usr/share/java/mariadb-java-client.jar ] || need_apt+=(libmariadb-java)
command -v etcd >/dev/null 2>&1 || need_apt+=(etcd-server etcd-client)
command -v java >/dev/null 2>&1 || need_apt+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || need_apt+=(maven)  # fetches Apache Kafka's jars from Maven Central
command -v chromium-headless-shell >/dev/null 2>&1 || need_apt+=(chromium-headless-shell)  # the status page test
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: apt-get install ${need_apt[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${need_apt[@]}" >/dev/null
fi

# Rust (rustup) builds the native core (native/ -> sparkcdc._native) during the pip install below.
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install Rust with rustup (https://rustup.rs), then run this again" >&2
  exit 1
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV"
  python3.11 -m venv "$VENV" 2>/dev/null || python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q -U pip
fi
stamp="$VENV/.sparkcdc-installed"
# Reinstall when pyproject.toml changed or a dependency added since the last install is missing.
if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ] \
   || ! "$VENV/bin/python" -c "import confluent_kafka, PIL, xdist" >/dev/null 2>&1; then
  echo "setup: pip install -e .[test]"
  "$VENV/bin/pip" install -q -e "$ROOT[test]" 2>&1 | grep -v "^WARNING: Location" || true
  "$VENV/bin/python" -c "import sparkcdc, pyspark, pyarrow, pymysql, confluent_kafka" # fails loudly if the install failed
  touch "$stamp"
elif [ -n "$(find "$ROOT/native" -path "$ROOT/native/target" -prune -o -newer "$stamp" -type f -print -quit)" ] \
     || ! "$VENV/bin/python" -c "import sparkcdc._native" >/dev/null 2>&1; then
  echo "setup: native/ changed: rebuilding sparkcdc._native"
  "$VENV/bin/pip" install -q --no-deps -e "$ROOT" 2>&1 | grep -v "^WARNING: Location" || true
  "$VENV/bin/python" -c "import sparkcdc._native"  # fails loudly if the build failed
  touch "$stamp"
fi

if [ ! -x "$ROOT/node_modules/.bin/azurite-blob" ]; then
  echo "setup: npm install azurite"
  (cd "$ROOT" && npm install --no-audit --no-fund --silent --no-save azurite@3.35.0 >/dev/null)
fi

# Apache Kafka (KRaft) for the private test broker: its jars from Maven Central into the cache that
# sparkcdc.devtools.apache_kafka reads; copied to a temporary dir first, so an interrupted fetch is retried.
KAFKA_VERSION=4.4.0
KAFKA_HOME="${SPARKCDC_CACHE:-$HOME/.cache/sparkcdc}/kafka-$KAFKA_VERSION"
if [ ! -f "$KAFKA_HOME/libs/kafka_2.13-$KAFKA_VERSION.jar" ]; then
  echo "setup: fetching Apache Kafka $KAFKA_VERSION jars from Maven Central into $KAFKA_HOME/libs"
  rm -rf "$KAFKA_HOME/libs.tmp"
  mvn -B -q -f "$ROOT/scripts/maven/kafka.xml" dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory="$KAFKA_HOME/libs.tmp"
  rm -rf "$KAFKA_HOME/libs" && mv "$KAFKA_HOME/libs.tmp" "$KAFKA_HOME/libs"
fi

# A Confluent-compatible schema registry for the avro protocol's tests (AxonOps Schema Registry, Go, Apache-2.0):
# built once from the Go module proxy into the cache that sparkcdc.devtools.schema_registry reads (none can be
# had from Maven Central). Built from the module's own go.mod and go.sum, to a temporary name first.
REGISTRY_VERSION=v0.2.1
REGISTRY_BIN="${SPARKCDC_CACHE:-$HOME/.cache/sparkcdc}/schema-registry-$REGISTRY_VERSION/axonops-schema-registry"
if [ ! -x "$REGISTRY_BIN" ]; then
  echo "setup: building axonops-schema-registry $REGISTRY_VERSION from the Go module proxy into $(dirname "$REGISTRY_BIN")"
  [ -x /usr/local/go/bin/go ] && export PATH="$PATH:/usr/local/go/bin"
  if ! command -v go >/dev/null 2>&1; then
    echo "setup: go not found; install Go 1.26 or newer (https://go.dev/dl), then run this again" >&2
    exit 1
  fi
  export GOPROXY="${GOPROXY:-https://proxy.golang.org}"  # the module proxy only (Go's default falls back to git)
  REGISTRY_SRC="$(cd / && go mod download -json "github.com/axonops/axonops-schema-registry@$REGISTRY_VERSION" \
                  | "$VENV/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')"
  mkdir -p "$(dirname "$REGISTRY_BIN")"
  (cd "$REGISTRY_SRC" && go build -trimpath -o "$REGISTRY_BIN.tmp" ./cmd/schema-registry)
  mv "$REGISTRY_BIN.tmp" "$REGISTRY_BIN"
fi

# A class-data-sharing archive of Spark's classes for the driver JVM (sparkcdc.pipeline.class_archive): every
# cdc server start then loads Spark on about half the CPU. Made once per pyspark and java; a failure only warns.
"$VENV/bin/python" -m sparkcdc.pipeline.class_archive || echo "setup: no class archive made (Spark starts slower)" >&2
