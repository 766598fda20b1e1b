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
Extend = Callable[[tuple[bytes, ...]], None]
# emit(row, mid, tail, extend): extends the caller's list with the line's parts (no per-line join)
EmitFunction = Callable[[RowChange, bytes, bytes, Extend], None]
MidTail = Callable[[int], tuple[bytes, bytes]]
# emit_txn(rows, table, mid_tail, extend) -> False at a row of another table (output then incomplete)
EmitTxnFunction = Callable[[Sequence[RowChange], Any, MidTail, Extend], bool]
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
        # Go 'f' formatting of a float in 1e-4 <= |v| < 1e6: orjson's shortest digits, written positionally
        # there, minus a trailing ".0"; anything else (other ranges, non-floats) goes through _f64.
        inline = f'(_s[:-2] if (_s := _dumps({var}).decode())[-2:] == ".0" else _s)'
        test = f"{var}.__class__ is _float and (1e-4 <= {var} < 1e6 or -1e6 < {var} <= -1e-4)"
        expr = f"({inline} if {test} else _f64({var}))"
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
    checked: LineFunction,
    long_bf: Callable[[bytes], bytes],
) -> tuple[LineFunction, EmitFunction, EmitTxnFunction]:
    """Generate ``line(row, mid, tail) -> bytes`` and ``emit(row, mid, tail, extend)`` for one table.

    ``columns``: (row position, column) of the written columns in order; ``promotions``: (row position,
    threshold) of unsigned integer columns whose java type depends on the value; ``types_lookup`` maps the
    tuple of "value above threshold" flags to the sqlType/mysqlType fragment. ``update_full=False`` writes
    only changed columns in ``old``. DELETE goes to ``fallback`` unless ``delete_full``, as do zero-width
    tables. ``emit_txn`` is ``emit`` inlined in a loop over a transaction's rows (no call per row); a row
    the generated code cannot write goes to ``checked`` (which writes it or raises EncodeError).
    ``long_bf`` rewrites BS/FF escapes of a line; ``<``, ``>``, ``&``, U+2028/9 are left to the caller.
    """
    if width == 0:

        def emit_fallback(row: RowChange, mid: bytes, tail: bytes, extend: Extend) -> None:
            extend((fallback(row, mid, tail),))

        def emit_txn_fallback(rows: Sequence[RowChange], table: Any, mid_tail: MidTail, extend: Extend) -> bool:
            for row in rows:
                if row.table is not table:
                    return False
                extend((fallback(row, *mid_tail(row.commit_ts)),))
            return True

        return fallback, emit_fallback, emit_txn_fallback
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

    def finish(head: str, fragment: str, old: str | None, new: str, emit: bool) -> list[str]:
        """Dump the image(s), fix BS/FF in them when flagged, then return or emit the line's parts."""
        lines = [f"    _d = {new}"]
        fix = "    if _bf: _d = _long_bf(_d)"
        if old is None:
            parts = f"{head}, mid, {fragment}, b'null,\"data\":[', _d, tail"
        else:
            lines.append(f"    _o = {old}")
            fix += "; _o = _long_bf(_o)"
            parts = f"{head}, mid, {fragment}, b'[', _o, b'],\"data\":[', _d, tail"
        lines.append(fix)
        lines.append(f"    _extend(({parts}))" if emit else f"    return _join(({parts}))")
        return lines

    def source(emit: bool) -> list[str]:
        setup, fragment = types("a")
        signature = "def emit(row, mid, tail, _extend):" if emit else "def line(row, mid, tail):"
        src = [signature, "  op = row.op", "  _bf = False", "  if op is _INSERT:"]
        src += unpack("a", "after") + setup + finish("_h_insert", fragment, None, image("a"), emit)
        if emit:
            src.append("    return")
        if delete_full:
            src.append("  if op is _DELETE:")
            src += unpack("a", "before") + setup + finish("_h_delete", fragment, None, image("a"), emit)
            if emit:
                src.append("    return")
        src.append("  if op is _UPDATE:")
        src += unpack("a", "after") + unpack("b", "before") + setup
        if update_full:
            src += finish("_h_update", fragment, image("b"), image("a"), emit)
        else:  # only-output-updated-columns: 'old' keeps the columns whose value changed (Go compares values)
            src.append("    _changed = {}")
            for i, c in columns:
                src.append(f"    if b{i} != a{i}: _changed[{c.name!r}] = {_value_expr(c, f'b{i}')}")
            src += finish("_h_update", fragment, "_dumps(_changed)", image("a"), emit)
        if emit:
            src += ["    return", "  _extend((_fallback(row, mid, tail),))"]
        else:
            src.append("  return _fallback(row, mid, tail)")
        return src

    namespace: dict[str, Any] = {
        "_dumps": orjson.dumps,
        "_join": b"".join,
        "_f64": f64_text,
        "_float": float,
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
        "_checked": checked,
        "_ERRORS": (TypeError, ValueError, AttributeError, OverflowError),
        "_long_bf": long_bf,
        "_INSERT": RowOp.INSERT,
        "_DELETE": RowOp.DELETE,
        "_UPDATE": RowOp.UPDATE,
        "_h_insert": heads[RowOp.INSERT],
        "_h_delete": heads[RowOp.DELETE],
        "_h_update": heads[RowOp.UPDATE],
    }

    def txn_source() -> list[str]:
        """emit's body inside the loop: ``return`` becomes ``continue``, failures go to the checked path."""
        body = source(emit=True)[1:]
        body = [line.replace("return", "continue") if line.strip() == "return" else line for line in body]
        return [
            "def emit_txn(rows, table, mid_tail, _extend):",
            "  cts = None",
            "  for row in rows:",
            "   if row.table is not table: return False",
            "   if row.commit_ts != cts: cts = row.commit_ts; mid, tail = mid_tail(cts)",
            "   try:",
            *("   " + line for line in body),
            "   except _ERRORS:",
            "    _extend((_checked(row, mid, tail),))",
            "  return True",
        ]

    src = source(emit=False) + source(emit=True) + txn_source()
    exec(compile("\n".join(src), "<canal-json line>", "exec"), namespace)  # names are repr() literals
    return namespace["line"], namespace["emit"], namespace["emit_txn"]
