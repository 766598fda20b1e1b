"""Spec vectors of the simple protocol (``spec/vectors/simple.json``), byte for byte."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from sparkcdc.codec.base import Message
from sparkcdc.codec.simple import table_schema
from sparkcdc.codec.simple.message import Checksum, go_json_dumps
from sparkcdc.errors import DecodeError
from sparkcdc.model import (
    BootstrapEvent,
    ColumnInfo,
    DDLAction,
    DDLEvent,
    IndexInfo,
    ResolvedEvent,
    RowChange,
    RowOp,
)
from tests import vectors

from .simple_support import (
    PER_TYPE_COLUMNS,
    Clock,
    all_types_table,
    codec,
    make_table,
    user_table,
    vector_value,
)


def _doc_row(doc: dict[str, Any]) -> RowChange:
    table = user_table(doc["schemaVersion"])
    op = RowOp(doc["type"])

    def image(raw: dict[str, str] | None) -> tuple[Any, ...] | None:
        if raw is None:
            return None
        return (int(raw["id"]), raw["name"], int(raw["age"]), float(raw["score"]))

    return RowChange(doc["commitTs"], table, op, image(doc.get("old")), image(doc.get("data")), doc["tableID"])


def _encode_doc(v: dict[str, Any]) -> bytes:
    doc = v["input"]["doc_example"]
    enc, _ = codec("json", Clock(doc["buildTs"]))
    if doc["type"] in ("INSERT", "UPDATE", "DELETE"):
        return enc.encode_row(_doc_row(doc)).value
    if doc["type"] == "WATERMARK":
        return enc.encode_watermark(doc["commitTs"]).value
    if doc["type"] == "BOOTSTRAP":
        return enc.encode_bootstrap(user_table(doc["tableSchema"]["version"], name="new_user")).value
    pre = user_table(doc["preTableSchema"]["version"])
    post = user_table(doc["tableSchema"]["version"], with_create_time=True)
    ddl = DDLEvent(doc["commitTs"], DDLAction.ADD_COLUMN, doc["sql"], "simple", "user", post, pre)
    return enc.encode_ddl(ddl).value


def _encode_case1(v: dict[str, Any]) -> bytes:
    table = make_table(
        "test",
        "t1",
        0,
        [
            ColumnInfo("id", "int", nullable=False),
            ColumnInfo("name", "varchar", length=64, nullable=False),
            ColumnInfo("age", "int"),
            ColumnInfo("email", "varchar", length=255, nullable=False),
        ],
        [
            IndexInfo("PRIMARY", ("id",), primary=True, unique=True),
            IndexInfo("idx_name", ("name",), unique=True),
            IndexInfo("idx_age_email", ("age", "email")),
        ],
    )
    enc, _ = codec("json")
    return enc.table_schema_json(table)


def _encode_all_types(v: dict[str, Any]) -> bytes:
    inp = v["input"]
    canal = next(c for c in vectors.load("canal_json") if c["id"] == "canal-derived-all-types-insert")
    table = all_types_table(inp["schema_version"])
    values = {c["name"]: vector_value(c) for c in canal["input"]["columns"]}
    row = RowChange(
        inp["commit_ts"], table, RowOp.INSERT, None, tuple(values[c.name] for c in table.columns), inp["table_id"]
    )
    enc, _ = codec("json", Clock(inp["build_ts_ms"]), **{"time-zone": inp["server_tz"]})
    return enc.encode_row(row).value


def _encode_watermark(v: dict[str, Any]) -> bytes:
    enc, _ = codec("json", Clock(v["input"]["build_ts_ms"]))
    return enc.encode_watermark(v["input"]["ts"]).value


def _encode_drop_database(v: dict[str, Any]) -> bytes:
    enc, _ = codec("json", Clock(1717579824000))
    ddl = DDLEvent(v["input"]["commit_ts"], DDLAction.DROP_SCHEMA, v["input"]["sql"], "d")
    return enc.encode_ddl(ddl).value


def claim_check_row() -> RowChange:
    table = make_table(
        "test",
        "t",
        120,
        [ColumnInfo("id", "int", nullable=False), ColumnInfo("payload", "longtext")],
        [IndexInfo("PRIMARY", ("id",), primary=True, unique=True)],
        450253245263380481,
    )
    return RowChange(450253245302439944, table, RowOp.UPDATE, (1, "x" * 100), (1, "y" * 100), 120)


def _encode_claim_check(v: dict[str, Any]) -> bytes:
    enc, _ = codec("json", Clock(1717579824000), **{"enable-row-checksum": "true"})
    return enc.encode_dml(
        claim_check_row(),
        handle_key_only=True,
        claim_check_location="s3://bucket/claim-check/5d3b4c1e-0000-4000-8000-000000000000.json",
        checksum=Checksum(version=0, corrupted=False, current=3252279936, previous=1786312722),
    )


ENCODERS: dict[str, Callable[[dict[str, Any]], bytes]] = {
    "simple-doc-alter": _encode_doc,
    "simple-doc-insert": _encode_doc,
    "simple-doc-update": _encode_doc,
    "simple-doc-delete": _encode_doc,
    "simple-doc-watermark": _encode_doc,
    "simple-doc-bootstrap": _encode_doc,
    "simple-tableschema-newTableSchema-case1": _encode_case1,
    "simple-derived-all-types-insert": _encode_all_types,
    "simple-watermark": _encode_watermark,
    "simple-ddl-drop-database": _encode_drop_database,
    "simple-claim-check-handle-key-only-with-checksum": _encode_claim_check,
}


def _expected(v: dict[str, Any]) -> bytes:
    exp = v["expected"]
    return str(exp.get("bytes", exp.get("tableSchema"))).encode()


@pytest.mark.parametrize("v", vectors.params("simple"))
def test_vector_bytes(v: dict[str, Any]) -> None:
    if v["id"] == "simple-column-schema-per-type":
        decls = v["input"]["columns"]
        expected = v["expected"]["column_json"]
        assert len(decls) == len(expected)
        for decl, want in zip(decls, expected, strict=True):
            table = make_table("test", "t", 1, [PER_TYPE_COLUMNS[decl]], [])
            got = go_json_dumps(table_schema.to_json(table)["columns"][0])
            assert got.decode() == want, decl
        return
    assert v["id"] in ENCODERS, f"no encoder recipe for vector {v['id']}"
    assert ENCODERS[v["id"]](v) == _expected(v)


@pytest.mark.parametrize("v", [p for p in vectors.params("simple") if "bytes" in p.values[0]["expected"]])
def test_vector_decodes_and_reencodes(v: dict[str, Any]) -> None:
    """Every message vector decodes, and re-encoding the decoded events gives the same bytes."""
    expected = _expected(v)
    doc = json.loads(expected)
    enc, dec = codec("json", Clock(doc["buildTs"]), **{"enable-row-checksum": "true"})
    # Rows need their schema first: announce it as a bootstrap would.
    if doc["type"] in ("INSERT", "UPDATE", "DELETE"):
        if v["id"] == "simple-derived-all-types-insert":
            table = all_types_table(doc["schemaVersion"])
        elif v["id"].startswith("simple-claim-check"):
            table = claim_check_row().table
        else:
            table = user_table(doc["schemaVersion"])
        announced = list(dec.decode(enc.encode_bootstrap(table)))
        assert len(announced) == 1
        assert isinstance(announced[0], BootstrapEvent)
        assert table_schema.to_json(announced[0].table_info) == table_schema.to_json(table)
    if doc.get("handleKeyOnly"):
        with pytest.raises(DecodeError, match="claim-check reader"):
            list(dec.decode(Message(None, expected)))
        return
    events = list(dec.decode(Message(None, expected)))
    assert len(events) == 1
    event = events[0]
    if isinstance(event, RowChange):
        again = enc.encode_row(event).value
    elif isinstance(event, ResolvedEvent):
        again = enc.encode_watermark(event.ts).value
    elif isinstance(event, BootstrapEvent):
        again = enc.encode_bootstrap(event.table_info).value
    else:
        assert isinstance(event, DDLEvent)
        again = enc.encode_ddl(event).value
    assert again == expected
