"""Every vector of ``spec/vectors/csv.json``, byte for byte, each its own test case."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest

from sparkcdc.codec.csv.config import CsvConfig
from sparkcdc.codec.csv.decoder import CsvDecoder
from sparkcdc.codec.csv.encoder import CsvEncoder, _Compiler
from sparkcdc.codec.csv.message import CsvValue, encode_message, escape_field, header_line, quote_field
from sparkcdc.codec.gofmt import float32
from sparkcdc.model import ColumnInfo, IndexInfo, RowChange, RowOp, TableInfo
from sparkcdc.model.events import split_key_updates
from sparkcdc.model.table import with_handle_keys
from tests import vectors

FAMILIES = (
    "csv-encode-",
    "csv-quote-",
    "csv-escape-",
    "csv-header-",
    "csv-value-",
    "csv-integration-",
    "csv-decoder-input",
    "csv-derived-",
)


def test_every_vector_belongs_to_a_tested_family() -> None:
    ids = [v["id"] for v in vectors.load("csv")]
    assert len(ids) == 55
    assert [i for i in ids if not i.startswith(FAMILIES)] == []


def _csv_value(raw: Any) -> CsvValue:
    """A vector column: null, a string, or ``{"non_string_value": "<Go %v text>"}``."""
    if isinstance(raw, dict):
        text = raw["non_string_value"]
        return int(text) if re.fullmatch(r"-?[0-9]+", text) else float(text)
    assert raw is None or isinstance(raw, str)
    return raw


@pytest.mark.parametrize("vector", vectors.params("csv", "csv-encode-"))
def test_message_encode(vector: dict[str, Any]) -> None:
    inp = vector["input"]
    cfg = CsvConfig.from_options(inp["config"])
    out = encode_message(
        cfg,
        inp["op"],
        inp["table"],
        inp["schema"],
        inp["commit_ts"],
        [_csv_value(c) for c in inp["columns"]],
        [_csv_value(c) for c in inp["pre_columns"]],
        inp["handle_key"],
    )
    assert out.encode("utf-8") == vector["expected"]["bytes"].encode("utf-8")


@pytest.mark.parametrize("vector", vectors.params("csv", "csv-quote-"))
def test_quote_field(vector: dict[str, Any]) -> None:
    inp = vector["input"]
    assert quote_field(inp["value"], inp["quote"]) == vector["expected"]["field"]
    # the compiled encoder expression agrees with the reference function
    cfg = CsvConfig.from_options({"quote": inp["quote"]})
    assert _compiled_text_field(cfg, inp["value"]) == vector["expected"]["field"]


@pytest.mark.parametrize("vector", vectors.params("csv", "csv-escape-"))
def test_escape_field(vector: dict[str, Any]) -> None:
    inp, expected = vector["input"], vector["expected"]
    want = bytes.fromhex(expected["field_hex"]) if "field_hex" in expected else expected["field"].encode("utf-8")
    assert escape_field(inp["value"], inp["delimiter"]).encode("utf-8") == want
    cfg = CsvConfig.from_options({"quote": "", "delimiter": inp["delimiter"]})
    assert _compiled_text_field(cfg, inp["value"]).encode("utf-8") == want


def _compiled_text_field(cfg: CsvConfig, value: str) -> str:
    fn = _Compiler(cfg).compile("f", [(0, ColumnInfo("c", "varchar"))])
    text = fn((value,))
    assert text.startswith(cfg.delimiter)
    return text[len(cfg.delimiter) :]


@pytest.mark.parametrize("vector", vectors.params("csv", "csv-header-"))
def test_header(vector: dict[str, Any]) -> None:
    inp = vector["input"]
    options = {k: inp[k] for k in ("include_commit_ts", "delimiter", "terminator")}
    if "output_old_value" in inp:
        options["output_old_value"] = inp["output_old_value"]
    cfg = CsvConfig.from_options(options)
    if "column_names" in inp:
        assert header_line(cfg, inp["column_names"]) == vector["expected"]["header"]
        return
    # csv-header-batch: the encoder's file header for ``create table test.table1(col1 int primary key)``
    table = TableInfo("test", "table1", 1, (ColumnInfo("col1", "int", primary_key=True, handle_key=True),))
    encoder = CsvEncoder(CsvConfig.from_options({**options, "output-field-header": True}))
    assert encoder.file_header(table) == (vector["expected"]["header_line"] + inp["terminator"]).encode()
    assert CsvEncoder(cfg).file_header(table) == b""


# Python model value for each fromColValToCsvVal vector (the Go value written in the vector's text).
VALUE_INPUTS: dict[str, tuple[ColumnInfo, Any, str]] = {
    "csv-value-26-TypeTiny": (ColumnInfo("c", "tinyint"), 1, "base64"),
    "csv-value-27-TypeLonglong": (ColumnInfo("c", "bigint", unsigned=True), 1, "base64"),
    "csv-value-28-TypeFloat": (ColumnInfo("c", "float"), float32(3.14), "base64"),
    "csv-value-29-TypeDouble": (ColumnInfo("c", "double"), 3.14, "base64"),
    "csv-value-30-TypeBit": (ColumnInfo("c", "bit", length=10), 683, "base64"),
    "csv-value-31-TypeNewDecimal": (
        ColumnInfo("c", "decimal", length=14, decimal=7),
        Decimal("129012.1230000"),
        "base64",
    ),
    "csv-value-32-TypeTinyBlob": (ColumnInfo("c", "tinytext"), "hello world", "base64"),
    "csv-value-33-TypeJSON": (ColumnInfo("c", "json"), '{"key": "value"}', "base64"),
    "csv-value-34-BLOB": (ColumnInfo("c", "blob"), b"hello world", "base64"),
    "csv-value-35-BLOB": (ColumnInfo("c", "blob"), b"hello world", "hex"),
    "csv-value-36-TypeEnum": (ColumnInfo("c", "enum", elements=("a,", "b")), 1, "base64"),
    "csv-value-37-TypeSet": (ColumnInfo("c", "set", elements=("a", "b", "c", "d")), 9, "base64"),
    "csv-value-38-TypeDate": (ColumnInfo("c", "date"), "2000-01-01", "base64"),
    "csv-value-39-TypeDatetime": (ColumnInfo("c", "datetime"), "2015-12-20 23:58:58", "base64"),
    "csv-value-40-TypeTimestamp": (ColumnInfo("c", "timestamp"), "1973-12-30 15:30:00", "base64"),
    "csv-value-41-TypeDuration": (ColumnInfo("c", "time"), "23:59:59", "base64"),
    "csv-value-42-TypeYear": (ColumnInfo("c", "year", unsigned=True), 1970, "base64"),
    "csv-value-43-TypeTiDBVectorFloat32": (ColumnInfo("c", "vector"), "[1,2,3,4,5]", "base64"),
}


@pytest.mark.parametrize("vector", vectors.params("csv", "csv-value-"))
def test_column_value(vector: dict[str, Any]) -> None:
    col, value, method = VALUE_INPUTS[vector["id"]]
    expected: str = vector["expected"]["csv_value"]
    text, _, note = expected.partition(" (")
    unquoted = "unquoted" in note
    string = text[1:-1] if text.startswith('"') and text.endswith('"') and not unquoted else text
    cfg = CsvConfig.from_options({"binary-encoding-method": method, "delimiter": "|"})
    table = TableInfo("db", "t", 1, (col,))
    field = CsvEncoder(cfg).encode_txn([RowChange(1, table, RowOp.INSERT, None, (value,))]).decode()
    field = field.removeprefix('"I"|"t"|"db"|').removesuffix("\r\n")
    # strings are quoted (doubling any quote inside), non-strings never
    assert field == (text if unquoted else quote_field(string, '"'))
    decoded = list(CsvDecoder(cfg).decode_file(f'"I"|"t"|"db"|{field}\r\n'.encode(), table))
    assert decoded[0].after == (value,)


INTEGRATION_TABLES = {
    "update_pk": (("id", "int"), ("pad", "varchar")),
    "update_uk": (("id", "int"), ("uk", "int"), ("pad", "varchar")),
}
INTEGRATION_CONFIGS = {  # conf/changefeedN.toml: (output-old-value, output-raw-change-event)
    "changefeed1": (False, False),
    "changefeed2": (True, True),
    "changefeed3": (False, True),
    "changefeed4": (True, False),
}


def _integration_table(name: str) -> TableInfo:
    columns = tuple(ColumnInfo(n, t, nullable=False) for n, t in INTEGRATION_TABLES[name])
    indexes = [IndexInfo("PRIMARY", ("id",), primary=True)]
    if name == "update_uk":
        indexes.append(IndexInfo("uk", ("uk",), unique=True))
    return TableInfo("test", name, 1, with_handle_keys(columns, tuple(indexes)))


def _integration_txns(table: TableInfo) -> list[list[RowChange]]:
    """prepare.sql + run.sql of csv_storage_update_pk_clustered as TiKV reports them (a clustered PK change
    already arrives as DELETE + INSERT; a changed UK arrives as UPDATE)."""
    t0, t1 = 450253245302439944, 450253245485940746
    if table.table == "update_uk":
        t0, t1 = 450253245446619144, 450253245499047940

    def row(*ids: int) -> tuple[Any, ...]:
        key, pad = ids[0], ids[-1]
        vals: tuple[Any, ...] = (key,) if table.table == "update_pk" else (key, ids[1])
        return (*vals, f"example{pad}")

    def ins(ts: int, r: tuple[Any, ...]) -> RowChange:
        return RowChange(ts, table, RowOp.INSERT, None, r)

    def upd(ts: int, b: tuple[Any, ...], a: tuple[Any, ...]) -> RowChange:
        return RowChange(ts, table, RowOp.UPDATE, b, a)

    def dele(ts: int, r: tuple[Any, ...]) -> RowChange:
        return RowChange(ts, table, RowOp.DELETE, r, None)

    txns = [
        [ins(t0, row(1, 1, 1)), ins(t0, row(2, 2, 2))],
        [ins(t0 + 2, row(10, 10, 10)), ins(t0 + 2, row(20, 20, 20))],
        [ins(t0 + 3, row(100, 100, 100))],
        [ins(t0 + 4, row(1000, 1000, 1000))],
    ]
    if table.table == "update_pk":
        txns += [
            [upd(t1, row(1, 1), row(1, 2)), upd(t1, row(2, 2), row(2, 1))],
            [dele(t1 + 3, row(10, 10)), dele(t1 + 3, row(20, 20)), ins(t1 + 3, row(30, 10)), ins(t1 + 3, row(40, 20))],
            [dele(t1 + 6, row(100, 100)), ins(t1 + 6, row(200, 100))],
            [upd(t1 + 7, row(1000, 1000), row(1000, 1001))],
        ]
    else:
        t2 = 450253245512155140
        txns += [
            [upd(t1, row(1, 1, 1), row(1, 2, 1)), upd(t1, row(2, 2, 2), row(2, 1, 2))],
            [upd(t1 + 3, row(10, 10, 10), row(10, 30, 10)), upd(t1 + 3, row(20, 20, 20), row(20, 40, 20))],
            [upd(t1 + 6, row(100, 100, 100), row(100, 200, 100))],
            [upd(t2, row(1000, 1000, 1000), row(1000, 1000, 1001))],
        ]
    return txns


@pytest.mark.parametrize("vector", vectors.params("csv", "csv-integration-"))
def test_integration_reference_output(vector: dict[str, Any]) -> None:
    match = re.fullmatch(r"csv-integration-(changefeed\d)-(pk|uk)", vector["id"])
    assert match is not None
    old_value, raw_change_event = INTEGRATION_CONFIGS[match.group(1)]
    table = _integration_table(f"update_{match.group(2)}")
    cfg = CsvConfig.from_options({"include-commit-ts": True, "terminator": "\n", "output-old-value": old_value})
    encoder = CsvEncoder(cfg)
    data = b"".join(
        encoder.encode_txn(txn if raw_change_event else split_key_updates(txn)) for txn in _integration_txns(table)
    )
    assert data.decode().splitlines() == vector["expected"]["rows"]
    # and the decoder reads the reference file back
    decoded = list(CsvDecoder(cfg).decode_file(data, table, source="ref.csv"))
    updates = sum(1 for r in vector["expected"]["rows"] if ",true," in r) // 2
    assert sum(1 for r in decoded if r.op is RowOp.UPDATE) == updates


@pytest.mark.parametrize("vector", vectors.params("csv", "csv-decoder-input"))
def test_decoder_input(vector: dict[str, Any]) -> None:
    columns = (
        ColumnInfo("Id", "int"),
        ColumnInfo("LastName", "varchar", length=255),
        ColumnInfo("FirstName", "varchar", length=255),
        ColumnInfo("HireDate", "date"),
        ColumnInfo("OfficeLocation", "varchar", length=255),
    )
    table = TableInfo("hr", "employee", 1, columns)
    cfg = CsvConfig.from_options(vector["input"]["config"])
    data = vector["expected"]["file_content"].encode()
    rows = list(CsvDecoder(cfg).decode_file(data, table, source="hr/employee/1/CDC000001.csv"))
    assert len(rows) == vector["expected"]["rows_decoded"]
    assert [r.op for r in rows] == [RowOp.INSERT, RowOp.INSERT, RowOp.DELETE, RowOp.INSERT, RowOp.INSERT]
    assert rows[0] == RowChange(
        433305438660591626, table, RowOp.INSERT, None, (101, "Smith", "Bob", "2014-06-04", "New York")
    )
    assert rows[2].before == (101, "Smith", "Bob", "2017-03-13", "Dallas")
    assert rows[4].after == (102, "Alex", "Alice", "2018-06-15", "Beijing")
    # encoding the decoded rows gives the file back, except that U rows (decoded as upserts) become I
    again = CsvEncoder(cfg).encode_txn(rows).decode()
    assert again == vector["expected"]["file_content"].replace('"U"', '"I"')


def _all_types_table_and_row() -> tuple[TableInfo, tuple[Any, ...]]:
    canal = next(v for v in vectors.load("canal_json") if v["id"] == "canal-derived-all-types-insert")
    ddl = canal["input"]["ddl"]
    columns = []
    values: list[Any] = []
    for c in canal["input"]["columns"]:
        type_name = c["mysql_type"].split()[0]
        elements: tuple[str, ...] = ()
        if type_name in ("enum", "set"):
            m = re.search(rf"{c['name']} {type_name}\(([^)]*)\)", ddl)
            assert m is not None
            elements = tuple(e.strip("'") for e in m.group(1).split(","))
        decimal = 2 if type_name == "decimal" else 3 if c["name"] == "c_datetime" else None
        columns.append(
            ColumnInfo(
                c["name"],
                type_name,
                unsigned=bool(c.get("unsigned")),
                primary_key=bool(c.get("pk")),
                handle_key=bool(c.get("handle")),
                elements=elements,
                decimal=decimal,
            )
        )
        new = c["new"]
        if isinstance(new, dict):
            new = bytes.fromhex(new["hex"])
            if type_name not in ("varbinary", "binary", "blob"):
                new = new.decode()
        elif type_name == "decimal":
            new = Decimal(new)
        values.append(new)
    return TableInfo("test", "all_types", 1, tuple(columns)), tuple(values)


@pytest.mark.parametrize("vector", vectors.params("csv", "csv-derived-"))
def test_derived(vector: dict[str, Any]) -> None:
    inp = vector["input"]
    if vector["id"] == "csv-derived-all-types-default-config":
        table, row = _all_types_table_and_row()
        cfg = CsvConfig.from_options({"include-commit-ts": True})
        commit_ts = inp["commit_ts"]
    else:
        # six text columns and one VARBINARY written as hex
        cfg = CsvConfig.from_options({**inp["config"], "binary-encoding-method": "hex"})
        names = [f"c{i}" for i in range(len(inp["values"]))]
        columns = (*(ColumnInfo(n, "varchar") for n in names[:-1]), ColumnInfo(names[-1], "varbinary"))
        table = TableInfo("db", "t", 1, columns)
        row = (*inp["values"][:-1], bytes.fromhex(inp["values"][-1]))
        commit_ts = 1
    change = RowChange(commit_ts, table, RowOp.INSERT, None, row)
    data = CsvEncoder(cfg).encode_txn([change])
    assert data == vector["expected"]["bytes"].encode("utf-8")
    assert list(CsvDecoder(cfg).decode_file(data, table)) == [
        RowChange(commit_ts if cfg.include_commit_ts else 0, table, RowOp.INSERT, None, row)
    ]
