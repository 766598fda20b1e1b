"""Sink URI parsing, config merging, clamping, malformed input and secret masking."""

from __future__ import annotations

import logging
import pickle
import re
from typing import Any

import pytest

from sparkcdc.errors import ConfigError
from sparkcdc.storage.duration import format_duration, parse_duration
from sparkcdc.storage.sink_config import StorageSinkConfig
from sparkcdc.storage.sink_uri import SinkURI
from tests import vectors

SECRETS = ("s3cr3tValue", "AzureKeyValue==", "sasTokenValue")


def _summary(cfg: StorageSinkConfig) -> dict[str, str]:
    return {
        "worker-count": str(cfg.worker_count),
        "flush-interval": format_duration(cfg.flush_interval_ns),
        "file-size": str(cfg.file_size),
        "file-index-digit": str(cfg.file_index_width),
        "date-separator": cfg.date_separator,
        "enable-partition-separator": str(cfg.enable_partition_separator).lower(),
        "flush-concurrency": str(cfg.flush_concurrency),
    }


def _cloud_config(text: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in text.split():
        key, _, value = item.partition("=")
        out[key] = value if key == "flush-interval" else int(value)
    return out


CLAMP = vectors.load("misc")
CLAMP_CASES = next(v for v in CLAMP if v["id"] == "config-clamping")


@pytest.mark.parametrize(
    ("case", "expected"),
    list(zip(CLAMP_CASES["input"]["cases"], CLAMP_CASES["expected"]["results"])),
    ids=[f"clamp-{i}" for i in range(len(CLAMP_CASES["input"]["cases"]))],
)
def test_config_clamping_vector(case: str, expected: str, caplog: pytest.LogCaptureFixture) -> None:
    query, toml = case, None
    if case.startswith("(none; cloud-storage-config "):
        query, toml = "", _cloud_config(case.removeprefix("(none; cloud-storage-config ").rstrip(")"))
    elif " plus cloud-storage-config " in case:
        query, cloud = case.split(" plus cloud-storage-config ")
        toml = _cloud_config(cloud)
    uri = "s3://bucket/prefix?protocol=csv" + (f"&{query}" if query else "")
    doc = {"sink": {"cloud-storage-config": toml}} if toml else None
    if expected.startswith("error: "):
        with pytest.raises(ConfigError, match=re.escape(expected.removeprefix("error: "))):
            StorageSinkConfig.from_uri(uri, doc)
        return
    with caplog.at_level(logging.WARNING, logger="sparkcdc.storage.sink_config"):
        cfg = StorageSinkConfig.from_uri(uri, doc)
    want = expected.removeprefix("URI wins: ").removesuffix(" (warning)")
    got = _summary(cfg)
    for item in want.split():
        key, _, value = item.partition("=")
        assert got[key] == value, key
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    if expected.endswith("(warning)"):
        key, _, new = want.partition("=")
        old = query.partition("=")[2]
        assert any(key in w and old in w and new in w for w in warned), warned
    else:
        assert warned == []


def test_defaults() -> None:
    cfg = StorageSinkConfig.from_uri("file:///tmp/x?protocol=canal-json")
    assert (cfg.worker_count, cfg.flush_interval, cfg.file_size) == (16, 5.0, 64 * 1024 * 1024)
    assert (cfg.file_index_width, cfg.date_separator, cfg.enable_partition_separator) == (20, "day", True)
    assert cfg.terminator == "\r\n"
    assert cfg.extension == ".json"
    assert cfg.uri.root == "/tmp/x"


def test_toml_layout_options_and_csv_passthrough() -> None:
    doc = {
        "sink": {
            "protocol": "csv",
            "date-separator": "DAY",
            "enable-partition-separator": False,
            "file-index-digit": 6,
            "terminator": "\n",
            "csv": {"delimiter": "|", "quote": "'", "output-field-header": True},
            "cloud-storage-config": {"output-column-id": True, "flush-concurrency": 600},
            "dispatchers": [],
        }
    }
    cfg = StorageSinkConfig.from_uri("s3://bkt/p", doc)
    assert cfg.protocol == "csv"
    assert cfg.date_separator == "DAY"  # kept raw: only exact lower-case values make a date directory
    assert cfg.enable_partition_separator is False
    assert cfg.file_index_width == 6
    assert cfg.flush_concurrency == 1
    assert cfg.output_column_id is True
    assert cfg.encoder_options() == {"delimiter": "|", "quote": "'", "output-field-header": True, "terminator": "\n"}
    canal = StorageSinkConfig.from_uri("s3://bkt/p?protocol=canal-json&enable-tidb-extension=true")
    assert canal.encoder_options()["enable-tidb-extension"] is True


@pytest.mark.parametrize("protocol", ["csv", "canal-json"])
@pytest.mark.parametrize(
    ("csv", "message"),
    [
        ({"delimiter": ""}, "csv config delimiter cannot be empty"),
        ({"delimiter": "abcd"}, "csv config delimiter contains more than three characters"),
        ({"quote": "ab"}, "csv config quote contains more than one character"),
        ({"delimiter": "'", "quote": "'"}, "csv config quote and delimiter has common characters"),
        ({"binary-encoding-method": "bad"}, "csv config binary-encoding-method can only be hex or base64"),
        ({"delimiter": 5}, "csv config delimiter must be a string"),
    ],
)
def test_csv_table_is_validated_for_every_protocol(protocol: str, csv: dict[str, Any], message: str) -> None:
    """TiCDC checks [sink.csv] for any storage sink; checking it here (not when the encoder is built) is what
    makes the server refuse it at create instead of the changefeed failing when it runs."""
    with pytest.raises(ConfigError, match=re.escape(message)) as e:
        StorageSinkConfig.from_uri(f"file:///tmp/x?protocol={protocol}", {"sink": {"csv": csv}})
    assert e.value.code == "CDC:ErrSinkInvalidConfig"


def test_advance_timeout_has_ticdc_toml_name() -> None:
    StorageSinkConfig.from_uri("file:///tmp/x?protocol=csv", {"sink": {"advance-timeout-in-sec": 150}})
    with pytest.raises(ConfigError, match="unknown key 'advance-timeout' in \\[sink\\]"):
        StorageSinkConfig.from_uri("file:///tmp/x?protocol=csv", {"sink": {"advance-timeout": 150}})


@pytest.mark.parametrize("digits", [0, 5, 21, -3])
def test_file_index_digit_out_of_range_becomes_20(digits: int) -> None:
    cfg = StorageSinkConfig.from_uri("gcs://bkt/p?protocol=csv", {"sink": {"file-index-digit": digits}})
    assert cfg.file_index_width == 20


def test_uri_protocol_beats_config(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        cfg = StorageSinkConfig.from_uri("s3://bkt/p?protocol=canal-json", {"sink": {"protocol": "csv"}})
    assert cfg.protocol == "canal-json"
    assert "overrides" in caplog.text


def test_scheme_aliases() -> None:
    assert SinkURI.parse("gs://bkt/a/b/").scheme == "gcs"
    assert SinkURI.parse("azblob://cont/a").scheme == "azure"
    assert SinkURI.parse("gs://bkt/a/b/").root == "bkt/a/b"
    assert SinkURI.parse("noop://").scheme == "noop"


def test_secrets_masked_in_repr_str_and_pickle() -> None:
    uri = f"azure://cont/p?protocol=csv&account-name=acc&account-key={SECRETS[1]}&sas-token={SECRETS[2]}"
    cfg = StorageSinkConfig.from_uri(uri)
    s3 = StorageSinkConfig.from_uri(f"s3://bkt/p?protocol=csv&access-key=AKID&secret-access-key={SECRETS[0]}")
    for text in (repr(cfg), str(cfg), repr(cfg.uri), str(cfg.uri), repr(s3), str(s3.uri)):
        assert not any(secret in text for secret in SECRETS), text
        assert "xxxxx" in text
    assert pickle.loads(pickle.dumps(cfg)) == cfg
    assert cfg.backend_param("account-key") == SECRETS[1]


def test_go_duration_round_trip() -> None:
    for text, ns in [("2s", 2 * 10**9), ("1m2s", 62 * 10**9), ("10m0s", 600 * 10**9), ("1.5s", 1_500_000_000),
                     ("500ms", 500_000_000), ("1h0m0s", 3600 * 10**9), ("-10s", -10 * 10**9)]:  # fmt: skip
        assert parse_duration(text) == ns
        assert format_duration(ns) == text
    assert parse_duration("1h") == 3600 * 10**9
    assert parse_duration("0") == 0


MALFORMED: list[tuple[str, dict[str, Any] | None, str]] = [
    ("", None, "empty"),
    ("   ", None, "empty"),
    (" s3://bkt/p?protocol=csv", None, "whitespace"),
    ("bkt/p?protocol=csv", None, "no scheme"),
    ("ftp://host/p?protocol=csv", None, "unsupported scheme 'ftp'"),
    ("kafka://host/topic?protocol=csv", None, "unsupported scheme 'kafka'"),
    ("s3:///p?protocol=csv", None, "no bucket"),
    ("s3://B/p?protocol=csv", None, "invalid S3 bucket name"),
    ("s3://Upper_Case/p?protocol=csv", None, "invalid S3 bucket name"),
    ("azure://a--b/p?protocol=csv", None, "invalid Azure container name"),
    ("gcs://x/p?protocol=csv", None, "invalid GCS bucket name"),
    ("s3://bkt/a//b?protocol=csv", None, "empty, '.' or '..' segments"),
    ("s3://bkt/a/../b?protocol=csv", None, "empty, '.' or '..' segments"),
    ("s3://user:hunter2@bkt/p?protocol=csv", None, "must not carry user:password@"),
    ("s3://bkt/p?protocol=csv#frag", None, "#fragment"),
    ("file://host/tmp/x?protocol=csv", None, "has host 'host'"),
    ("file:///?protocol=csv", None, "absolute directory"),
    ("file://relative?protocol=csv", None, "has host 'relative'"),
    ("s3://bkt/p", None, "protocol is required"),
    ("s3://bkt/p?protocol=avro", None, "unsupported protocol 'avro'"),
    ("s3://bkt/p?protocol=", None, "protocol is required"),
    ("s3://bkt/p?protocol=csv&protocol=csv", None, "given more than once"),
    ("s3://bkt/p?protocol=csv&=x", None, "empty name"),
    ("s3://bkt/p?protocol=csv&bogus=1", None, "unknown s3 sink URI parameter 'bogus'"),
    ("file:///tmp/x?protocol=csv&endpoint=http://x", None, "unknown file sink URI parameter 'endpoint'"),
    ("gcs://bkt/p?protocol=csv&account-key=k", None, "unknown gcs sink URI parameter 'account-key'"),
    ("s3://bkt/p?protocol=csv&worker-count=abc", None, "invalid worker-count 'abc'"),
    ("s3://bkt/p?protocol=csv&worker-count=0", None, "invalid worker-count 0"),
    ("s3://bkt/p?protocol=csv&worker-count=1.5", None, "invalid worker-count '1.5'"),
    ("s3://bkt/p?protocol=csv&file-size=10MB", None, "invalid file-size '10MB'"),
    ("s3://bkt/p?protocol=csv&flush-interval=5", None, "invalid flush-interval '5'"),
    ("s3://bkt/p?protocol=csv&flush-interval=5sec", None, "invalid flush-interval '5sec'"),
    ("s3://bkt/p?protocol=csv&flush-interval=", None, "invalid flush-interval ''"),
    ("s3://bkt/p?protocol=csv&enable-tidb-extension=yes", None, "invalid enable-tidb-extension 'yes'"),
    ("s3://bkt/p?protocol=csv&force-path-style=maybe", None, "invalid force-path-style 'maybe'"),
    ("s3://bkt/p?protocol=csv", {"sink": {"date-separator": "week"}}, "invalid date-separator 'week'"),
    ("s3://bkt/p?protocol=csv", {"sink": {"date-separator": 1}}, "invalid date-separator '1' in [sink]: must be a"),
    ("s3://bkt/p?protocol=csv", {"sink": {"enable-partition-separator": "perhaps"}}, "enable-partition-separator"),
    ("s3://bkt/p?protocol=csv", {"sink": {"file-index-digit": "six"}}, "invalid file-index-digit 'six'"),
    ("s3://bkt/p?protocol=csv", {"sink": {"terminator": ""}}, "invalid terminator"),
    ("s3://bkt/p?protocol=csv", {"sink": {"colour": "blue"}}, "unknown key 'colour' in [sink]"),
    ("s3://bkt/p?protocol=csv", {"sink": {"csv": {"separator": ","}}}, "unknown key 'separator' in [sink.csv]"),
    ("s3://bkt/p?protocol=csv", {"sink": {"csv": "x"}}, "key 'csv' must be a table"),
    ("s3://bkt/p?protocol=csv", {"sink": {"cloud-storage-config": {"speed": 1}}}, "unknown key 'speed'"),
    ("s3://bkt/p?protocol=csv", {"sink": {"cloud-storage-config": {"flush-interval": 5}}}, "flush-interval '5' in"),
    ("s3://bkt/p?protocol=csv", {"sink": {"cloud-storage-config": {"file-size": True}}}, "invalid file-size"),
    ("s3://bkt/p?protocol=csv", {"sink": {"cloud-storage-config": {"file-expiration-days": -1}}}, "expiration"),
    ("s3://bkt/p?protocol=csv", {"sink": {"cloud-storage-config": {"file-cleanup-cron-spec": "0 2 * *"}}}, "cron"),
    ("s3://bkt/p?protocol=csv", {"sink": {"transaction-atomicity": "global"}}, "transaction-atomicity"),
    ("s3://bkt/p", {"sink": {"protocol": 7}}, "invalid protocol '7' in [sink]: must be a string"),
    ("s3://bkt/p?protocol=csv", {"sink": {"delete-only-output-handle-key-columns": True}}, "not supported by"),
    ("s3://bkt/p?protocol=csv", {"sink": "nope"}, "key 'sink' must be a table"),
    # a TOML string is no integer or boolean (as in TiCDC's strict decoding); only URI parameters are text
    ("s3://bkt/p?protocol=csv", {"sink": {"cloud-storage-config": {"worker-count": "8"}}},
     "invalid worker-count '8' in [sink.cloud-storage-config]: must be an integer; write it without quotes"),
    ("s3://bkt/p?protocol=csv", {"sink": {"cloud-storage-config": {"output-column-id": "true"}}},
     "invalid output-column-id 'true' in [sink.cloud-storage-config]: use true or false; write it without quotes"),
    ("s3://bkt/p?protocol=csv", {"sink": {"enable-partition-separator": "false"}},
     "invalid enable-partition-separator 'false' in [sink]"),
]


@pytest.mark.parametrize(("uri", "toml", "message"), MALFORMED, ids=[f"bad-{i:02d}" for i in range(len(MALFORMED))])
def test_malformed_input_gives_one_line_error(uri: str, toml: dict[str, Any] | None, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        StorageSinkConfig.from_uri(uri, toml)
    text = str(info.value)
    assert message in text
    assert "\n" not in text
    assert "hunter2" not in text


@pytest.mark.parametrize(
    "uri",
    [
        f"s3://bkt/p?protocol=csv&secret-access-key={SECRETS[0]}&bogus=1",
        f"azure://cont/p?account-key={SECRETS[1]}&protocol=bad",
        f"azure://Bad_Container/p?sas-token={SECRETS[2]}",
        f"s3://bkt/p?secret-access-key={SECRETS[0]}&protocol=csv#frag",
        f"s3://bkt/p?secret-access-key={SECRETS[0]}&protocol=csv&worker-count=x",
        f"s3://bkt/p?secret-access-key={SECRETS[0]}&&&=",
    ],
)
def test_errors_never_show_secrets(uri: str) -> None:
    with pytest.raises(ConfigError) as info:
        StorageSinkConfig.from_uri(uri)
    assert not any(secret in str(info.value) for secret in SECRETS)
