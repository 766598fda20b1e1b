"""protocol=avro on the Kafka sink: what is accepted (TiCDC's precedence: the URI beats [sink] and the codec
config), what reaches the codec, and that the registry's password is never shown."""

from __future__ import annotations

import logging

import pytest

from sparkcdc.codec.avro.config import AvroConfig
from sparkcdc.sink.kafka.config import KafkaSinkConfig

PER_TABLE = {"dispatchers": [{"matcher": ["*.*"], "topic": "tidb_{schema}_{table}"}]}


def test_registry_from_the_flag_or_the_uri_and_the_codec_options() -> None:
    toml = {"sink": {**PER_TABLE, "schema-registry": "http://from-flag:8081"}}
    cfg = KafkaSinkConfig.from_uri("kafka://h:9092/t?protocol=avro", {"sink": toml["sink"]})
    assert cfg.schema_registry == "http://from-flag:8081"
    uri = "kafka://h:9092/t?protocol=avro&schema-registry=https://cdc:hunter2@reg:8081&enable-tidb-extension=true"
    cfg = KafkaSinkConfig.from_uri(uri, {"sink": {**toml["sink"], "kafka-config": {"codec-config": {
        "avro-decimal-handling-mode": "string", "avro-bigint-unsigned-handling-mode": "string",
        "avro-enable-watermark": True}}}})  # fmt: skip
    assert cfg.schema_registry == "https://cdc:hunter2@reg:8081"  # the URI wins
    assert "hunter2" not in repr(cfg) and "hunter2" not in str(cfg.uri)
    codec = AvroConfig.from_options(cfg.codec_options())
    assert (codec.decimal_handling_mode, codec.bigint_unsigned_handling_mode) == ("string", "string")
    assert codec.enable_tidb_extension and codec.watermarks


def test_watermarks_need_the_extension_and_flat_avro_is_avro() -> None:
    cfg = KafkaSinkConfig.from_uri("kafka://h:9092/t?protocol=flat-avro&schema-registry=http://r:1"
                                   "&avro-enable-watermark=true")  # fmt: skip
    assert cfg.protocol == "avro" and not cfg.avro_enable_watermark


def test_hard_coded_topics_pass_as_in_ticdc_and_avro_keys_warn_with_other_protocols(
    caplog: pytest.LogCaptureFixture,
) -> None:
    toml = {"sink": {"dispatchers": [{"matcher": ["db.t"], "topic": "one-table"}]}}
    assert KafkaSinkConfig.from_uri("kafka://h:9092/t?protocol=avro&schema-registry=http://r:1", toml).dispatch_rules
    with caplog.at_level(logging.WARNING):
        KafkaSinkConfig.from_uri("kafka://h:9092/t?protocol=simple&avro-decimal-handling-mode=string")
    assert "avro-decimal-handling-mode in sink URI has no effect with protocol simple" in caplog.text
