"""Pure path logic: the paths.json vectors (those not needing a writer), parsing, and name safety."""

from __future__ import annotations

import posixpath
from datetime import datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.errors import ConfigError, CorruptDataError
from sparkcdc.storage.layout import (
    DataFilePath,
    IndexFilePath,
    MetadataPath,
    SchemaFilePath,
    TableDir,
    date_string,
    decode_name,
    encode_name,
    expiry_date,
    index_file_content,
    is_expired,
    is_schema_file,
    parse_data_file_name,
    parse_index_file,
    parse_path,
)
from tests import vectors


@pytest.mark.parametrize("v", vectors.params("paths", "index-name-"))
def test_index_name_vectors(v: dict[str, Any]) -> None:
    index = parse_data_file_name(v["input"]["file_name"], v["input"]["extension"])
    assert (index is not None) == v["expected"]["valid"]
    assert index == v["expected"]["index"]


@pytest.mark.parametrize("v", vectors.params("paths", "is-schema-file-"))
def test_is_schema_file_vectors(v: dict[str, Any]) -> None:
    assert is_schema_file(v["input"]["path"]) == v["expected"]["is_schema_file"]


@pytest.mark.parametrize("v", vectors.params("paths", "schema-path-parse-"))
def test_schema_path_parse_vectors(v: dict[str, Any]) -> None:
    parsed = SchemaFilePath.parse(v["input"]["path"])
    assert parsed is not None
    e = v["expected"]
    assert (parsed.schema, parsed.table, parsed.table_version, parsed.checksum) == (
        e["schema"],
        e["table"],
        e["table_version"],
        e["checksum"],
    )


@pytest.mark.parametrize("v", vectors.params("paths", "dml-path-roundtrip"))
def test_dml_path_roundtrip_vectors(v: dict[str, Any]) -> None:
    i, e = v["input"], v["expected"]
    parsed = parse_path(i["path"], date_separator=i["date_separator"], extension=i["extension"])
    assert isinstance(parsed, DataFilePath)
    d = parsed.dir
    assert (d.schema, d.table, d.table_version, d.physical_table_id or 0, d.date, parsed.index) == (
        e["schema"],
        e["table"],
        e["table_version"],
        e["partition_num"],
        e["date"],
        e["file_index"],
    )
    assert parsed.format(i["file_index_width"]) == e["regenerated"]


@pytest.mark.parametrize("v", vectors.params("paths", "path-default-width-partition"))
def test_partition_path_vectors(v: dict[str, Any]) -> None:
    i, e = v["input"], v["expected"]
    d = TableDir(i["schema"], i["table"], i["table_version"], i["physical_table_id"] if i["is_partition"] else None,
                 i["date"])  # fmt: skip
    data = d.data_file(i["index"], i["file_index_width"], i["extension"])
    assert data == e["data_file"]
    assert d.index_file() == e["index_file"]
    assert index_file_content(data).decode() == e["index_file_content"]


@pytest.mark.parametrize("v", vectors.params("paths", "expired-file-cleanup"))
def test_expired_file_vectors(v: dict[str, Any]) -> None:
    checkpoint = datetime.fromisoformat(v["input"]["checkpoint_local_time"].split(" ")[0])
    expired = expiry_date(checkpoint, v["input"]["file_expiration_days"])
    deleted = [p for p in v["input"]["files"] if is_expired(p, expired)]
    assert deleted == v["expected"]["deleted"]
    assert [p for p in v["input"]["files"] if p not in deleted] == v["expected"]["kept"]


@pytest.mark.parametrize(
    ("sep", "expected"), [("none", ""), ("year", "2022"), ("month", "2022-12"), ("day", "2022-12-31"), ("DAY", "")]
)
def test_date_string_uses_exact_lower_case(sep: str, expected: str) -> None:
    assert date_string(sep, datetime(2022, 12, 31, 23, 59, 59)) == expected


def test_parse_path_kinds() -> None:
    assert isinstance(parse_path("metadata", date_separator="day"), MetadataPath)
    idx = parse_path("db/t/5/112/2024-01-02/meta/CDC.index", date_separator="day")
    assert idx == IndexFilePath(TableDir("db", "t", 5, 112, "2024-01-02"))
    year = parse_path("db/t/5/2024/CDC000001.csv", date_separator="year")
    assert isinstance(year, DataFilePath)
    assert (year.dir.physical_table_id, year.dir.date) == (None, "2024")
    part = parse_path("db/t/5/2024/CDC000001.csv", date_separator="none")
    assert isinstance(part, DataFilePath)
    assert (part.dir.physical_table_id, part.dir.date) == (2024, "")
    schema = parse_path("db/t/meta/schema_5_0123456789.json", date_separator="day")
    assert schema == SchemaFilePath("db", "t", 5, 123456789)


@pytest.mark.parametrize(
    "path",
    [
        "README.md",
        "db/t/5/2024-01-02/CDC000001.csv.tmp.0123abcd",
        "db/t/5/2024-01-02/CDC1.csv",
        "db/t/5/2024-01-02/cdc000001.csv",
        "db/t/5/2024-01-02/CDC000001.parquet",
        "db/t/x5/2024-01-02/CDC000001.csv",
        "db/t/5/2024-1-02/CDC000001.csv",
        "db/t/5/abc/2024-01-02/CDC000001.csv",
        "db/t/5/1/2/2024-01-02/CDC000001.csv",
        "db/t/5/2024-01-02/meta/other.index",
        "db/t/meta/schema_5_12.json",
        "db//t/5/2024-01-02/CDC000001.csv",
        "/abs/t/5/2024-01-02/CDC000001.csv",
        "db/t/5/2024-01-02/CDC000001.csv/",
    ],
)
def test_foreign_files_are_ignored(path: str) -> None:
    assert parse_path(path, date_separator="day") is None


def test_index_file_content_errors_name_the_file() -> None:
    assert parse_index_file(b"CDC000007.csv\n", ".csv") == 7
    assert parse_index_file(b"CDC000007.csv", ".csv") == 7
    with pytest.raises(CorruptDataError, match=r"db/t/5/meta/CDC\.index: filename in storage sink is invalid"):
        parse_index_file(b"garbage\n", ".csv", source="db/t/5/meta/CDC.index")
    with pytest.raises(CorruptDataError):
        parse_index_file(b"CDC000007.csv\n\n", ".csv")


DANGEROUS = ["..", ".", "a/b", "/etc", "../../x", "a\x00b", "a\\b", "%2F", "%", "100%", "%zz", "a%2e%2E", "meta"]


@pytest.mark.parametrize("name", DANGEROUS)
def test_dangerous_names_stay_one_segment(name: str) -> None:
    seg = encode_name(name)
    assert "/" not in seg and "\\" not in seg and "\x00" not in seg
    assert seg not in (".", "..")
    assert decode_name(seg) == name
    path = TableDir(name, name, 1, None, "2024-01-02").data_file(1, 20, ".csv")
    assert posixpath.normpath(path) == path
    assert not path.startswith("/")
    parsed = parse_path(path, date_separator="day", extension=".csv")
    assert isinstance(parsed, DataFilePath)
    assert (parsed.dir.schema, parsed.dir.table) == (name, name)


@pytest.mark.parametrize("name", ["orders", "Tbl_1", "数据库", "with space", "a.b", "...", "$x", "a%", "t<1>"])
def test_normal_names_are_byte_identical_to_ticdc(name: str) -> None:
    assert encode_name(name) == name


def test_empty_name_is_an_error() -> None:
    with pytest.raises(ConfigError, match="must not be empty"):
        encode_name("")


@given(st.text(min_size=1, max_size=64))
def test_name_encoding_round_trips(name: str) -> None:
    seg = encode_name(name)
    assert decode_name(seg) == name
    assert "/" not in seg and seg not in (".", "..")
    schema_path = SchemaFilePath(name, name, 3, 42).format()
    assert SchemaFilePath.parse(schema_path) == SchemaFilePath(name, name, 3, 42)


@given(
    schema=st.text(min_size=1, max_size=20),
    table=st.text(min_size=1, max_size=20),
    version=st.integers(0, 2**64 - 1),
    pid=st.one_of(st.none(), st.integers(0, 2**40)),
    sep=st.sampled_from(["none", "year", "month", "day"]),
    index=st.integers(1, 10**12),
    width=st.integers(6, 20),
    ext=st.sampled_from([".csv", ".json"]),
)
def test_data_and_index_paths_round_trip(
    schema: str, table: str, version: int, pid: int | None, sep: str, index: int, width: int, ext: str
) -> None:
    date = date_string(sep, datetime(2024, 6, 5))
    d = TableDir(schema, table, version, pid, date)
    data = DataFilePath(d, index, ext)
    assert parse_path(data.format(width), date_separator=sep, extension=ext) == data
    assert parse_path(d.index_file(), date_separator=sep) == IndexFilePath(d)
