from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.codec.gofmt import float32, go_float_f, go_float_v, go_json_string
from tests.vectors import params


@pytest.mark.parametrize("vector", params("misc", "float-csv-percent-v"))
def test_go_percent_v(vector: dict[str, Any]) -> None:
    for value, expected in zip(vector["input"]["values"], vector["expected"]["strings"], strict=True):
        bits = 32 if "32" in value["kind"] else 64
        x = float(value["value"])
        assert go_float_v(float32(x) if bits == 32 else x, bits) == expected, value


@pytest.mark.parametrize(
    ("value", "bits", "expected"),
    [(1e21, 64, "1000000000000000000000"), (1.5e-7, 64, "0.00000015"), (1234567.5, 64, "1234567.5"),
     (float32(3.4028235e38), 32, "340282350000000000000000000000000000000"), (float32(1e10), 32, "10000000000")],
)
def test_go_float_f(value: float, bits: int, expected: str) -> None:
    assert go_float_f(value, bits) == expected


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_float_f_round_trips(x: float) -> None:
    assert float(go_float_f(x)) == x
    assert float(go_float_v(x)) == x


@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_float32_round_trips(x: float) -> None:
    assert float32(float(go_float_f(x, 32))) == x


def test_go_json_string_escapes_like_go() -> None:
    assert go_json_string("a<b>&c\u2028") == '"a\\u003cb\\u003e\\u0026c\\u2028"'
    assert go_json_string("\b\f", short_bf=False) == '"\\u0008\\u000c"'
    assert go_json_string("\\b\f", short_bf=False) == '"\\\\b\\u000c"'
    assert go_json_string("é\x01\n") == '"é\\u0001\\n"'
