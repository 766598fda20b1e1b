"""Per-table line functions generated as Python source, the hot path of the canal-json encoder.

A generic loop over columns costs a dict build, a Python call per converted value and a loop iteration
per column; the generated function unpacks the row tuple into locals and builds the image with one dict
display whose values are inline expressions (``f"{a0:d}"``, ``a6.decode("latin-1")``), so a row costs
little more than the ``orjson.dumps`` of that dict.

The generated code never decides anything the generic path would decide differently: any exception it
raises (wrong value type, NULL in a NOT NULL column, wrong row width) makes the caller re-encode the row on
the checked path, which either writes what TiCDC writes or raises EncodeError.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import orjson

from sparkcdc.codec.canal_json.values import f32_text, f64_text, is_binary_column_type
from sparkcdc.model import ColumnInfo, RowChange, RowOp
from sparkcdc.model.column_type import INTEGER_TYPES

LineFunction = Callable[[RowChange, bytes, bytes], bytes]
TypesLookup = Callable[[tuple[bool, ...]], bytes]

_INT_LIKE = INTEGER_TYPES | {"year", "bit", "enum", "set"}
_MAX_TABLED_PROMOTIONS = 6


def _decimal(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Decimal):
        return format(value, "f")
    raise TypeError(f"{type(value).__name__} in a DECIMAL column")


def _integer(value: Any) -> str:
    if isinstance(value, int):
        return int.__repr__(value)
    raise TypeError(f"{type(value).__name__} in an integer column")


def _value_expr(column: ColumnInfo, var: str) -> str:
    kind = column.type
    if kind in _INT_LIKE:
        expr = f"(str({var}) if {var}.__class__ is int else _integer({var}))"
    elif kind == "double":
        expr = f"_f64({var})"
    elif kind == "float":
        expr = f"_f32({var})"
    elif kind == "decimal":
        # str() is 4x faster than format(x, "f") but uses an exponent for tiny scales (0E-10, 1E-7)
        fast = f'(_s if "E" not in (_s := str({var})) else _decimal({var}))'
        expr = f"({fast} if {var}.__class__ is _Decimal else _decimal({var}))"
    elif is_binary_column_type(kind):
        expr = f'{var}.decode("latin-1")'
    else:
        return var  # already text (checked with one class test, see compile_line)
    # NOT NULL columns skip the test: a None there raises and the checked path writes null.
    return f"(None if {var} is None else {expr})" if column.nullable else expr


def compile_line(
    *,
    width: int,
    columns: Sequence[tuple[int, ColumnInfo]],
    heads: dict[RowOp, bytes],
    constant_types: bytes | None,
    types_lookup: TypesLookup,
    types_cache: dict[tuple[bool, ...], bytes],
    promotions: Sequence[tuple[int, int]],
    delete_full: bool,
    update_full: bool,
    fallback: LineFunction,
    long_bf: Callable[[bytes], bytes],
) -> LineFunction:
    """Generate ``line(row, mid, tail) -> bytes`` for one table.

    ``columns``: (row position, column) of the written columns in order; ``promotions``: (row position,
    threshold) of unsigned integer columns whose java type depends on the value; ``types_lookup`` maps the
    tuple of "value above threshold" flags to the sqlType/mysqlType fragment. ``update_full=False`` writes
    only changed columns in ``old``. DELETE goes to ``fallback`` unless ``delete_full``, as do zero-width
    tables.
    ``long_bf`` rewrites BS/FF escapes of a line; ``<``, ``>``, ``&``, U+2028/9 are left to the caller.
    """
    if width == 0:
        return fallback
    # Text columns are passed to orjson as they are (an int there would become a JSON number, so the class is
    # checked). orjson writes BS/FF as \\b/\\f where easyjson writes \\u0008/\\u000c; searching every
    # output for those two-byte escapes is slow (many backslashes), so the few values that can hold BS/FF
    # (text and binary) are tested with single-character searches and only flagged lines are rewritten.
    text_positions = [i for i, c in columns if _value_expr(c, "x") == "x"]
    binary_positions = [i for i, c in columns if is_binary_column_type(c.type)]

    def image(prefix: str) -> str:
        items = ", ".join(f"{c.name!r}: {_value_expr(c, f'{prefix}{i}')}" for i, c in columns)
        return "_dumps({" + items + "})"

    def types(prefix: str) -> tuple[list[str], str]:
        """Statements computing the sqlType/mysqlType fragment, and the expression naming it."""
        if constant_types is not None:
            return [], "_types"
        tests = [f"({prefix}{i} is not None and {prefix}{i} > {threshold})" for i, threshold in promotions]
        if len(tests) <= _MAX_TABLED_PROMOTIONS:  # index a table of every pattern: no tuple, no dict lookup
            index = " | ".join(test if j == 0 else f"({test} << {j})" for j, test in enumerate(tests))
            return [], f"_types_table[{index}]"
        return [f"    _k = ({', '.join(tests)},)", "    _t = _types_cache.get(_k) or _types_lookup(_k)"], "_t"

    def unpack(prefix: str, image_of: str) -> list[str]:
        names = ", ".join(f"{prefix}{i}" for i in range(width))
        lines = [f"    {names}, = row.{image_of}"]
        for i in text_positions:
            x = f"{prefix}{i}"
            lines += [
                f"    if {x} is not None:",
                f"      if {x}.__class__ is not str: raise TypeError('non-text value in a text column')",
                f"      if '\\x08' in {x} or '\\x0c' in {x}: _bf = True",
            ]
        for i in binary_positions:
            x = f"{prefix}{i}"
            # int needles take bytes' memchr path; a bytes needle goes through the buffer protocol (4x slower)
            lines.append(f"    if {x} is not None and (8 in {x} or 12 in {x}): _bf = True")
        return lines

    def ret(parts: str) -> list[str]:
        return [f"    _line = _join(({parts}))", "    return _long_bf(_line) if _bf else _line"]

    setup, fragment = types("a")
    src = ["def line(row, mid, tail):", "  op = row.op", "  _bf = False", "  if op is _INSERT:"]
    src += unpack("a", "after") + setup
    src += ret(f"_h_insert, mid, {fragment}, b'null,\"data\":[', {image('a')}, tail")
    if delete_full:
        src.append("  if op is _DELETE:")
        src += unpack("a", "before") + setup
        src += ret(f"_h_delete, mid, {fragment}, b'null,\"data\":[', {image('a')}, tail")
    src.append("  if op is _UPDATE:")
    src += unpack("a", "after") + unpack("b", "before") + setup
    if update_full:
        src += ret(f"_h_update, mid, {fragment}, b'[', {image('b')}, b'],\"data\":[', {image('a')}, tail")
    else:  # only-output-updated-columns: 'old' keeps the columns whose value changed (Go compares values)
        src.append("    _o = {}")
        for i, c in columns:
            src.append(f"    if b{i} != a{i}: _o[{c.name!r}] = {_value_expr(c, f'b{i}')}")
        src += ret(f"_h_update, mid, {fragment}, b'[', _dumps(_o), b'],\"data\":[', {image('a')}, tail")
    src.append("  return _fallback(row, mid, tail)")
    namespace: dict[str, Any] = {
        "_dumps": orjson.dumps,
        "_join": b"".join,
        "_f64": f64_text,
        "_f32": f32_text,
        "_Decimal": Decimal,
        "_decimal": _decimal,
        "_integer": _integer,
        "_types_cache": types_cache,
        "_types_table": [
            types_lookup(tuple(bool(m >> j & 1) for j in range(len(promotions)))) for m in range(1 << len(promotions))
        ]
        if 0 < len(promotions) <= _MAX_TABLED_PROMOTIONS
        else [],
        "_types": constant_types,
        "_types_lookup": types_lookup,
        "_fallback": fallback,
        "_long_bf": long_bf,
        "_INSERT": RowOp.INSERT,
        "_DELETE": RowOp.DELETE,
        "_UPDATE": RowOp.UPDATE,
        "_h_insert": heads[RowOp.INSERT],
        "_h_delete": heads[RowOp.DELETE],
        "_h_update": heads[RowOp.UPDATE],
    }
    exec(compile("\n".join(src), "<canal-json line>", "exec"), namespace)  # names are repr() literals
    function: LineFunction = namespace["line"]
    return function
