"""MariaDB -> ``cdc server`` (Spark runner) -> Kafka sink -> a real Kafka-protocol broker, per protocol.

Each table goes to its own 3-partition topic ``{schema}_{table}`` with the index-value dispatcher (rows spread
over the partitions by primary key); the workload has DDL mid-stream (add/drop column, truncate, rename). The
topics are read back with a plain consumer, decoded with the project's decoders and replayed: every table must
equal upstream, every partition must hold every DDL and the watermarks, rows stay in commit order per partition,
and (simple) a table's rows come after its BOOTSTRAP on every partition.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.codec.base import message_decoder
from sparkcdc.devtools.apache_kafka import ApacheKafka
from sparkcdc.devtools.kafka import Partitions, read_topic
from sparkcdc.model import RowChange
from sparkcdc.pipeline.source_rows import image
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.pipeline.server import SparkServer, Workload, now_tso
from tests.integration.sink.kafka_replay import (
    bootstrap_violations,
    commit_ts_order_violations,
    ddl_on_every_partition,
    headers,
    replay_partitions,
    watermarks_on_every_partition,
)

pytestmark = pytest.mark.e2e


PROTOCOLS = {
    "canal-json": ("protocol=canal-json&enable-tidb-extension=true", "", {"enable-tidb-extension": True}),
    "simple-json": ("protocol=simple", "", {}),
    "simple-avro": ("protocol=simple", '[sink.kafka-config.codec-config]\nencoding-format = "avro"\n',
                    {"encoding-format": "avro"}),
}  # fmt: skip


def row_key(r: Any) -> tuple[Any, ...]:
    """A row of format("ticdc-kafka") without its position."""
    return (r["database"], r["table"], r["commit_ts"], r["op"], tuple(sorted((r["before"] or {}).items())),
            tuple(sorted((r["after"] or {}).items())))  # fmt: skip


def decoded_rows(partitions: Partitions, protocol: str, options: dict[str, Any]) -> Counter[tuple[Any, ...]]:
    """The rows of a topic as our decoders give them, in the shape of ``row_key``."""
    out: Counter[tuple[Any, ...]] = Counter()
    for messages in partitions.values():
        decoder = message_decoder(protocol, options)
        for m in messages:
            for ev in decoder.decode(m):
                if isinstance(ev, RowChange):
                    names = [c.name for c in ev.table.columns]
                    before, after = image(names, ev.before), image(names, ev.after)
                    out[(ev.table.schema, ev.table.table, ev.commit_ts, ev.op.value,
                         tuple(sorted((before or {}).items())), tuple(sorted((after or {}).items())))] += 1  # fmt: skip
    return out


def extra_ddls(work: Workload, db: FreshDatabase) -> None:
    """DDL the seeded workload lacks, each followed by rows: add then drop a column, truncate, rename."""
    w0, w1, w2 = work.names[:3]
    db.execute(f"ALTER TABLE {w0} ADD COLUMN extra VARCHAR(10) DEFAULT 'x'",
               f"INSERT INTO {w0} (id, v, extra) VALUES (100001, 'before-drop', 'y')",
               f"ALTER TABLE {w0} DROP COLUMN extra", f"INSERT INTO {w0} (id, v) VALUES (100002, 'after-drop')")
    work.ids[w0] += [100001, 100002]
    db.execute(f"TRUNCATE TABLE {w1}", f"INSERT INTO {w1} (id, v) VALUES (100003, 'after-truncate')")
    work.ids[w1] = [100003]
    renamed = f"{w2}_renamed"
    db.execute(f"RENAME TABLE {w2} TO {renamed}", f"INSERT INTO {renamed} (id, v) VALUES (100004, 'renamed')")
    work.names[2] = renamed
    work.ids[renamed] = [*work.ids.pop(w2), 100004]
    work.next_id[renamed] = max(work.next_id.pop(w2), 100005)
    for name in (w0, w1):
        work.next_id[name] = max(work.next_id[name], 100005)


@pytest.mark.parametrize("flavour", sorted(PROTOCOLS))
def test_changefeed_to_kafka(
    flavour: str, fresh_db: FreshDatabase, spark_server: SparkServer, apache_kafka: ApacheKafka, tmp_path: Path,
    spark: Any,
) -> None:  # fmt: skip
    params, codec_toml, decode_options = PROTOCOLS[flavour]
    protocol = params.split("&")[0].split("=")[1]
    db = fresh_db
    default_topic = f"{db.name}-{flavour}-default"
    work = Workload(db, tables=3, ddl_every=25)
    work.create()
    server = spark_server
    cfg = tmp_path / "cf.toml"
    dispatcher = f'{{matcher = ["{db.name}.*"], topic = "{{schema}}_{{table}}", partition = "index-value"}}'
    cfg.write_text(f'[filter]\nrules = ["{db.name}.*"]\n\n[sink]\ndispatchers = [{dispatcher}]\n' + codec_toml)
    uri = f"kafka://{apache_kafka.bootstrap}/{default_topic}?{params}&partition-num=3"
    created = server.cli("create", "--sink-uri", uri, "--changefeed-id", "cf-kafka", "--config", str(cfg))
    assert created.returncode == 0, created.stderr + created.stdout
    for i in range(80):
        work.step(i)
    extra_ddls(work, db)
    for i in range(80, 120):
        work.step(i)
    end = now_tso(db)
    state = server.wait_checkpoint("cf-kafka", end)
    assert state["checkpoint_ts"] >= end
    server.remove("cf-kafka")  # nothing more is sent while the topics are read

    tables = [f"{db.name}_{n}" for n in (*work.names, "w2")]
    topics = {t: read_topic(apache_kafka.bootstrap, t) for t in tables}
    topics[default_topic] = read_topic(apache_kafka.bootstrap, default_topic)
    summary, got = replay_partitions(topics, protocol, decode_options)
    want = work.expected()
    for name, rows in want.items():
        assert got.get(name, {}) == rows, name
    assert f"{db.name}.w2" not in got  # renamed away
    assert summary.resolved_ts >= end and summary.pending == 0
    queries = " | ".join(d.query for d in summary.ddls)
    for fragment in ("DROP COLUMN", "TRUNCATE", "RENAME", "ADD COLUMN"):
        assert fragment in queries.upper(), queries
    for topic, partitions in topics.items():
        assert len(partitions) == 3, topic
        heads = headers(partitions, protocol, decode_options)
        assert ddl_on_every_partition(heads, protocol) == [], topic
        assert watermarks_on_every_partition(heads) == [], topic
        assert commit_ts_order_violations(heads) == [], topic
        if protocol == "simple":
            assert bootstrap_violations(heads) == [], topic
    # format("ticdc-kafka") yields exactly the rows our decoders found in the topics (which equal upstream)
    from sparkcdc.pipeline.kafka_source import register

    register(spark)
    for topic, partitions in topics.items():
        df = spark.read.format("ticdc-kafka").options(**{k: str(v) for k, v in decode_options.items()})
        read = Counter(row_key(r) for r in df.load(f"kafka://{apache_kafka.bootstrap}/{topic}?{params}").collect())
        assert read == decoded_rows(partitions, protocol, decode_options), topic


def test_kafka_changefeed_errors_are_clear_and_secret_free(
    fresh_db: FreshDatabase, spark_server: SparkServer, apache_kafka: ApacheKafka, tmp_path: Path
) -> None:
    """An oversized row with large-message-handle-option none fails the changefeed with TiCDC's code; a changefeed
    whose SASL login cannot work is refused at create, as TiCDC refuses it, in one line; its password appears
    nowhere: not in the CLI's answer, the API or the log."""
    db = fresh_db
    db.execute("CREATE TABLE big (id INT PRIMARY KEY, v TEXT)")
    secret = "hunter2-kafka-secret"
    server = spark_server
    cfg = tmp_path / "cf.toml"
    cfg.write_text(f'[filter]\nrules = ["{db.name}.*"]\n')
    big = f"kafka://{apache_kafka.bootstrap}/{db.name}-big?protocol=simple&max-message-bytes=4096"
    created = server.cli("create", "--sink-uri", big, "--changefeed-id", "cf-big", "--config", str(cfg))
    assert created.returncode == 0, created.stderr + created.stdout
    sasl = (f"kafka://{apache_kafka.bootstrap}/{db.name}-sasl?protocol=simple&sasl-mechanism=plain"
            f"&sasl-user=cdc&sasl-password={secret}&dial-timeout=2s")  # fmt: skip
    refused = server.cli("create", "--sink-uri", sasl, "--changefeed-id", "cf-sasl", "--config", str(cfg))
    assert refused.returncode != 0 and "Traceback" not in refused.stderr, refused.stderr
    assert f"[CDC:ErrKafkaNewProducer] cannot reach the Kafka cluster at {apache_kafka.bootstrap}" in (
        refused.stderr.strip().splitlines()[-1]), refused.stderr  # fmt: skip
    db.execute("INSERT INTO big VALUES (1, 'small')", "INSERT INTO big VALUES (2, REPEAT('x', 6000))")
    deadline = time.monotonic() + 120
    while (state := server.changefeed("cf-big"))["state"] != "failed":
        assert time.monotonic() < deadline, state
        time.sleep(0.3)
    assert state["error"]["code"] == "CDC:ErrMessageTooLarge", state
    assert "max-message-bytes" in state["error"]["message"]
    shown = [server.cli(*args) for args in (("list",), ("query", "-c", "cf-big"))]
    assert all(r.returncode == 0 for r in shown), shown
    assert [cf["id"] for cf in json.loads(shown[0].stdout)] == ["cf-big"]  # nothing was created for cf-sasl
    texts = [refused.stdout + refused.stderr] + [r.stdout + r.stderr for r in shown]
    texts.append(server.log.read_text() + (server.root / "server.out").read_text())
    assert not [t for t in texts if secret in t]
