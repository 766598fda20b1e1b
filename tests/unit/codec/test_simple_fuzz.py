"""Fuzzing the simple decoder: random and mutated inputs for a fixed budget may only raise DecodeError."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from sparkcdc.codec.base import Message
from sparkcdc.codec.simple.decoder import SimpleDecoder
from sparkcdc.errors import DecodeError
from sparkcdc.model import DDLAction, DDLEvent, RowChange, RowOp

from .simple_support import all_types_table, codec

ITERATIONS = 3000
TIME_BUDGET_S = 6.0
VERSION = 450253245263380481

_ROW = (
    1,
    200,
    2**64 - 1,
    1e10,
    1234567.5,
    Decimal("-12.50"),
    'a"b',
    "line1\nline2<&>",
    b"\x00\xffA",
    None,
    "0000-00-00",
    "2024-03-11 08:51:01.461",
    "2020-02-20 10:20:20",
    "-838:59:59",
    2020,
    2,
    3,
    65,
    '{"key1": "value1"}',
    1,
)


def _corpus(fmt: str) -> list[bytes]:
    table = all_types_table(VERSION)
    enc, _ = codec(fmt)
    rows = [
        RowChange(VERSION + 1, table, RowOp.INSERT, None, _ROW, 120),
        RowChange(VERSION + 2, table, RowOp.UPDATE, _ROW, _ROW, 120),
        RowChange(VERSION + 3, table, RowOp.DELETE, _ROW, None, 120),
    ]
    out = [enc.encode_bootstrap(table).value, enc.encode_watermark(VERSION + 9).value]
    out += [enc.encode_row(r).value for r in rows]
    out.append(
        enc.encode_ddl(DDLEvent(VERSION + 5, DDLAction.ADD_COLUMN, "ALTER", "test", "all_types", table, table)).value
    )
    out.append(enc.encode_ddl(DDLEvent(VERSION + 6, DDLAction.DROP_SCHEMA, "DROP DATABASE `d`", "d")).value)
    return out


_WRONG_VALUES: list[Any] = [None, 0, -1, 2**64, 2**70, 1.5, "", "x", "-0", [], {}, True, {"value": 1}, ["a"]]


def _json_mutation(rng: random.Random, data: bytes) -> bytes:
    """Replace, drop or add one member somewhere in the JSON tree."""
    doc = json.loads(data)
    containers: list[Any] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict | list):
            containers.append(node)
            for child in node.values() if isinstance(node, dict) else node:
                walk(child)

    walk(doc)
    node = rng.choice(containers)
    if isinstance(node, dict):
        action = rng.randrange(3)
        if action == 0 and node:
            del node[rng.choice(list(node))]
        elif action == 1 and node:
            node[rng.choice(list(node))] = rng.choice(_WRONG_VALUES)
        else:
            node[rng.choice(["zzz", "type", "version", "data", "old", "value"])] = rng.choice(_WRONG_VALUES)
    elif node:
        i = rng.randrange(len(node))
        if rng.random() < 0.5:
            node[i] = rng.choice(_WRONG_VALUES)
        else:
            del node[i]
    return json.dumps(doc).encode()


def _byte_mutation(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        pos = rng.randrange(len(b) + 1) if b else 0
        if op == 0:
            del b[pos:]
        elif op == 1 and b:
            b[min(pos, len(b) - 1)] ^= 1 << rng.randrange(8)
        elif op == 2:
            b[pos:pos] = bytes([rng.randrange(256)])
        elif op == 3 and b:
            del b[min(pos, len(b) - 1)]
        elif op == 4:
            b[pos:pos] = rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b'"', b"\\"])
        else:
            start = rng.randrange(len(b) + 1)
            b[pos:pos] = b[start : start + rng.randint(1, 16)]
    return bytes(b)


def _random_bytes(rng: random.Random, _: bytes) -> bytes:
    return bytes(rng.randrange(256) for _ in range(rng.randint(0, 64)))


def _fresh_decoder(fmt: str, corpus: list[bytes]) -> SimpleDecoder:
    _, dec = codec(fmt, **{"max-pending-dml": "20"})
    list(dec.decode(Message(None, corpus[0])))  # knows the table, so mutated rows reach value decoding
    return dec


@pytest.mark.parametrize("fmt", ["json", "avro"])
def test_fuzz_only_decode_errors(fmt: str) -> None:
    rng = random.Random(20261122)
    corpus = _corpus(fmt)
    mutators: list[Callable[[random.Random, bytes], bytes]] = [_byte_mutation, _random_bytes]
    if fmt == "json":
        mutators += [_json_mutation, _json_mutation]
    dec = _fresh_decoder(fmt, corpus)
    outcomes = {"ok": 0, "error": 0}
    deadline = time.monotonic() + TIME_BUDGET_S
    for i in range(ITERATIONS):
        if time.monotonic() > deadline:
            break
        if i % 50 == 0:
            dec = _fresh_decoder(fmt, corpus)
        data = rng.choice(mutators)(rng, rng.choice(corpus))
        try:
            list(dec.decode(Message(None, data)))
            outcomes["ok"] += 1
        except DecodeError as e:
            assert str(e).startswith("simple: "), str(e)
            assert "\n" not in str(e)
            outcomes["error"] += 1
    assert outcomes["error"] > 100  # the mutations really hit the error paths
    assert outcomes["ok"] > 10  # and some mutated inputs still decode


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"version":1,"type":"INSERT"', "not valid JSON"),
        (b"[1]", "message must be an object"),
        (b'{"version":1,"type":"WATERMARK","commitTs":"1","buildTs":1}', "commitTs must be an integer"),
        (b'{"version":1,"type":"WATERMARK","commitTs":1,"buildTs":1,"extra":1}', "unknown member extra"),
        (b'{"version":2,"type":"WATERMARK","commitTs":1,"buildTs":1}', "unsupported protocol version 2"),
        (b'{"version":1,"type":"NOPE","commitTs":1,"buildTs":1}', "unknown message type 'NOPE'"),
        (b'{"version":1,"type":"WATERMARK","buildTs":1}', "missing member commitTs"),
        (b'{"version":1,"type":"BOOTSTRAP","commitTs":0,"buildTs":1}', "without tableSchema"),
        (b'{"version":1,"type":"WATERMARK","commitTs":1,"buildTs":1,"data":{}}', "WATERMARK message must not"),
        (b'{"version":1,"type":"QUERY","sql":"\xff","commitTs":1,"buildTs":1}', "not valid JSON"),
    ],
)
def test_malformed_json_names_the_field(data: bytes, message: str) -> None:
    _, dec = codec("json")
    with pytest.raises(DecodeError, match=message):
        list(dec.decode(Message(None, data)))


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("c_tinyint_u", "x", r"data\.c_tinyint_u must be a decimal integer string"),
        ("c_bigint_u", "18446744073709551616", r"data\.c_bigint_u is out of range"),
        ("id", 1, r"data\.id must be a decimal integer string"),
        ("c_float", "1e39", r"data\.c_float is out of FLOAT range"),
        ("c_decimal", "1e5", r"data\.c_decimal must be a DECIMAL string"),
        ("c_binary", "AP9", r"data\.c_binary must be a padded base64 string"),
        ("c_timestamp", "2020-01-01 00:00:00", r"data\.c_timestamp must be an object"),
        ("c_timestamp", {"location": "UTC", "value": 1}, r"data\.c_timestamp\.value must be a string"),
        ("nope", "1", r"data\.nope: unknown column of test\.all_types"),
    ],
)
def test_bad_values_name_the_column(column: str, value: Any, message: str) -> None:
    corpus = _corpus("json")
    dec = _fresh_decoder("json", corpus)
    doc = json.loads(corpus[2])
    doc["data"][column] = value
    with pytest.raises(DecodeError, match=message):
        list(dec.decode(Message(None, json.dumps(doc).encode())))


def test_avro_trailing_bytes_and_truncation() -> None:
    corpus = _corpus("avro")
    _, dec = codec("avro")
    with pytest.raises(DecodeError, match="trailing byte"):
        list(dec.decode(Message(None, corpus[1] + b"\x00")))
    with pytest.raises(DecodeError, match="bad Avro message bytes"):
        list(dec.decode(Message(None, corpus[2][:-3])))
