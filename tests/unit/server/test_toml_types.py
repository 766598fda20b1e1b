"""TiCDC's Go types for every key of ``[sink]`` (and its sub-tables) and of the kept sections: a value of another type
is refused naming the key and its table, as TiCDC's strict TOML/JSON decoding refuses it (issue 26, item 5)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from sparkcdc.changefeed import sink_keys, toml_types
from sparkcdc.changefeed.config import ReplicaConfig
from sparkcdc.errors import ConfigError


def leaves(schema: Mapping[str, Any], path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    for key, kind in schema.items():
        if isinstance(kind, Mapping) and kind:
            yield from leaves(kind, (*path, key))
        else:
            yield (*path, key), kind


LEAVES = [*leaves(sink_keys.SINK, ("sink",)), *leaves(toml_types.SECTIONS, ())]
RIGHT = {"bool": True, "string": "x", "[]string": ["x"], "int": 1, "int64": 1, "int32": 1, "int16": 1, "uint": 1,
         "uint64": 1}  # fmt: skip
RIGHT_AT = {("consistent", "level"): "none"}  # values checked beyond their type (TiCDC's levels)
WRONG = {"bool": "true", "string": 1, "[]string": "x", "int": "1", "int64": "1", "int32": "1", "int16": "1",
         "uint": "1", "uint64": "1"}  # fmt: skip


def document(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    doc: Any = value
    for key in reversed(path):
        doc = {key: doc}
    return dict(doc)


def kind_of(kind: Any) -> str:
    return "table" if isinstance(kind, Mapping) else "tables" if isinstance(kind, list) else str(kind)


@pytest.mark.parametrize(("path", "kind"), LEAVES, ids=[".".join(p) for p, _ in LEAVES])
def test_every_key_refuses_another_type_naming_key_and_table(path: tuple[str, ...], kind: Any) -> None:
    name = kind_of(kind)
    wrong = {"table": 1, "tables": "x"}.get(name, WRONG.get(name))
    right = RIGHT_AT.get(path, {"table": {}, "tables": []}.get(name, RIGHT.get(name)))
    ReplicaConfig.from_toml(document(path, right)).validate()
    cfg = ReplicaConfig.from_toml(document(path, wrong))  # the form is read; create and update refuse it
    with pytest.raises(ConfigError) as e:
        cfg.validate()
    assert e.value.code == "CDC:ErrInvalidReplicaConfig"
    assert f"invalid {path[-1]} " in e.value.message
    assert f" in [{'.'.join(path[:-1])}] of the changefeed config: must be " in e.value.message


@pytest.mark.parametrize(
    ("table", "value", "message"),
    [
        ("kafka-config", {"partition-num": 1 << 31}, "out of range for TiCDC's int32 [-2147483648, 2147483647]"),
        ("kafka-config", {"replication-factor": -40000}, "out of range for TiCDC's int16"),
        ("kafka-config", {"partition-num": "3"}, "must be an integer; write it without quotes"),
        ("kafka-config", {"partition-num": "three"}, "invalid partition-num 'three' in [sink.kafka-config] of the "
                                                     "changefeed config: must be an integer"),
        ("kafka-config", {"partition-num": 3.0}, "invalid partition-num 3.0 in [sink.kafka-config]"),
        ("kafka-config", {"auto-create-topic": 1}, "invalid auto-create-topic 1 in [sink.kafka-config] of the "
                                                   "changefeed config: must be a boolean (true or false)"),
        ("kafka-config", {"sasl-password": 1234567}, "invalid sasl-password 'xxxxx' in [sink.kafka-config]"),
        ("kafka-config", {"sasl-oauth-client-secret": ["s3cr3t"]}, "invalid sasl-oauth-client-secret (an array)"),
        ("mysql-config", {"worker-count": True}, "invalid worker-count true in [sink.mysql-config]"),
        ("dispatchers", [{"matcher": "db.*"}], "invalid matcher 'db.*' in [sink.dispatchers[0]]"),
        ("dispatchers", [["db.*"]], "invalid dispatchers (an array) in [sink] of the changefeed config: must be an "
                                    "array of tables"),
    ],
)
def test_values_out_of_range_and_secrets(table: str, value: Any, message: str) -> None:
    cfg = ReplicaConfig.from_toml({"sink": {table: value}})
    with pytest.raises(ConfigError) as e:
        cfg.validate()
    assert message in e.value.message
    assert "1234567" not in e.value.message and "s3cr3t" not in e.value.message


def test_a_stored_config_stays_readable() -> None:
    """The types are checked at create and update (validate), not when the metadata store is read: a changefeed
    stored by an older version with a mistyped key still loads (and fails only when it runs)."""
    stored = ReplicaConfig.from_toml({"sink": {"kafka-config": {"partition-num": "3"}}})
    assert ReplicaConfig.from_api(stored.to_api()) == stored
