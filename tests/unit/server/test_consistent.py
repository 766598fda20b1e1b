"""``[consistent]`` read as TiCDC reads it (issue 28, item 1): defaults, 0 for the default, TiCDC's storage schemes;
its refusals are cases of ``tests.fixtures.bad_input``."""

from __future__ import annotations

import pytest

from sparkcdc.changefeed.config import ReplicaConfig
from sparkcdc.changefeed.consistent import ConsistentConfig
from sparkcdc.errors import ConfigError
from sparkcdc.sink.mysql.config import MysqlSinkConfig


def test_level_none_is_the_default_and_checks_nothing_else() -> None:
    assert ConsistentConfig.from_toml(None) == ConsistentConfig() and not ConsistentConfig().enabled
    # TiCDC validates nothing more with level none: a storage that would be refused is kept out of the way
    none = ConsistentConfig.from_toml({"level": "none", "storage": "ftp://x", "flush-interval": 1})
    assert none == ConsistentConfig()


def test_eventual_takes_ticdc_defaults_for_zero_and_missing_values() -> None:
    cfg = ConsistentConfig.from_toml({"level": "eventual", "storage": "file:///nfs/redo", "flush-interval": 0,
                                      "max-log-size": 0, "compression": "none"})  # fmt: skip
    assert cfg.enabled and (cfg.flush_interval_ms, cfg.meta_flush_interval_ms, cfg.max_log_size_mb) == (2000, 200, 64)
    assert cfg.compression == "" and not cfg.lz4 and cfg.storage == "file:///nfs/redo"
    lz4 = ConsistentConfig.from_toml({"level": "eventual", "storage": "s3://bkt/p?endpoint=http://h:1",
                                      "compression": "lz4", "flush-interval": 50})  # fmt: skip
    assert lz4.lz4 and lz4.flush_interval_ms == 50


@pytest.mark.parametrize(("given", "stored"), [("local:///d/redo", "file:///d/redo"), ("nfs:///d/redo", "file:///d/redo"),
                                               ("blackhole://", "noop://"), ("gs://bkt/p", "gs://bkt/p"),
                                               ("azblob://cont/p", "azblob://cont/p")])  # fmt: skip
def test_ticdc_storage_schemes(given: str, stored: str) -> None:
    assert ConsistentConfig.from_toml({"level": "eventual", "storage": given}).storage == stored


def test_the_storage_secret_is_masked_in_repr_and_errors() -> None:
    uri = "s3://bkt/p?access-key=AK&secret-access-key=hunter2"
    assert "hunter2" not in repr(ConsistentConfig.from_toml({"level": "eventual", "storage": uri}))
    with pytest.raises(ConfigError) as e:
        ConsistentConfig.from_toml({"level": "eventual", "storage": uri + "&endpointt=x"})
    assert "hunter2" not in e.value.message and "unknown parameter 'endpointt'" in e.value.message


def test_the_mysql_sink_paces_its_batches_at_the_flush_interval() -> None:
    doc = {"consistent": {"level": "eventual", "storage": "file:///nfs/redo", "flush-interval": 3000}}
    cfg = MysqlSinkConfig.from_uri("mysql://root@127.0.0.1:3306/", doc)
    assert cfg.redo is not None and cfg.redo.storage == "file:///nfs/redo" and cfg.flush_interval == 3.0
    assert MysqlSinkConfig.from_uri("mysql://root@127.0.0.1:3306/", {}).redo is None
    assert ReplicaConfig.from_toml(doc).consistent() == cfg.redo
