"""What create and update refuse (TiCDC's ValidateAndAdjust rules), and round trips of what they accept.

The checks a create runs on a config are ``sink_config`` (the storage sink's config, ``[sink.csv]`` included)
and ``ReplicaConfig.validate``; both forms of each input (TOML and Open API JSON) must be refused there with
TiCDC's code and wording. Whatever is accepted must come back unchanged through every conversion a GET, a PUT,
the store and ``cdc cli changefeed update`` apply.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from sparkcdc.changefeed.config import ReplicaConfig, format_duration, merge_documents, parse_duration
from sparkcdc.errors import ConfigError
from sparkcdc.sink.base import sink_config
from tests.fixtures.replica_configs import REFUSED, REPRESENTATIVE_TOML, Refused

CSV_SINK = "file:///tmp/sparkcdc-unit/sink?protocol=csv"
CANAL_SINK = "file:///tmp/sparkcdc-unit/sink?protocol=canal-json"


def create_checks(sink_uri: str, cfg: ReplicaConfig) -> None:
    """The config checks ChangefeedManager.create and update run, in their order."""
    cfg.validate()
    sink_config(sink_uri, cfg.to_toml())


def _refused(build: Any, case: Refused, sink_uri: str) -> ConfigError:
    with pytest.raises(ConfigError) as e:
        create_checks(sink_uri, build())
    assert e.value.code == case.code, e.value
    assert case.fragment in e.value.message
    assert "\n" not in e.value.message
    return e.value


@pytest.mark.parametrize("case", REFUSED, ids=[c.id for c in REFUSED])
def test_toml_input_is_refused(case: Refused) -> None:
    _refused(lambda: ReplicaConfig.from_toml_text(case.toml, source="cf.toml"), case, CSV_SINK)


@pytest.mark.parametrize("case", [c for c in REFUSED if c.api is not None], ids=[c.id for c in REFUSED if c.api])
def test_api_input_is_refused(case: Refused) -> None:
    _refused(lambda: ReplicaConfig.from_api(case.api), case, CSV_SINK)


@pytest.mark.parametrize("case", [c for c in REFUSED if c.code == "CDC:ErrSinkInvalidConfig"], ids=lambda c: c.id)
def test_csv_table_is_checked_whatever_the_protocol(case: Refused) -> None:
    """TiCDC validates [sink.csv] for every storage sink; a canal-json changefeed must not store a bad one
    (switching its URI to protocol=csv later would fail only when it runs)."""
    _refused(lambda: ReplicaConfig.from_toml_text(case.toml), case, CANAL_SINK)


def test_sync_point_bounds_only_when_enabled() -> None:
    off = ReplicaConfig.from_toml_text('sync-point-interval = "10s"\nsync-point-retention = "1m"')
    create_checks(CSV_SINK, off)  # TiCDC checks the sync point bounds only with enable-sync-point
    on = ReplicaConfig.from_toml_text(
        'enable-sync-point = true\nsync-point-interval = "30s"\nsync-point-retention = "1h"'
    )
    create_checks(CSV_SINK, on)  # the bounds themselves are allowed
    with pytest.raises(ConfigError, match="changefeed-error-stuck-duration -1s is negative"):
        ReplicaConfig.from_toml_text('changefeed-error-stuck-duration = "-1s"').validate()


def representative() -> ReplicaConfig:
    cfg = ReplicaConfig.from_toml_text(REPRESENTATIVE_TOML, source="cf.toml")
    create_checks(CSV_SINK, cfg)
    return cfg


def test_representative_config_is_not_the_default() -> None:
    cfg = representative()
    default = ReplicaConfig()
    for name in ReplicaConfig.__dataclass_fields__:
        assert getattr(cfg, name) != getattr(default, name), name
    assert cfg.changefeed_error_stuck_duration_ns == 45 * 60 * 10**9 + 500_000_000


def test_round_trips_of_an_accepted_config() -> None:
    """GET (to_api, JSON) then PUT (from_api), the store (to_toml/from_toml) and the CLI update (from_api,
    to_toml merged with an empty overlay, from_document) all give the same config back, still accepted."""
    cfg = representative()
    over_http = ReplicaConfig.from_api(json.loads(json.dumps(cfg.to_api())))
    assert over_http == cfg
    assert over_http.to_api() == cfg.to_api()
    stored = ReplicaConfig.from_toml(json.loads(json.dumps(cfg.to_toml())))
    assert stored == cfg
    via_cli = ReplicaConfig.from_document(merge_documents(ReplicaConfig.from_api(cfg.to_api()).to_toml(), {}), "x")
    assert via_cli == cfg
    create_checks(CSV_SINK, over_http)


def test_ticdc_api_names_of_renamed_sink_keys() -> None:
    api = representative().to_api()["sink"]
    assert api["file_index_width"] == 8 and api["advance_timeout"] == 300
    assert "file_index_digit" not in api and "advance_timeout_in_sec" not in api
    # TiCDC's TOML name is advance-timeout-in-sec; 'advance-timeout' is no TiCDC key
    with pytest.raises(ConfigError, match="unknown key 'advance-timeout'"):
        sink_config(CSV_SINK, ReplicaConfig.from_toml_text("[sink]\nadvance-timeout = 1").to_toml())


@pytest.mark.parametrize(
    "ns",
    [0, 1, 999, 1_500, 1_234_567, 10**9 + 1, 90 * 10**9, 45 * 60 * 10**9 + 500_000_000, (1 << 63) - 1, -1,
     -600 * 10**9, -((1 << 63) - 1)],
)  # fmt: skip
def test_any_stored_duration_parses_back(ns: int) -> None:
    """A duration the API stored as nanoseconds is written as Go text in the store: it must parse back exactly
    (sub-millisecond values were written as '1e-06ms' and negative ones as '-1h50m0s', which made the
    changefeed unreadable)."""
    text = format_duration(ns)
    assert parse_duration(text, "k") == ns
    cfg = ReplicaConfig.from_api({"sync_point_interval": ns})
    assert ReplicaConfig.from_toml(cfg.to_toml()) == cfg


@pytest.mark.parametrize(
    ("text", "ns"), [("-10m", -600 * 10**9), ("+5s", 5 * 10**9), ("0", 0), ("1.5µs", 1500), ("2μs", 2000)]
)
def test_go_duration_syntax(text: str, ns: int) -> None:
    assert parse_duration(text, "k") == ns


@pytest.mark.parametrize("value", [1 << 63, -(1 << 63), "3000000h"])
def test_duration_outside_int64_is_refused(value: object) -> None:
    with pytest.raises(ConfigError, match="sync-point-interval") as e:
        ReplicaConfig.from_api({"sync_point_interval": value})
    assert e.value.code == "CDC:ErrInvalidReplicaConfig"


@pytest.mark.parametrize(
    ("doc", "fragment"),
    [
        ({"sink": {"kafka-config": {"max_message_bytes": 1}}}, "sink.kafka-config.'max_message_bytes'"),
        ({"sink": {"dispatchers": [{"matcher": ["a.*"], "topic_rule": "x"}]}}, "sink.dispatchers[0].'topic_rule'"),
        ({"consistent": {"storage": {"a_b": 1}}}, "consistent.storage.'a_b'"),
        ({"sink": {"kafka-config": {"since": __import__("datetime").date(2024, 1, 1)}}}, "is not a configuration"),
        ({"consistent": {"max-log-size": math.nan}}, "consistent.max-log-size: nan is not a configuration value"),
    ],
)
def test_values_a_get_would_not_return_are_refused(doc: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigError) as e:
        ReplicaConfig.from_toml(doc)
    assert fragment in e.value.message
    assert e.value.code == "CDC:ErrInvalidReplicaConfig"


def test_api_nulls_mean_unset_at_any_depth() -> None:
    cfg = ReplicaConfig.from_api(
        {"sink": {"csv": None, "terminator": None, "cloud_storage_config": {"file_size": None}}}
    )
    assert cfg.sink == {"cloud-storage-config": {}}
    create_checks(CSV_SINK, cfg)
