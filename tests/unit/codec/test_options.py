"""The one reader of codec option tables (avro, simple): kinds, the options' order, and the caller's own words for an
unknown key."""

from __future__ import annotations

import pytest

from sparkcdc.codec.options import read_options
from sparkcdc.errors import ConfigError

KEYS = {"on": ("on", "bool"), "n": ("n", "int"), "name": ("name", "str"), "fmt": ("fmt", "lower"), "m": ("m", "mode")}


def test_each_kind_takes_uri_text_and_toml_values() -> None:
    got = read_options("x protocol", KEYS, {"on": " TRUE", "n": " -12 ", "name": " A ", "fmt": " JSON ", "m": "long"})
    assert got == {"on": True, "n": -12, "name": " A ", "fmt": "json", "m": "long"}
    assert read_options("x protocol", KEYS, {"on": False, "n": 7}) == {"on": False, "n": 7}


def test_an_empty_mode_keeps_the_default() -> None:
    assert read_options("x protocol", KEYS, {"m": ""}) == {}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"on": 1}, "x protocol: on must be true or false, got 1"),
        ({"n": True}, "x protocol: n must be an integer, got True"),
        ({"n": "1.5"}, "x protocol: n must be an integer, got '1.5'"),
        ({"name": 3}, "x protocol: name must be a string, got 3"),
        ({"n": "x", "what": 1}, "x protocol: n must be an integer, got 'x'"),
        ({"what": 1, "n": "x"}, "unknown what"),
    ],
)
def test_the_first_bad_option_in_order_is_the_error(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as e:
        read_options("x protocol", KEYS, options, "CDC:X", lambda key: ConfigError(f"unknown {key}", code="CDC:U"))
    assert e.value.message == message
    assert e.value.code == ("CDC:U" if message.startswith("unknown") else "CDC:X")
