"""Malformed Kafka sink URIs and configs: each gives one ConfigError line with TiCDC's code that names the problem,
and never shows a secret (the URIs carry a SASL password, the TOMLs an OAuth secret)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from sparkcdc.errors import ConfigError
from sparkcdc.sink.kafka.config import KafkaSinkConfig

SECRET = "s3cr3tPW"
AUTH = f"&sasl-mechanism=plain&sasl-user=u&sasl-password={SECRET}"
H = "kafka://127.0.0.1:9092/topic?protocol=simple" + AUTH
C = "kafka://127.0.0.1:9092/topic?protocol=canal-json" + AUTH
URI_ERR, KAFKA_ERR, PROTO_ERR = "CDC:ErrSinkURIInvalid", "CDC:ErrKafkaInvalidConfig", "CDC:ErrSinkUnknownProtocol"
CODEC_ERR, REPLICA_ERR, SINK_ERR = (
    "CDC:ErrCodecInvalidConfig",
    "CDC:ErrInvalidReplicaConfig",
    "CDC:ErrSinkInvalidConfig",
)


def kc(table: dict[str, Any]) -> dict[str, Any]:
    return {"sink": {"kafka-config": table}}


# (uri, toml, code, text the message must contain)
CASES: list[tuple[str, dict[str, Any] | None, str, str]] = [
    ("", None, URI_ERR, "sink URI is empty"),
    (" " + H, None, URI_ERR, "leading or trailing whitespace"),
    ("127.0.0.1:9092/topic?sasl-password=" + SECRET, None, URI_ERR, "has no scheme"),
    ("kafkaa://127.0.0.1:9092/t?protocol=simple" + AUTH, None, URI_ERR, "use kafka:// or kafka+ssl://"),
    (f"kafka://u:{SECRET}@127.0.0.1:9092/t?protocol=simple", None, URI_ERR, "must not carry user:password@"),
    ("kafka:///t?protocol=simple" + AUTH, None, URI_ERR, "names no broker"),
    ("kafka://broker/t?protocol=simple" + AUTH, None, URI_ERR, "'broker' in sink URI"),
    ("kafka://h:99999/t?protocol=simple" + AUTH, None, URI_ERR, "'h:99999'"),
    ("kafka://h:1,/t?protocol=simple" + AUTH, None, URI_ERR, "broker address ''"),
    ("kafka://h:1/?protocol=simple" + AUTH, None, KAFKA_ERR, "no topic is specified"),
    ("kafka://h:1/a/b?protocol=simple" + AUTH, None, KAFKA_ERR, "sink URI topic 'a/b' contains '/'"),
    ("kafka://h:1/t?protocol=simple" + AUTH + "#frag", None, URI_ERR, "#fragment"),
    (H + "&protocol=canal-json", None, URI_ERR, "'protocol' is given more than once"),
    (H + "&partitions=3", None, URI_ERR, "unknown kafka sink URI parameter 'partitions'"),
    (H + "&=x", None, URI_ERR, "empty name"),
    (H + "&bad", None, URI_ERR, "malformed query"),
    ("kafka://h:1/t?sasl-password=" + SECRET, None, PROTO_ERR, "protocol is required"),
    ("kafka://h:1/t?protocol=craft" + AUTH, None, PROTO_ERR, "protocol 'craft' is not supported"),
    ("kafka://h:1/t?protocol=open-protocol" + AUTH, None, PROTO_ERR, "protocol 'open-protocol' is not supported"),
    ("kafka://h:1/t?protocol=protobuf" + AUTH, None, PROTO_ERR, "unknown protocol 'protobuf'"),
    (H + "&partition-num=0", None, "CDC:ErrKafkaInvalidPartitionNum", "partition-num '0'"),
    (H + "&partition-num=abc", None, "CDC:ErrKafkaInvalidPartitionNum", "partition-num 'abc' in sink URI"),
    (H + "&partition-num=99999999999", None, "CDC:ErrKafkaInvalidPartitionNum", "out of range"),
    (H + "&replication-factor=0", None, KAFKA_ERR, "replication-factor '0'"),
    (H + "&replication-factor=40000", None, KAFKA_ERR, "replication-factor '40000' in sink URI: out of range"),
    (H + "&kafka-version=2.6", None, "CDC:ErrKafkaInvalidVersion", "kafka-version '2.6'"),
    (H + "&max-message-bytes=0", None, CODEC_ERR, "max-message-bytes '0'"),
    (H + "&max-batch-size=-1", None, CODEC_ERR, "max-batch-size '-1'"),
    (H + "&compression=brotli", None, KAFKA_ERR, "compression 'brotli' in sink URI: use one of: none, gzip"),
    (H + "&kafka-client-id=^invalid$", None, "CDC:ErrKafkaInvalidClientID", "kafka-client-id '^invalid$'"),
    (H + "&auto-create-topic=yes", None, KAFKA_ERR, "auto-create-topic 'yes' in sink URI: use true or false"),
    (H + "&dial-timeout=10", None, KAFKA_ERR, "dial-timeout '10' in sink URI: not a Go duration"),
    (H + "&read-timeout=-1s", None, KAFKA_ERR, "read-timeout '-1s' in sink URI: must be greater than 0"),
    (H + "&required-acks=3", None, "CDC:ErrKafkaInvalidRequiredAcks", "required-acks '3'"),
    (H + "&required-acks=all", None, "CDC:ErrKafkaInvalidRequiredAcks", "must be an integer"),
    ("kafka://h:1/t?protocol=simple&sasl-mechanism=kerberos&sasl-password=" + SECRET, None, KAFKA_ERR,
     "sasl-mechanism 'kerberos'"),
    ("kafka://h:1/t?protocol=simple&sasl-mechanism=plain&sasl-password=" + SECRET, None, KAFKA_ERR,
     "needs both sasl-user and sasl-password"),
    ("kafka://h:1/t?protocol=simple&sasl-password=" + SECRET, None, KAFKA_ERR, "without sasl-mechanism"),
    (H + "&ca=ca.pem", None, KAFKA_ERR, "ca, cert and key files should all be supplied"),
    (H + "&ca=a&cert=b&key=c&enable-tls=false", None, KAFKA_ERR, "'enable-tls' is set to false"),
    (H + "&enable-tls=maybe", None, KAFKA_ERR, "enable-tls 'maybe'"),
    (H + "&encoding-format=protobuf", None, CODEC_ERR, "encoding-format 'protobuf' in sink URI: use one of"),
    (C + "&enable-tidb-extension=2", None, CODEC_ERR, "enable-tidb-extension '2'"),
    (H + "&transaction-atomicity=table", None, URI_ERR, "table level atomicity is not supported"),
    (H, {"sink": {"protocl": "simple"}}, REPLICA_ERR, "unknown key 'protocl' in [sink]"),
    (H, kc({"partition-number": 3}), REPLICA_ERR, "unknown key 'partition-number' in [sink.kafka-config]"),
    (H, kc({"codec-config": {"encoding": "avro"}}), REPLICA_ERR, "'encoding' in [sink.kafka-config.codec-config]"),
    (H, kc({"max-retry": 3}), REPLICA_ERR, "unknown key 'max-retry' in [sink.kafka-config]"),
    (H, kc({"large-message-handle": {"large-message-handle-option": "compress"}}), REPLICA_ERR,
     "large-message-handle-option 'compress'"),
    (H, kc({"large-message-handle": {"large-message-handle-option": "claim-check"}}), REPLICA_ERR,
     "claim-check-storage-uri is empty"),
    (H, kc({"large-message-handle": {"large-message-handle-option": "claim-check",
                                     "claim-check-storage-uri": "bucket/path"}}), REPLICA_ERR,
     "claim-check-storage-uri 'bucket/path'"),
    (C, kc({"large-message-handle": {"large-message-handle-option": "handle-key-only"}}), REPLICA_ERR,
     "enable-tidb-extension is false"),
    (H, kc({"large-message-handle": {"large-message-handle-compression": "zstd"}}), REPLICA_ERR,
     "large-message-handle-compression 'zstd'"),
    (H, kc({"large-message-handle": {"large-message-handle-compression": "lz4"}}), SINK_ERR,
     "not supported by sparkcdc"),
    (H, {"sink": {"dispatchers": [{"matcher": ["*.*"], "topic": "{table}_{schema}"}]}},
     "CDC:ErrKafkaTopicExprInvalid", "invalid topic expression '{table}_{schema}'"),
    (H, {"sink": {"dispatchers": [{"matcher": ["db.t.x"], "partition": "ts"}]}}, "CDC:ErrFilterRuleInvalid",
     "invalid filter rule 'db.t.x'"),
    (H, {"sink": {"dispatchers": [{"matcher": ["*.*"], "dispatcher": "ts", "partition": "table"}]}}, SINK_ERR,
     "cannot be configured both"),
    (H, {"sink": {"column-selectors": [{"matcher": ["*.*"], "columns": ["a%b"]}]}}, "CDC:ErrFilterRuleInvalid",
     "unexpected special character '%'"),
    (H, {"sink": "kafka"}, REPLICA_ERR, "key 'sink' must be a table"),
    (H, kc({"sasl-mechanism": "oauthbearer", "sasl-oauth-client-id": "c", "sasl-oauth-token-url": "https://i/t",
            "sasl-oauth-client-secret": SECRET + "!"}), KAFKA_ERR, "not base64 encoded"),
    ("kafka://h:1/t?protocol=simple", kc({"sasl-oauth-client-id": "c"}), KAFKA_ERR, "set sasl-mechanism=oauthbearer"),
    (H, kc({"sasl-oauth-audience": "aud"}), KAFKA_ERR, "OAuth audience"),
    ("kafka://h:1/t?protocol=simple&sasl-mechanism=gssapi&sasl-gssapi-password=" + SECRET, None, KAFKA_ERR,
     "sasl-gssapi-auth-type=keytab"),
    ("kafka://h:1/t?protocol=simple&sasl-mechanism=gssapi&sasl-gssapi-auth-type=keytab"
     "&sasl-gssapi-keytab-path=/k&sasl-gssapi-kerberos-config-path=/etc/krb5.conf", None, KAFKA_ERR, "KRB5_CONFIG"),
    (H, {"sink": {"encoder-concurrency": -1}}, SINK_ERR, "encoder-concurrency '-1'"),
    (H, {"sink": {"send-bootstrap-in-msg-count": "many"}}, REPLICA_ERR, "send-bootstrap-in-msg-count 'many'"),
    (H, kc({"output-raw-change-event": "yes"}), REPLICA_ERR, "output-raw-change-event 'yes'"),
    (H, {"case-sensitive": "x"}, REPLICA_ERR, "case-sensitive 'x'"),
    (H, kc({"partition-num": True}), "CDC:ErrKafkaInvalidPartitionNum", "partition-num 'True' in [sink.kafka-config]"),
    # a TOML string is no number or boolean; TLS files and claim-check URIs are checked at create (issue 26)
    (H, kc({"partition-num": "3"}), "CDC:ErrKafkaInvalidPartitionNum",
     "partition-num '3' in [sink.kafka-config]: must be an integer; write it without quotes"),
    (H, kc({"auto-create-topic": "true"}), KAFKA_ERR,
     "auto-create-topic 'true' in [sink.kafka-config]: use true or false; write it without quotes"),
    (H + "&ca=/nonexistent/ca.pem&cert=/x&key=/y", None, KAFKA_ERR,
     "invalid ca '/nonexistent/ca.pem' in sink URI: no such"),
    (H, kc({"ca": "/tmp", "cert": "/tmp", "key": "/tmp"}), KAFKA_ERR,
     "invalid ca '/tmp' in [sink.kafka-config]: it is a"),
    (C + "&enable-tidb-extension=true", kc({"large-message-handle": {"large-message-handle-option": "claim-check",
                                                                     "claim-check-storage-uri": "foo://x"}}),
     REPLICA_ERR, "invalid claim-check-storage-uri 'foo://x' in [sink.kafka-config.large-message-handle]: unsupported"),
]  # fmt: skip


@pytest.mark.parametrize(("uri", "toml", "code", "text"), CASES, ids=[f"{i}-{c[3][:30]}" for i, c in enumerate(CASES)])
def test_malformed_config_gives_one_line_without_secrets(
    uri: str, toml: dict[str, Any] | None, code: str, text: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG), pytest.raises(ConfigError) as err:
        KafkaSinkConfig.from_uri(uri, toml)
    message = str(err.value)
    assert text in message
    assert err.value.code == code
    assert "\n" not in message
    assert SECRET not in message
    assert SECRET not in repr(err.value)
    assert all(SECRET not in r.getMessage() for r in caplog.records)


def test_there_are_more_than_thirty_cases() -> None:
    assert len(CASES) >= 30
    assert len({c[3] for c in CASES}) == len(CASES)
