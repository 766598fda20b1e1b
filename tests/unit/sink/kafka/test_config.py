"""KafkaSinkConfig: TiCDC's parameters and defaults, URI beating TOML, one-line errors without secrets, masking,
codec options and producer settings. Good-config cases follow tiflow ``pkg/sink/kafka/options_test.go``."""

from __future__ import annotations

import base64
import logging
import pickle
from typing import Any

import pytest

from sparkcdc.codec.base import message_encoder
from sparkcdc.errors import ConfigError
from sparkcdc.sink.kafka.config import KafkaSinkConfig
from sparkcdc.sink.kafka.dispatcher import DispatchRule
from sparkcdc.sink.kafka.limits import effective_max_message_bytes, resolve_partition_num
from tests.fixtures.tls import PemFiles

SECRET = "s3cr3tPW"
H = "kafka://127.0.0.1:9092/topic"
AUTH = f"&sasl-mechanism=plain&sasl-user=u&sasl-password={SECRET}"


def cfg(uri: str, toml: dict[str, Any] | None = None) -> KafkaSinkConfig:
    return KafkaSinkConfig.from_uri(uri, toml)


def test_defaults() -> None:
    c = cfg(H + "?protocol=canal-json")
    assert (c.protocol, c.topic, c.uri.brokers) == ("canal-json", "topic", ("127.0.0.1:9092",))
    assert (c.partition_num, c.replication_factor, c.kafka_version) == (0, 1, "2.4.0")
    assert (c.max_message_bytes, c.max_retry, c.max_batch_size) == (10 * 1024 * 1024, 5, 16)
    assert (c.compression, c.client_id, c.auto_create_topic, c.required_acks) == ("none", "", True, -1)
    assert (c.dial_timeout_ns, c.read_timeout_ns, c.write_timeout_ns) == (10**10, 10**10, 10**10)
    assert not c.sasl.enabled
    assert not c.tls.enabled
    assert (c.large_message_handle_option, c.output_raw_change_event, c.bootstrap_enabled) == ("none", False, False)
    assert c.dispatch_rules == ()


def test_ticdc_complete_options() -> None:
    c = cfg(
        "kafka://127.0.0.1:9092/kafka-test?protocol=canal-json&kafka-version=2.6.0&max-batch-size=5"
        "&max-message-bytes=4096&partition-num=1&replication-factor=3&max-retry=7&kafka-client-id=unit-test"
        "&auto-create-topic=false&compression=gzip&required-acks=1"
    )
    assert (c.partition_num, c.replication_factor, c.kafka_version, c.max_message_bytes) == (1, 3, "2.6.0", 4096)
    assert (c.max_retry, c.max_batch_size, c.client_id, c.auto_create_topic) == (7, 5, "unit-test", False)
    assert (c.compression, c.required_acks) == ("gzip", 1)
    multi = cfg("kafka://127.0.0.1:9092,127.0.0.1:9091,127.0.0.1:9090/kafka-test?protocol=simple")
    assert len(multi.uri.brokers) == 3
    assert multi.uri.bootstrap_servers == "127.0.0.1:9092,127.0.0.1:9091,127.0.0.1:9090"


def test_ticdc_max_retry_and_timeouts(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert cfg(H + "?protocol=simple&max-retry=-1").max_retry == 5
    assert any("max-retry -1" in r.getMessage() for r in caplog.records)
    assert cfg(H + "?protocol=simple&max-retry=0").max_retry == 0
    c = cfg(H + "?protocol=simple&dial-timeout=5s&read-timeout=1000ms&write-timeout=2m")
    assert (c.dial_timeout_ns, c.read_timeout_ns, c.write_timeout_ns) == (5 * 10**9, 10**9, 120 * 10**9)


TICDC_MERGE_TOML: dict[str, Any] = {
    "sink": {
        "kafka-config": {
            "partition-num": 12,
            "replication-factor": 5,
            "kafka-version": "3.1.2",
            "max-message-bytes": 1024 * 1024,
            "compression": "gzip",
            "kafka-client-id": "test-id",
            "auto-create-topic": True,
            "dial-timeout": "1m1s",
            "write-timeout": "2m1s",
            "required-acks": 1,
            "sasl-user": "abc",
            "sasl-password": "123",
            "sasl-mechanism": "plain",
            "sasl-gssapi-auth-type": "keytab",
            "sasl-gssapi-keytab-path": "SASLGssAPIKeytabPath",
            "sasl-gssapi-service-name": "service",
            "sasl-gssapi-user": "user",
            "sasl-gssapi-password": "pass",
            "sasl-gssapi-realm": "realm",
            "sasl-gssapi-disable-pafxfast": True,
            "enable-tls": True,
            "ca": "ca.pem",
            "cert": "cert.pem",
            "key": "key.pem",
        }
    }
}


def test_ticdc_merge_from_toml(pem: PemFiles) -> None:
    files = {"ca": pem.ca, "cert": pem.cert, "key": pem.key}  # the files are loaded: real ones
    toml = {"sink": {"kafka-config": {**TICDC_MERGE_TOML["sink"]["kafka-config"], **files}}}
    c = cfg("kafka://127.0.0.1:9092/prefix?protocol=canal-json", toml)
    assert (c.partition_num, c.replication_factor, c.kafka_version, c.max_message_bytes) == (12, 5, "3.1.2", 1 << 20)
    assert (c.compression, c.client_id, c.auto_create_topic, c.required_acks) == ("gzip", "test-id", True, 1)
    assert (c.dial_timeout_ns, c.write_timeout_ns) == (61 * 10**9, 121 * 10**9)
    assert (c.sasl.mechanism, c.sasl.user, c.sasl.password) == ("PLAIN", "abc", "123")
    assert (c.sasl.gssapi_auth_type, c.sasl.gssapi_keytab_path, c.sasl.gssapi_realm) == (
        "keytab",
        "SASLGssAPIKeytabPath",
        "realm",
    )
    assert c.sasl.gssapi_disable_pafxfast
    assert (c.tls.enabled, c.tls.ca, c.tls.cert, c.tls.key) == (True, pem.ca, pem.cert, pem.key)


def test_uri_beats_toml(caplog: pytest.LogCaptureFixture) -> None:
    toml = {
        "sink": {
            "protocol": "simple",
            "kafka-config": {
                "partition-num": 12,
                "compression": "gzip",
                "sasl-mechanism": "scram-sha-512",
                "sasl-user": "toml-user",
                "sasl-password": "toml-pass",
                "codec-config": {"enable-tidb-extension": True, "max-batch-size": 3},
            },
        }
    }
    with caplog.at_level(logging.WARNING):
        c = cfg(H + "?protocol=canal-json&partition-num=2&enable-tidb-extension=false&sasl-user=uri-user", toml)
    assert (c.protocol, c.partition_num, c.compression, c.enable_tidb_extension) == ("canal-json", 2, "gzip", False)
    assert (c.sasl.mechanism, c.sasl.user, c.sasl.password, c.max_batch_size) == (
        "SCRAM-SHA-512",
        "uri-user",
        "toml-pass",
        3,
    )
    assert any("overrides [sink] protocol" in r.getMessage() for r in caplog.records)
    assert all("toml-pass" not in r.getMessage() for r in caplog.records)


def test_simple_codec_options() -> None:
    toml = {
        "sink": {
            "send-bootstrap-interval-in-sec": 60,
            "send-bootstrap-in-msg-count": 100,
            "send-bootstrap-to-all-partition": False,
            "send-all-bootstrap-at-start": True,
            "kafka-config": {
                "max-message-bytes": 2048,
                "output-raw-change-event": True,
                "codec-config": {"encoding-format": "avro"},
                "large-message-handle": {
                    "large-message-handle-option": "claim-check",
                    "claim-check-storage-uri": "s3://bucket/cc?access-key=AK&secret-access-key=" + SECRET,
                    "claim-check-raw-value": True,
                },
            },
        }
    }
    c = cfg(H + "?protocol=simple", toml)
    assert c.bootstrap_enabled
    assert c.output_raw_change_event
    opts = c.codec_options(time_zone="Asia/Shanghai")
    assert opts["encoding-format"] == "avro"
    assert opts["max-message-bytes"] == 2048
    assert opts["large-message-handle-option"] == "claim-check"
    assert opts["claim-check-raw-value"] is True
    assert opts["send-bootstrap-to-all-partition"] is False
    assert opts["time-zone"] == "Asia/Shanghai"
    assert SECRET not in repr(c)
    assert message_encoder("simple", opts) is not None


def test_canal_json_codec_options() -> None:
    toml = {"sink": {"delete-only-output-handle-key-columns": True, "content-compatible": True}}
    c = cfg(H + "?protocol=canal-json&enable-tidb-extension=true", toml)
    assert c.codec_options() == {
        "enable-tidb-extension": True,
        "content-compatible": True,
        "only-output-updated-columns": False,
        "delete-only-output-handle-key-columns": True,
        "max-message-bytes": 10485760,
        "large-message-handle-option": "none",
        "large-message-handle-compression": "none",
        "claim-check-storage-uri": "",
        "claim-check-raw-value": False,
    }
    from sparkcdc.codec.base import message_encoder

    message_encoder("canal-json", c.codec_options())  # the codec accepts every option the sink passes


def test_bootstrap_is_simple_only_and_off_with_a_non_positive_setting() -> None:
    assert cfg(H + "?protocol=simple").bootstrap_enabled
    assert not cfg(H + "?protocol=canal-json").bootstrap_enabled
    assert not cfg(H + "?protocol=simple", {"sink": {"send-bootstrap-in-msg-count": 0}}).bootstrap_enabled
    assert not cfg(H + "?protocol=simple", {"sink": {"send-bootstrap-interval-in-sec": -1}}).bootstrap_enabled


def test_dispatchers_and_selectors_come_from_toml() -> None:
    toml = {
        "case-sensitive": True,
        "sink": {
            "dispatchers": [{"matcher": ["app.*"], "topic": "{schema}_{table}", "partition": "index-value"}],
            "column-selectors": [{"matcher": ["app.*"], "columns": ["*", "!secret"]}],
        },
    }
    c = cfg(H + "?protocol=simple", toml)
    assert c.dispatch_rules == (DispatchRule(("app.*",), "index-value", topic="{schema}_{table}"),)
    assert c.case_sensitive
    assert c.event_router().topic_for_table("app", "t") == "app_t"
    assert c.event_router().topic_for_table("APP", "t") == "topic"
    assert c.column_selectors().columns_for("app", "t") is not None


def test_producer_config() -> None:
    c = cfg(H + "?protocol=simple&compression=lz4&max-message-bytes=4096" + AUTH)
    p = c.producer_config(client_id="cid")
    assert p["bootstrap.servers"] == "127.0.0.1:9092"
    assert (p["client.id"], p["acks"], p["enable.idempotence"], p["compression.type"]) == ("cid", "all", True, "lz4")
    assert p["batch.size"] == 4096
    assert p["message.max.bytes"] > 4096
    assert (p["security.protocol"], p["sasl.mechanism"], p["sasl.username"]) == ("SASL_PLAINTEXT", "PLAIN", "u")
    assert p["sasl.password"] == SECRET
    assert p["socket.connection.setup.timeout.ms"] == 10000
    one = cfg(H + "?protocol=simple&required-acks=1&max-retry=2").producer_config()
    assert (one["acks"], one["enable.idempotence"], one["max.in.flight.requests.per.connection"]) == ("1", False, 1)
    assert one["retries"] == 2
    over = cfg(H + "?protocol=simple").producer_config(overrides={"linger.ms": 0})
    assert over["linger.ms"] == 0
    assert over["security.protocol"] == "PLAINTEXT"


def test_producer_tls_settings(pem: PemFiles) -> None:
    c = cfg(H + f"?protocol=simple&ca={pem.ca}&cert={pem.cert}&key={pem.key}&insecure-skip-verify=true")
    p = c.producer_config()
    assert p["security.protocol"] == "SSL"
    assert (p["ssl.ca.location"], p["ssl.certificate.location"], p["ssl.key.location"]) == (pem.ca, pem.cert, pem.key)
    assert p["enable.ssl.certificate.verification"] is False
    assert cfg(H + "?protocol=simple&enable-tls=true").producer_config()["security.protocol"] == "SSL"
    plain = cfg(H + "?protocol=simple&insecure-skip-verify=true")
    assert not plain.tls.insecure_skip_verify  # only counts with TLS on, as in TiCDC
    both = cfg(H + "?protocol=simple&enable-tls=true" + AUTH).producer_config()
    assert both["security.protocol"] == "SASL_SSL"


def test_oauth_settings() -> None:
    secret = base64.b64encode(b"oauth-" + SECRET.encode()).decode()
    toml = {
        "sink": {
            "kafka-config": {
                "sasl-mechanism": "OAUTHBEARER",
                "sasl-oauth-client-id": "client",
                "sasl-oauth-client-secret": secret,
                "sasl-oauth-token-url": "https://idp.example/token",
                "sasl-oauth-scopes": ["a", "b"],
                "sasl-oauth-grant-type": "client_credentials",
            }
        }
    }
    c = cfg(H + "?protocol=simple", toml)
    p = c.producer_config()
    assert p["sasl.oauthbearer.client.secret"] == "oauth-" + SECRET
    assert (p["sasl.oauthbearer.method"], p["sasl.oauthbearer.scope"]) == ("oidc", "a b")
    assert SECRET not in repr(c)
    assert SECRET not in str(c.sasl)


@pytest.mark.parametrize(
    ("addr", "changefeed", "configured", "expected"),
    [  # tiflow options_test.go TestClientID
        ("domain:1234", "123-121-121-121", "", "TiCDC_producer_domain_1234_default_123-121-121-121"),
        ("127.0.0.1:1234", "123-121-121-121", "", "TiCDC_producer_127.0.0.1_1234_default_123-121-121-121"),
        ('127.0.0.1:1234?:,"', "123-121-121-121", "", "TiCDC_producer_127.0.0.1_1234_____default_123-121-121-121"),
        ("中文", "123-121-121-121", "", None),
        ("127.0.0.1:1234", "123-121-121-121", "cdc-changefeed-1", "cdc-changefeed-1"),
    ],
)
def test_ticdc_client_ids(addr: str, changefeed: str, configured: str, expected: str | None) -> None:
    c = cfg(H + "?protocol=simple" + (f"&kafka-client-id={configured}" if configured else ""))
    if expected is None:
        with pytest.raises(ConfigError) as err:
            c.kafka_client_id(addr, "default", changefeed)
        assert err.value.code == "CDC:ErrKafkaInvalidClientID"
    else:
        assert c.kafka_client_id(addr, "default", changefeed) == expected


def test_masking_everywhere(pem: PemFiles) -> None:
    toml = {"sink": {"kafka-config": {"sasl-gssapi-password": "gss" + SECRET}}}
    c = cfg(H + f"?protocol=simple&ca={pem.ca}&cert={pem.cert}&key={pem.key}" + AUTH, toml)
    for text in (repr(c), str(c), repr(c.uri), str(c.uri), repr(c.sasl), repr(c.tls)):
        assert SECRET not in text
        assert pem.key not in text
    assert "sasl-password=xxxxx" in str(c.uri)
    assert "sasl-user=u" in str(c.uri)  # not a secret
    assert "sasl-mechanism=plain" in str(c.uri)
    assert pickle.loads(pickle.dumps(c)) == c


def test_limits() -> None:
    # tiflow options_test.go TestSetPartitionNum
    assert resolve_partition_num(0, 2) == 2
    assert resolve_partition_num(1, 2) == 1
    with pytest.raises(ConfigError) as err:
        resolve_partition_num(3, 2)
    assert err.value.code == "CDC:ErrKafkaInvalidPartitionNum"
    assert resolve_partition_num(0, None) == 3
    assert resolve_partition_num(5, None) == 5
    assert effective_max_message_bytes(10 << 20, 1 << 20) == (1 << 20) - 128
    assert effective_max_message_bytes(4096, 1 << 20) == 4096
