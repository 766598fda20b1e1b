"""The Kafka sink's executor and driver parts against the real broker, without Spark: large-message handling
(handle-key-only, claim-check, none), delivery failures, topic rules."""

from __future__ import annotations

import socket
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.codec.base import Message, message_decoder
from sparkcdc.codec.canal_json.config import CanalJsonConfig
from sparkcdc.codec.canal_json.decoder import CanalJsonMessageDecoder
from sparkcdc.codec.large_message import claim_check_value
from sparkcdc.codec.simple.config import SimpleConfig
from sparkcdc.codec.simple.decoder import SimpleDecoder
from sparkcdc.devtools.apache_kafka import ApacheKafka
from sparkcdc.devtools.kafka import read_topic
from sparkcdc.errors import ConfigError, EncodeError, KafkaError
from sparkcdc.model import ColumnInfo, IndexInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.table import with_handle_keys
from sparkcdc.sink.base import Routed, SinkContext, check_sink, sink_config, sink_for
from sparkcdc.storage.external import ExternalStorage

pytestmark = pytest.mark.integration

_INDEXES = (IndexInfo("PRIMARY", ("id",), primary=True, unique=True),)
T = TableInfo("db", "big", 9, with_handle_keys((ColumnInfo("id", "int", nullable=False), ColumnInfo("v", "text")),
                                               _INDEXES), _INDEXES, 900)  # fmt: skip
BIG = "x" * 6000
TS = 450_000_000_000_000_000


def partition_ids(broker: ApacheKafka, topic: str) -> list[int]:
    """The partition ids of ``topic`` as the cluster lists them."""
    from confluent_kafka.admin import AdminClient

    return list(AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(topic, timeout=10).topics[topic]
                .partitions)  # fmt: skip


def rows() -> list[RowChange]:
    return [RowChange(TS, T, RowOp.INSERT, None, (1, "small")), RowChange(TS, T, RowOp.INSERT, None, (2, BIG))]


class Sink:
    """One changefeed's sink parts on a topic of its own."""

    def __init__(self, broker: ApacheKafka, tmp_path: Path, topic: str, query: str, toml: Any = None) -> None:
        self.uri = f"kafka://{broker.bootstrap}/{topic}?{query}"
        self.topic = topic
        self.sink = sink_for(self.uri)
        self.config = sink_config(self.uri, toml or {})
        self.ctx = SinkContext(f"default/{topic}", 0, str(tmp_path))

    def send(self, batch: Sequence[RowChange]) -> Any:
        payloads = list(self.sink.encoder(self.config, self.ctx).encode(batch))
        routed = [Routed("db", "big", 900, 9, TS, i, p.nrows, p.data, T) for i, p in enumerate(payloads)]
        result = self.sink.writer(self.config, self.ctx).write(routed)
        committer = self.sink.committer(self.config, self.ctx)
        committer.commit([result], [])
        committer.checkpoint(TS)
        return result

    def messages(self, broker: ApacheKafka) -> list[Message]:
        return [m for part in read_topic(broker.bootstrap, self.topic).values() for m in part]


PROTOCOLS = {"canal-json": "protocol=canal-json&enable-tidb-extension=true", "simple": "protocol=simple"}


def decoder(protocol: str, **kw: Any) -> Any:
    if protocol == "canal-json":
        return CanalJsonMessageDecoder(CanalJsonConfig(enable_tidb_extension=True), **kw)
    return SimpleDecoder(SimpleConfig(), **kw)


def decoded_rows(protocol: str, messages: list[Message], **kw: Any) -> dict[Any, RowChange]:
    dec = decoder(protocol, **kw)
    out = {}
    for m in messages:
        for ev in dec.decode(m):
            if isinstance(ev, RowChange):
                out[ev.after[0] if ev.after else None] = ev
    return out


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_handle_key_only_sends_only_the_key_of_an_oversized_row(
    protocol: str, apache_kafka: ApacheKafka, tmp_path: Path
) -> None:
    handling = {"large-message-handle": {"large-message-handle-option": "handle-key-only"}}
    sink = Sink(apache_kafka, tmp_path, f"hko-{protocol}", PROTOCOLS[protocol] + "&max-message-bytes=4096",
                {"sink": {"kafka-config": handling}})
    sink.send(rows())
    messages = sink.messages(apache_kafka)
    assert all(len(m.value) < 4096 for m in messages)
    flagged = [m for m in messages if b'"onlyHandleKey":true' in m.value or b'"handleKeyOnly":true' in m.value]
    assert len(flagged) == 1 and BIG.encode() not in flagged[0].value
    got = decoded_rows(protocol, messages, allow_handle_key_only=True)
    assert got[1].after is not None and got[1].after[1] == "small"
    assert got[2].after is not None and got[2].after[0] == 2 and BIG not in got[2].after
    with pytest.raises(Exception, match=r"(?i)handle.key"):
        decoded_rows(protocol, messages)  # a consumer that cannot look the row up is told so


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_claim_check_file_holds_the_original_message(protocol: str, apache_kafka: ApacheKafka, tmp_path: Path) -> None:
    store = f"file://{tmp_path / 'claims'}"
    sink = Sink(apache_kafka, tmp_path, f"cc-{protocol}", PROTOCOLS[protocol] + "&max-message-bytes=4096",
                {"sink": {"kafka-config": {"large-message-handle": {
                    "large-message-handle-option": "claim-check", "claim-check-storage-uri": store}}}})  # fmt: skip
    sink.send(rows())
    messages = sink.messages(apache_kafka)
    storage = ExternalStorage.from_uri(store)
    [name] = storage.list()
    assert name.endswith(".json")
    [claim] = [m for m in messages if b"claimCheckLocation" in m.value]
    assert f"{store}/{name}".encode() in claim.value and BIG.encode() not in claim.value
    original = claim_check_value(storage.read(name) or b"", name)
    dec = decoder(protocol)
    for m in messages:  # simple: the schema comes from the topic's BOOTSTRAP
        if b'"type":"BOOTSTRAP"' in m.value:
            list(dec.decode(m))
    [full] = list(dec.decode(Message(None, original)))  # the file alone is the full message
    assert isinstance(full, RowChange) and full.after == (2, BIG)
    got = decoded_rows(protocol, messages, claim_check_reader=storage.read)
    assert got[2].after == (2, BIG) and got[1].after == (1, "small")


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_an_oversized_row_without_handling_fails_with_ticdcs_code(
    protocol: str, apache_kafka: ApacheKafka, tmp_path: Path
) -> None:
    sink = Sink(apache_kafka, tmp_path, f"none-{protocol}", PROTOCOLS[protocol] + "&max-message-bytes=4096")
    with pytest.raises(EncodeError) as e:
        sink.send(rows())
    assert e.value.code == "CDC:ErrMessageTooLarge" and "max-message-bytes" in e.value.message
    assert not e.value.retryable


def test_an_unacknowledged_batch_fails_and_the_next_one_succeeds(apache_kafka: ApacheKafka, tmp_path: Path) -> None:
    sink = Sink(apache_kafka, tmp_path, "paused", PROTOCOLS["simple"] + "&write-timeout=2s&read-timeout=2s")
    sink.send(rows()[:1])  # topic created, producer connected
    apache_kafka.pause()
    try:
        started = time.monotonic()
        with pytest.raises(KafkaError) as e:
            sink.send(rows()[:1])
        waited = time.monotonic() - started
    finally:
        apache_kafka.resume()
    assert e.value.retryable and "acknowledged" in e.value.message and waited < 30
    sink.send(rows()[:1])  # a fresh producer after the failure
    assert any(b'"small"' in m.value for m in sink.messages(apache_kafka))


def test_topic_rules(apache_kafka: ApacheKafka, tmp_path: Path) -> None:
    missing = Sink(apache_kafka, tmp_path, "never-created", PROTOCOLS["simple"] + "&auto-create-topic=false")
    with pytest.raises(ConfigError) as e:
        missing.send(rows()[:1])
    assert e.value.code == "CDC:ErrKafkaTopicNotExists" and "auto-create-topic" in e.value.message
    Sink(apache_kafka, tmp_path, "two", PROTOCOLS["simple"] + "&partition-num=2").send(rows()[:1])
    assert len(read_topic(apache_kafka.bootstrap, "two")) == 2  # created with partition-num partitions
    too_many = Sink(apache_kafka, tmp_path, "two", PROTOCOLS["simple"] + "&partition-num=5")
    with pytest.raises(ConfigError) as e:
        too_many.send(rows()[:1])
    assert e.value.code == "CDC:ErrKafkaInvalidPartitionNum"


def test_the_create_time_check_reaches_the_cluster_and_creates_the_default_topic(apache_kafka: ApacheKafka) -> None:
    uri = f"kafka://{apache_kafka.bootstrap}/checked?{PROTOCOLS['simple']}&partition-num=2"
    check_sink(uri)
    assert sorted(partition_ids(apache_kafka, "checked")) == [0, 1]  # created with partition-num partitions
    check_sink(uri)  # the topic exists now: checked, left as it is
    with pytest.raises(ConfigError) as e:
        check_sink(f"kafka://{apache_kafka.bootstrap}/checked?{PROTOCOLS['simple']}&partition-num=4")
    assert e.value.code == "CDC:ErrKafkaInvalidPartitionNum"
    with pytest.raises(ConfigError) as e:
        check_sink(f"kafka://{apache_kafka.bootstrap}/never?{PROTOCOLS['simple']}&auto-create-topic=false")
    assert e.value.code == "CDC:ErrKafkaTopicNotExists"


@pytest.mark.exclusive  # dial-timeout bounds the time
def test_the_create_time_check_names_a_cluster_nobody_answers_for_in_one_line() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(ConfigError) as e:
        check_sink(f"kafka://127.0.0.1:{port}/t?protocol=simple&dial-timeout=2s")
    assert time.monotonic() - started < 8  # dial-timeout bounds the wait
    assert e.value.code == "CDC:ErrKafkaNewProducer"
    assert f"cannot reach the Kafka cluster at 127.0.0.1:{port}" in e.value.message and "\n" not in e.value.message


def test_simple_protocol_decodes_only_after_the_bootstrap(apache_kafka: ApacheKafka, tmp_path: Path) -> None:
    sink = Sink(apache_kafka, tmp_path, "boot", PROTOCOLS["simple"] + "&partition-num=3")
    sink.send(rows()[:1])
    parts = read_topic(apache_kafka.bootstrap, "boot")
    for messages in parts.values():  # BOOTSTRAP on every partition first, the watermark last
        assert messages[0].value.startswith(b'{"version":1,"type":"BOOTSTRAP"')
        assert b'"type":"WATERMARK"' in messages[-1].value
    assert message_decoder("simple", {}) is not None


def test_all_bootstraps_at_start(apache_kafka: ApacheKafka, tmp_path: Path) -> None:
    quiet = T.__class__("db", "quiet", 10, T.columns, T.indexes, 901)  # a table without rows
    toml = {"sink": {"send-all-bootstrap-at-start": True,
                     "dispatchers": [{"matcher": ["db.*"], "topic": "start_{table}"}]}}  # fmt: skip
    sink = Sink(apache_kafka, tmp_path, "start-default", PROTOCOLS["simple"] + "&partition-num=2", toml)
    sink.sink.committer(sink.config, sink.ctx).start(lambda: [T, quiet])
    for topic, name in (("start_big", "big"), ("start_quiet", "quiet")):
        for messages in read_topic(apache_kafka.bootstrap, topic).values():
            [boot] = messages
            assert boot.value.startswith(b'{"version":1,"type":"BOOTSTRAP"')
            assert f'"table":"{name}"'.encode() in boot.value
    off = Sink(apache_kafka, tmp_path, "start-off", PROTOCOLS["simple"])
    off.sink.committer(off.config, off.ctx).start(lambda: pytest.fail("tables read without the option"))


def test_a_table_that_stopped_changing_is_announced_again_by_the_drivers_ticker(
    apache_kafka: ApacheKafka, tmp_path: Path
) -> None:
    """TiCDC's bootstrap ticker: a table with no new rows still gets a BOOTSTRAP every interval, at a batch commit
    without rows, before that batch's watermark (a consumer joining mid-stream needs it), from a new committer
    (the schedule is on disk); the writer's own BOOTSTRAP counts, so none is sent twice in one interval."""
    sink = Sink(apache_kafka, tmp_path, "tick", PROTOCOLS["simple"] + "&partition-num=2",
                {"sink": {"send-bootstrap-interval-in-sec": 3}})  # fmt: skip
    sink.send(rows()[:1])  # the writer announces the table before its first row

    def batch_without_rows(ts: int) -> None:
        committer = sink.sink.committer(sink.config, sink.ctx)
        committer.commit([], [])
        committer.checkpoint(ts)

    batch_without_rows(TS + 1)  # within the interval: no BOOTSTRAP
    time.sleep(3.1)
    batch_without_rows(TS + 2)  # interval passed: the ticker's BOOTSTRAP, then the watermark
    for messages in read_topic(apache_kafka.bootstrap, "tick").values():
        kinds = [m.value.split(b'"type":"', 1)[1].split(b'"', 1)[0].decode() for m in messages]
        assert kinds[0] == "BOOTSTRAP" and kinds[-3:] == ["WATERMARK", "BOOTSTRAP", "WATERMARK"], kinds
        assert kinds.count("BOOTSTRAP") == 2, kinds
        assert b'"table":"big"' in messages[-2].value
