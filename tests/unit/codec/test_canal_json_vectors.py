"""canal-json spec vectors (``spec/vectors/canal_json.json``), byte for byte."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest

from sparkcdc.codec.canal_json.config import CanalJsonConfig
from sparkcdc.codec.canal_json.decoder import CanalJsonFileDecoder, CanalJsonMessageDecoder
from sparkcdc.codec.canal_json.encoder import CanalJsonMessageEncoder, CanalJsonTxnEncoder
from sparkcdc.codec.canal_json.message import full_mysql_type, parse_mysql_type, short_mysql_type, sql_type
from sparkcdc.codec.canal_json.values import f32_text, f64_text
from sparkcdc.codec.gofmt import float32
from sparkcdc.model import ColumnInfo, DDLAction, DDLEvent, ResolvedEvent, RowChange, RowOp, TableInfo
from tests import vectors

_BY_ID = {v["id"]: v for v in vectors.load("canal_json")}

# Options a DML vector is about (they are named by its id; the vector input carries only enable_tidb_extension).
_OPTIONS_BY_ID = {
    "canal-update-only-updated-columns": {"only-output-updated-columns": True},
    "canal-delete-only-handle-key": {"delete-only-output-handle-key-columns": True},
}


def _dml_vectors() -> list[Any]:
    return [pytest.param(v, id=v["id"]) for v in vectors.load("canal_json") if "line" in v["expected"]]


def _columns_of(vector: dict[str, Any]) -> list[dict[str, Any]]:
    columns = vector["input"].get("columns")
    if columns is None:  # "same as canal-insert-basic with …"
        columns = _BY_ID[vector["id"].removesuffix("-tidb-extension")]["input"]["columns"]
    return list(columns)


def _value(raw: Any, go_kind: str, column: ColumnInfo) -> Any:
    if raw is None:
        return None
    if go_kind == "bytes":
        data = bytes.fromhex(raw["hex"])
        return data if column.is_binary else data.decode("utf-8")
    if go_kind == "f32":
        return float32(float(raw))
    if go_kind == "f64":
        return float(raw)
    if column.type == "decimal":
        return Decimal(raw)
    return raw


def _row_of(vector: dict[str, Any]) -> RowChange:
    specs = _columns_of(vector)
    columns = []
    for spec in specs:
        base = parse_mysql_type(spec["name"], spec["mysql_type"], where="vector")
        columns.append(
            ColumnInfo(
                name=spec["name"],
                type=base.type,
                unsigned=base.unsigned or bool(spec.get("unsigned")),
                primary_key=bool(spec.get("pk")),
                handle_key=bool(spec.get("handle")),
                nullable=not spec.get("pk"),
            )
        )
    table = TableInfo(
        schema="test", table=vector["input"].get("table", _table_name(vector)), table_id=1, columns=tuple(columns)
    )
    new = tuple(_value(s["new"], s["go_kind"], c) for s, c in zip(specs, columns))
    old = tuple(_value(s["old"], s["go_kind"], c) for s, c in zip(specs, columns))
    has_new = any(s["new"] is not None for s in specs)
    has_old = any(s["old"] is not None for s in specs)
    cts = vector["input"]["commit_ts"]
    if has_new and has_old:
        return RowChange(cts, table, RowOp.UPDATE, old, new)
    if has_old:
        return RowChange(cts, table, RowOp.DELETE, old, None)
    return RowChange(cts, table, RowOp.INSERT, None, new)


def _table_name(vector: dict[str, Any]) -> str:
    match = re.search(r'\\?"table\\?":\\?"(\w+)', vector["expected"]["line"])
    assert match is not None
    return match.group(1)


def _config(vector: dict[str, Any], **extra: Any) -> CanalJsonConfig:
    options = dict(_OPTIONS_BY_ID.get(vector["id"], {}))
    options["enable-tidb-extension"] = bool(vector["input"].get("enable_tidb_extension", False))
    options.update(extra)
    return CanalJsonConfig.from_options(options)


@pytest.mark.parametrize("vector", _dml_vectors())
def test_dml_line_matches_vector(vector: dict[str, Any]) -> None:
    row = _row_of(vector)
    build_ts = vector["input"]["build_ts_ms"]
    encoder = CanalJsonTxnEncoder(_config(vector), now_ms=lambda: build_ts)
    expected = vector["expected"]["line"].encode("utf-8")
    assert encoder.encode_txn([row]) == expected + b"\r\n"
    assert encoder.encode_txn([row, row]) == (expected + b"\r\n") * 2
    message = CanalJsonMessageEncoder(_config(vector), now_ms=lambda: build_ts).encode_row(row)
    assert message.key is None
    assert message.value == expected


@pytest.mark.parametrize("vector", _dml_vectors())
def test_dml_vector_decodes_back(vector: dict[str, Any]) -> None:
    row = _row_of(vector)
    line = vector["expected"]["line"].encode("utf-8")
    decoded = list(CanalJsonFileDecoder().decode_file(line + b"\r\n", row.table, source="v.json"))
    assert len(decoded) == 1
    got = decoded[0]
    assert got.op is row.op
    with_ext = vector["input"].get("enable_tidb_extension", False)
    assert got.commit_ts == (row.commit_ts if with_ext else 0)
    if vector["id"] == "canal-delete-only-handle-key":
        assert got.before == (7, None)  # non-key columns are not written
    else:
        assert got.before == row.before
        assert got.after == row.after
    [message_event] = list(CanalJsonMessageDecoder().decode(CanalJsonMessageEncoder(_config(vector)).encode_row(row)))
    assert isinstance(message_event, RowChange)
    assert message_event.table.primary_key_names == row.table.primary_key_names
    assert [c.name for c in message_event.table.columns][: len(row.table.columns)] == [
        c.name for c in row.table.columns
    ][: len(message_event.table.columns)]


def test_blob_value_bytes_vector() -> None:
    vector = _BY_ID["canal-insert-basic"]
    line = CanalJsonTxnEncoder(now_ms=lambda: 0).encode_txn([_row_of(vector)])
    assert bytes.fromhex(vector["expected"]["line_utf8_hex_of_bb_value"]) in line


def test_sqltype_table() -> None:
    vector = _BY_ID["canal-sqltype-table"]
    cases = vector["input"]["cases"]
    expected = vector["expected"]["sql_types"]
    assert len(cases) == len(expected)
    for case, code in zip(cases, expected):
        definition = case["column"].split(" (=")[0]
        value: Any = case["value"]
        value = int(value) if isinstance(value, str) and value.isdigit() else None
        for alternative in definition.split("/"):
            column = _column_def(alternative)
            assert column.unsigned == case["unsigned"] or column.type in ("bit", "year"), case
            assert sql_type(column, value) == code, case


def _column_def(definition: str) -> ColumnInfo:
    """A ColumnInfo from a DDL column definition such as ``float(10, 3) unsigned zerofill``."""
    text = definition.replace(" primary key", "").strip()
    match = re.fullmatch(r"(\w+)(?:\((.*)\))?((?: unsigned)?)((?: zerofill)?)", text)
    assert match is not None, definition
    kind, params = match.group(1), match.group(2)
    zerofill = bool(match.group(4))
    unsigned = bool(match.group(3)) or zerofill or kind in ("bit", "year")
    length = decimal = None
    elements: tuple[str, ...] = ()
    if kind == "bool":
        kind, length = "tinyint", 1
    kind = {"numeric": "decimal"}.get(kind, kind)
    if params is not None:
        if kind in ("enum", "set"):
            elements = tuple(e.replace("''", "'") for e in re.findall(r"'((?:[^']|'')*)'", params))
        else:
            numbers = [int(p) for p in params.split(",")]
            if kind in ("time", "datetime", "timestamp"):
                decimal = numbers[0]
            else:
                length = numbers[0]
                decimal = numbers[1] if len(numbers) > 1 else None
    return ColumnInfo(
        name="c", type=kind, unsigned=unsigned, zerofill=zerofill, length=length, decimal=decimal, elements=elements
    )


def test_mysqltype_table() -> None:
    vector = _BY_ID["canal-mysqltype-table"]
    definitions = vector["input"]["column_definitions"]
    short, full = vector["expected"]["short"], vector["expected"]["full"]
    assert len(definitions) == len(short) == len(full)
    for definition, want_short, want_full in zip(definitions, short, full):
        column = _column_def(definition)
        assert short_mysql_type(column) == want_short, definition
        assert full_mysql_type(column) == want_full, definition
        for text in (want_short, want_full):  # the message decoder reads both forms back
            parsed = parse_mysql_type("c", text, where="test")
            assert (parsed.type, parsed.unsigned, parsed.zerofill) == (
                column.type,
                column.unsigned and column.type not in ("bit", "year"),
                column.zerofill,
            )
        assert full_mysql_type(parse_mysql_type("c", want_full, where="test")) == want_full


def test_decoder_three_lines_old_layout() -> None:
    vector = _BY_ID["canal-decoder-input-three-lines"]
    content = vector["input"]["file_content"].encode("utf-8")
    terminator = vector["input"]["terminator"]
    table = TableInfo(
        schema="test",
        table="employee",
        table_id=1,
        columns=(
            ColumnInfo("id", "int", primary_key=True, handle_key=True, nullable=False),
            ColumnInfo("FirstName", "varchar"),
            ColumnInfo("LastName", "varchar"),
            ColumnInfo("HireDate", "date"),
            ColumnInfo("OfficeLocation", "varchar"),
        ),
    )
    rows = list(CanalJsonFileDecoder(CanalJsonConfig(terminator=terminator)).decode_file(content, table))
    assert [r.op.value for r in rows] == vector["expected"]["events"]
    assert len(rows) == vector["expected"]["count"]
    assert all(r.commit_ts == 0 for r in rows)  # no _tidb
    assert rows[0].after == (101, "Bob", "Smith", "2014-06-04", "New York")
    assert rows[1].before == (101, "Bob", "Smith", "2014-06-04", "New York")
    assert rows[1].after == (101, "Bob", "Smith", "2015-10-08", "Los Angeles")
    assert rows[2].before == rows[1].after
    messages = [m for m in content.split(terminator.encode())]
    events = [e for m in messages for e in CanalJsonMessageDecoder().decode(_msg(m))]
    assert [e.op.value for e in events if isinstance(e, RowChange)] == vector["expected"]["events"]


def _msg(value: bytes) -> Any:
    from sparkcdc.codec.base import Message

    return Message(key=None, value=value)


def test_watermark_vector() -> None:
    vector = _BY_ID["canal-watermark"]
    encoder = CanalJsonMessageEncoder(
        CanalJsonConfig(enable_tidb_extension=True), now_ms=lambda: vector["input"]["build_ts_ms"]
    )
    message = encoder.encode_watermark(vector["input"]["watermark_ts"])
    assert message.value == vector["expected"]["message"].encode()
    assert list(CanalJsonMessageDecoder().decode(message)) == [ResolvedEvent(vector["input"]["watermark_ts"])]


def test_ddl_vector() -> None:
    vector = _BY_ID["canal-ddl"]
    inp = vector["input"]
    encoder = CanalJsonMessageEncoder(
        CanalJsonConfig(enable_tidb_extension=inp["enable_tidb_extension"]), now_ms=lambda: inp["build_ts_ms"]
    )
    ddl = DDLEvent(inp["commit_ts"], DDLAction.CREATE_TABLE, inp["query"], "test", "person")
    message = encoder.encode_ddl(ddl)
    assert message.value == vector["expected"]["message"].encode()
    assert list(CanalJsonMessageDecoder().decode(message)) == [ddl]
    without = CanalJsonMessageEncoder(now_ms=lambda: inp["build_ts_ms"]).encode_ddl(ddl).value
    assert without == vector["expected"]["message"].encode().replace(
        b',"_tidb":{"commitTs":' + str(inp["commit_ts"]).encode() + b"}", b""
    )


def test_float_formatting_vector() -> None:
    vector = _BY_ID["canal-float-formatting"]
    values = vector["input"]["values"]
    expected = vector["expected"]["strings"]
    assert len(values) == len(expected)
    for case, want in zip(values, expected):
        if case["kind"].startswith("float32"):
            assert f32_text(float32(float(case["value"]))) == want, case
        else:
            assert f64_text(float(case["value"])) == want, case
