"""delta:// and iceberg:// URIs: what they name, and one clear line (secrets masked) for a bad one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparkcdc.errors import ConfigError
from sparkcdc.lake.location import LakeLocation
from sparkcdc.masking import mask_uri
from sparkcdc.sink.base import check_sink, sink_config
from sparkcdc.sink.lake.config import LakeSinkConfig


def test_delta_uri() -> None:
    cfg = sink_config("delta:///data/lake/?flush-interval=500ms&worker-count=8")
    assert cfg == LakeSinkConfig(LakeLocation("delta", "/data/lake"), 0.5, 8)


def test_iceberg_uri_with_a_catalog_keeps_its_password_out_of_repr() -> None:
    cfg = sink_config("iceberg:///wh?catalog-uri=mysql%2Bpymysql%3A%2F%2Fu%3Ahunter2%40h%3A3306%2Fcat")
    assert isinstance(cfg, LakeSinkConfig)
    assert cfg.where.catalog_uri == "mysql+pymysql://u:hunter2@h:3306/cat"
    assert "hunter2" not in repr(cfg) and "hunter2" not in str(cfg.where)
    assert "hunter2" not in mask_uri("iceberg:///wh?catalog-uri=mysql%2Bpymysql%3A%2F%2Fu%3Ahunter2%40h%3A3306%2Fcat")


@pytest.mark.parametrize(("uri", "message"), [
    ("delta://host/data", "takes a local absolute path and no host"),
    ("delta://", "takes a local absolute path"),
    ("delta:///", "takes a local absolute path"),
    ("delta:///d?protocol=csv", "unknown parameter 'protocol' for delta://; use one of: flush-interval, worker-count"),
    ("delta:///d?catalog-uri=sqlite:///x", "unknown parameter 'catalog-uri' for delta://"),
    ("iceberg:///d?catalog-uri=nope", "catalog-uri must be a SQLAlchemy URL"),
    ("delta:///d?worker-count=0", "worker-count must be an integer in [1, 512], not '0'"),
    ("delta:///d?flush-interval=soon", "flush-interval"),
    ("iceberg://u:hunter2@h/d", "no host"),
    ("delta://s3://bkt/p?sse=aws:kms", "unknown parameter 'sse' for delta://"),
    ("delta://s3://B/p", "invalid S3 bucket name 'B'"),
    ("delta://kafka://h/t", "unsupported scheme 'kafka'"),
    ("delta://noop://x", "a lake root is a local path or on s3, gcs or azure, not noop://"),
    ("iceberg://s3://bkt/wh?secret-access-key=hunter2", "needs catalog-uri="),
    ("delta://s3://u:hunter2@bkt/p", "must not carry user:password@"),
])  # fmt: skip
def test_bad_uris_fail_at_create_with_one_line(uri: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        sink_config(uri)
    assert message in e.value.message
    assert "\n" not in e.value.message and "hunter2" not in e.value.message


def test_check_refuses_a_root_that_cannot_be_written(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match=r"sink root .*file/lake"):
        check_sink(f"delta://{tmp_path}/file/lake")


def test_check_reaches_the_iceberg_catalog(tmp_path: Path) -> None:
    check_sink(f"iceberg://{tmp_path}/wh")
    assert (tmp_path / "wh" / "catalog.db").exists()
    with pytest.raises(ConfigError, match="the catalog fails") as e:
        check_sink(f"iceberg://{tmp_path}/wh?catalog-uri=mysql%2Bpymysql://u:hunter2@127.0.0.1:1/c")
    assert "hunter2" not in e.value.message and "\n" not in e.value.message


def test_check_names_the_missing_library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "deltalake" else real(name))
    message = "delta:// needs the deltalake library: pip install 'sparkcdc[lake]'"
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_sink(f"delta://{tmp_path}/lake")


def test_an_object_store_root_takes_the_storage_sinks_parameters() -> None:
    from sparkcdc.lake.stores import delta_options, delta_root, iceberg_properties, iceberg_warehouse

    cfg = sink_config("delta://s3://bkt/lake/?endpoint=http://127.0.0.1:9000&access-key=AK&secret-access-key=hunter2"
                      "&worker-count=2")  # fmt: skip
    assert isinstance(cfg, LakeSinkConfig) and cfg.worker_count == 2
    assert cfg.where.root == "s3://bkt/lake" and delta_root(cfg.where) == "s3://bkt/lake"
    assert delta_options(cfg.where) == {"allow_http": "true", "aws_endpoint": "http://127.0.0.1:9000",
                                        "aws_access_key_id": "AK", "aws_secret_access_key": "hunter2",
                                        "aws_virtual_hosted_style_request": "false"}  # fmt: skip
    assert "hunter2" not in repr(cfg) and "hunter2" not in str(cfg.where)
    where, _ = LakeLocation.from_uri("iceberg://azure://cont/wh?account-name=acct&account-key=k&catalog-uri=sqlite:///c")
    assert iceberg_warehouse(where) == "abfs://cont@acct.dfs.core.windows.net/wh"
    assert iceberg_properties(where) == {"adls.account-name": "acct", "adls.account-key": "k"}
    where, _ = LakeLocation.from_uri("iceberg://gs://bkt/wh?endpoint=http://127.0.0.1:1&catalog-uri=sqlite:///c")
    assert iceberg_warehouse(where) == "gs://bkt/wh" and iceberg_properties(where)["gcs.service.host"] == "http://127.0.0.1:1"
    assert LakeLocation.from_uri("delta://file:///data/lake")[0] == LakeLocation("delta", "/data/lake")
