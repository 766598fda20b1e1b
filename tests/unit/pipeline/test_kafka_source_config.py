"""format("ticdc-kafka")'s options: one validating constructor, one-line errors naming what is wrong."""

from __future__ import annotations

import pickle

import pytest

from sparkcdc.errors import ConfigError
from sparkcdc.pipeline.kafka_source import EARLIEST, LATEST, KafkaSourceConfig


def cfg(path: str = "kafka://127.0.0.1:9092/cdc?protocol=simple", **options: str) -> KafkaSourceConfig:
    return KafkaSourceConfig.from_options({"path": path, **options})


def test_the_path_is_a_sink_uri_and_options_fill_in_its_codec_parameters() -> None:
    c = cfg("kafka://127.0.0.1:9092,127.0.0.2:9093/cdc", protocol="simple", **{"encoding-format": "avro"})
    assert (c.topic, c.protocol, c.sink.encoding_format) == ("cdc", "simple", "avro")
    assert c.starting == {-1: EARLIEST} and not c.up_to_watermark and not c.skip_undecodable
    assert c.consumer_settings()["bootstrap.servers"] == "127.0.0.1:9092,127.0.0.2:9093"
    canal = cfg("kafka://h:9092/t?protocol=canal-json", **{"enable-tidb-extension": "true", "up-to-watermark": "1"})
    assert canal.protocol == "canal-json" and canal.up_to_watermark
    assert type(canal.decoder()).__name__ == "CanalJsonMessageDecoder"
    cc = cfg(**{"claim-check-storage-uri": "file:///tmp/cc", "skip-undecodable": "true"})
    assert cc.sink.claim_check_storage_uri == "file:///tmp/cc" and cc.decoder()._drop_undecodable
    assert pickle.loads(pickle.dumps(cc)) == cc


def test_plain_canal_json_is_accepted_as_ticdcs_consumer_accepts_it() -> None:
    """Without the TiDB extension (no commit-ts, no watermarks), as TiCDC's consumer accepts it; the decoder
    checks that the messages say the same (``check_extension``)."""
    plain = cfg("kafka://h:9092/t?protocol=canal-json")
    assert plain.protocol == "canal-json" and not plain.sink.enable_tidb_extension
    assert plain.decoder()._check_extension and not plain.decoder().config.enable_tidb_extension
    assert cfg("kafka://h:9092/t?protocol=canal-json&enable-tidb-extension=true").decoder().config.enable_tidb_extension


def test_starting_offsets() -> None:
    assert cfg(startingOffsets="latest").starting == {-1: LATEST}
    assert cfg(STARTINGOFFSETS=" Earliest ").starting == {-1: EARLIEST}
    assert cfg(startingOffsets='{"0": 12, "2": -1, "1": -2}').starting == {0: 12, 2: LATEST, 1: EARLIEST}
    for bad in ("first", '{"0": -3}', '{"x": 1}', '{"0": "1"}', "[1]", '{"0": 1.5}'):
        with pytest.raises(ConfigError, match=r"startingOffsets .* is not earliest, latest or a JSON object"):
            cfg(startingOffsets=bad)


def test_avro_is_read_through_the_registry_in_the_path_or_an_option() -> None:
    from sparkcdc.codec.avro.decoder import AvroDecoder

    opt = cfg("kafka://h:9092/t?protocol=avro", **{"schema-registry": "http://u:p%40ss@h:8081",
                                                  "avro-decimal-handling-mode": "string"})  # fmt: skip
    assert opt.sink.schema_registry == "http://u:p%40ss@h:8081"  # quoted into the path, read back as given
    decoder = opt.decoder()
    assert isinstance(decoder, AvroDecoder) and decoder.config.decimal_handling_mode == "string"
    path = cfg("kafka://h:9092/t?protocol=avro&enable-tidb-extension=true&avro-enable-watermark=true"
               "&schema-registry=http://h:8081", **{"up-to-watermark": "true"})  # fmt: skip
    assert path.up_to_watermark and path.sink.avro_enable_watermark


@pytest.mark.parametrize(
    ("path", "options", "message"),
    [
        ("", {}, r'needs a path: \.load\("kafka://'),
        ("s3://bucket/x", {}, "is not a Kafka sink URI"),
        ("kafka://h:9092/t", {}, "protocol is required"),
        ("kafka://h:9092/t?protocol=avro", {}, 'requires parameter "schema-registry"'),
        ("kafka://h:9092/t?protocol=avro&schema-registry=http://h:8081", {"up-to-watermark": "true"},
         "up-to-watermark needs watermarks, and avro has them only with enable-tidb-extension=true and "
         "avro-enable-watermark=true"),
        ("kafka://h:9092/t?protocol=avro", {"schema-registry": "http://u:hunter2@h:0"}, "has port 0"),
        ("kafka://h:9092/t?protocol=avro", {"schema-registry": "http://u:hunter2/x@h"}, "must be URL-encoded"),
        ("kafka://h:9092/t?protocol=avro", {"schema-registry": "http://h", "avro-decimal-handling-mode": "exact"},
         "avro-decimal-handling-mode value could only be"),
        ("kafka://h:9092/t?protocol=canal-json", {"up-to-watermark": "true"}, "up-to-watermark needs watermarks.*"
         "canal-json has them only with the TiDB extension"),
        ("kafka://h:9092/t?protocol=simple", {"protocol": "canal-json"}, "contradicts protocol='simple'"),
        ("kafka://h:9092/t?protocol=simple", {"up-to-watermark": "maybe"}, "up-to-watermark='maybe' is not a boolean"),
        ("kafka://h:9092/t?protocol=simple", {"maxOffsetsPerTrigger": "5"}, "unknown option.*'maxoffsetspertrigger'"),
        ("kafka://h:9092/t?protocol=simple&sasl-password=hunter2&bogus=1", {}, "unknown kafka sink URI parameter"),
    ],
)
def test_malformed_options_are_one_line_naming_the_problem(path: str, options: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as e:
        cfg(path, **options)
    assert "\n" not in str(e.value) and "hunter2" not in str(e.value)
