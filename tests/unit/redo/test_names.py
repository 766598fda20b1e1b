"""Redo log file names are value objects: format/parse round trips, and nothing else parses as one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.redo.names import LogName, changefeed_of, file_key, meta_name, parse_meta_name

IDS = st.from_regex(r"\A[a-zA-Z0-9]{1,8}(-[a-zA-Z0-9]{1,8}){0,3}\Z").map(lambda i: file_key(f"default/{i}"))
TS = st.integers(0, (1 << 64) - 1)


@given(cf=IDS, begin=TS, end=TS, index=st.integers(0, 99999), count=st.integers(0, 99999),
       part=st.integers(0, 9999), last=st.booleans())  # fmt: skip
def test_log_names_round_trip(cf: str, begin: int, end: int, index: int, count: int, part: int, last: bool) -> None:
    name = LogName(cf, begin, end, index, count, part, last)
    assert LogName.parse(name.format()) == name
    assert parse_meta_name(name.format()) is None


@given(cf=IDS)
def test_meta_names_round_trip(cf: str) -> None:
    assert parse_meta_name(meta_name(cf)) == cf
    assert LogName.parse(meta_name(cf)) is None


def test_changefeeds_are_keyed_without_a_slash() -> None:
    assert file_key("default/cf-1") == "default.cf-1" and changefeed_of("default.cf-1") == "default/cf-1"


def test_other_names_are_none_of_them() -> None:
    good = LogName("cf-1", 10, 20, 0, 2, 0, True).format()
    for name in ("", "file.test", good + ".tmp", "sub/" + good, good.replace("_", "-"), good.replace("e.log", "x.log"),
                 "cf_1.meta", ".sparkcdc-probe-1234"):  # fmt: skip
        assert LogName.parse(name) is None and parse_meta_name(name) is None, name


def test_names_order_as_their_records_follow_each_other() -> None:
    names = [LogName("c", 20, 30, 0, 1, 0, True), LogName("c", 10, 20, 1, 2, 0, True),
             LogName("c", 10, 20, 0, 2, 1, True), LogName("c", 10, 20, 0, 2, 0, False)]  # fmt: skip
    assert sorted(names) == [names[3], names[2], names[1], names[0]]
