from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from sparkcdc.errors import ConfigError
from sparkcdc.model import tso
from tests.vectors import params


@pytest.mark.parametrize("vector", params("misc", "tso-decompose"))
def test_tso_decompose(vector: dict[str, Any]) -> None:
    for case in vector["expected"]["decomposed"]:
        value = case["tso"]
        assert tso.split(value) == (case["physical_ms"], case["logical"])
        assert tso.compose(case["physical_ms"], case["logical"]) == value
        assert tso.physical(value) == case["canal_es"]
        assert tso.to_datetime(value).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z" == case["utc"]


@pytest.mark.parametrize("vector", params("misc", "tso-from-time"))
def test_tso_from_time(vector: dict[str, Any]) -> None:
    when = datetime.fromisoformat(vector["input"]["time"].replace("Z", "+00:00"))
    assert tso.from_datetime(when) == vector["expected"]["tso"]


def test_naive_datetime_is_utc() -> None:
    assert tso.from_datetime(datetime(2021, 1, 3)) == tso.from_datetime(datetime(2021, 1, 3, tzinfo=UTC))


@pytest.mark.parametrize("bad", ["", "abc", "-1", "18446744073709551616", "1.5"])
def test_parse_rejects(bad: str) -> None:
    with pytest.raises(ConfigError, match="invalid TSO"):
        tso.parse(bad)


def test_compose_rejects_out_of_range_logical() -> None:
    with pytest.raises(ConfigError):
        tso.compose(1, 1 << 18)
