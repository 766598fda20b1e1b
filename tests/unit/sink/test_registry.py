"""The sink registry: every scheme TiCDC users write finds its sink; anything else is one clear error."""

from __future__ import annotations

import re

import pytest

from sparkcdc.errors import ConfigError
from sparkcdc.model import ColumnInfo, RowChange, RowOp, TableInfo
from sparkcdc.sink.base import SINKS, Payload, SinkContext, sink_config, sink_for
from sparkcdc.sink.blackhole import BlackholeConfig
from sparkcdc.storage.sink_config import StorageSinkConfig

CTX = SinkContext("cf", 0, "/tmp/unused")
T = TableInfo("db", "t", 7, (ColumnInfo("id", "int", nullable=False, primary_key=True, handle_key=True),))


@pytest.mark.parametrize(
    "uri",
    ["file:///tmp/x?protocol=csv", "s3://bkt/p?protocol=canal-json", "gcs://bkt/p?protocol=csv",
     "gs://bkt/p?protocol=csv", "azure://cont/p?protocol=csv", "azblob://cont/p?protocol=csv",
     "noop://x?protocol=csv"],
)  # fmt: skip
def test_storage_schemes_give_the_storage_config(uri: str) -> None:
    assert isinstance(sink_config(uri), StorageSinkConfig)


def test_blackhole() -> None:
    cfg = sink_config("blackhole://")
    assert cfg == BlackholeConfig()
    sink = sink_for("blackhole://")
    rows = [RowChange(5, T, RowOp.INSERT, None, (1,)), RowChange(5, T, RowOp.INSERT, None, (2,))]
    assert list(sink.encoder(cfg, CTX).encode(rows)) == [Payload(0, 0, 2, b"")]
    with pytest.raises(ConfigError, match="no parameter 'x'"):
        sink_config("blackhole://?x=1")


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("", "sink_uri is empty"),
        ("/tmp/x?protocol=csv", "sink uri invalid '/tmp/x?protocol=csv': missing scheme"),
        ("ftp://h/p?password=hunter2", "unsupported scheme 'ftp'"),
    ],
)
def test_bad_uris_are_one_line_with_the_choices_and_no_secret(uri: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        sink_config(uri)
    assert message in e.value.message and "\n" not in e.value.message
    assert "hunter2" not in e.value.message
    assert e.value.code == "CDC:ErrSinkURIInvalid"


def test_an_unknown_scheme_names_every_scheme_there_is() -> None:
    with pytest.raises(ConfigError, match=re.escape(", ".join(sorted(SINKS)))):
        sink_config("ftp://h/p")


def test_storage_sink_encoder_routes_a_table_to_its_dml_worker() -> None:
    from sparkcdc.sink.storage.layout_writer import dispatch_worker

    cfg = sink_config("file:///tmp/x?protocol=csv&worker-count=8")
    rows = [RowChange(5, T, RowOp.INSERT, None, (1,))]
    [payload] = list(sink_for("file:///tmp/x").encoder(cfg, CTX).encode(rows))
    assert payload.route == dispatch_worker("db", "t", 8) and payload.nrows == 1 and payload.data.startswith(b'"I"')


@pytest.mark.parametrize("scheme", ["kafka", "kafka+ssl"])
def test_kafka_schemes_give_the_kafka_config_and_mask_secrets(scheme: str) -> None:
    from sparkcdc.sink.kafka.config import KafkaSinkConfig

    cfg = sink_config(f"{scheme}://127.0.0.1:9092/t?protocol=simple&sasl-user=u&sasl-password=hunter2&sasl-mechanism=plain")
    assert isinstance(cfg, KafkaSinkConfig) and cfg.topic == "t" and cfg.protocol == "simple"
    assert "hunter2" not in repr(cfg)
    assert cfg.flush_interval > 0 and cfg.worker_count >= 1


@pytest.mark.parametrize(("scheme", "port"), [("mysql", 3306), ("mysql+ssl", 3306), ("tidb", 4000), ("tidb+ssl", 4000)])
def test_mysql_schemes_give_the_mysql_config_and_mask_the_password(scheme: str, port: int) -> None:
    from sparkcdc.sink.mysql.config import MysqlSinkConfig

    toml = {"sink": {"mysql-config": {"max-txn-row": 9}}}
    cfg = sink_config(f"{scheme}://root:hunter2@127.0.0.1/?worker-count=8", toml)
    assert isinstance(cfg, MysqlSinkConfig) and cfg.scheme == scheme and cfg.max_txn_row == 9
    assert (cfg.target.port, cfg.target.tls, cfg.target.password) == (port, scheme.endswith("+ssl"), "hunter2")
    assert "hunter2" not in repr(cfg) and "hunter2" not in str(cfg)
    assert cfg.flush_interval > 0 and cfg.worker_count == 8
    with pytest.raises(ConfigError) as e:
        sink_config(f"{scheme}://root:hunter2@127.0.0.1/?worker-count=0")
    assert "worker-count" in e.value.message and "hunter2" not in e.value.message
    assert e.value.code == "CDC:ErrMySQLInvalidConfig"
