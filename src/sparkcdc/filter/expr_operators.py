"""Operators of the expression filters beyond logic and comparison: LIKE and REGEXP, arithmetic, bitwise
operators and CAST, as TiDB evaluates them (``expr_compile`` dispatches to them by sqlglot node).

Arithmetic follows MySQL: integers stay integers (out of BIGINT's range is an error, as TiDB's), DECIMAL is
exact (``/`` adds 4 to the dividend's scale, ``div_precision_increment``), a double or a string makes it a
double; dividing by zero gives NULL. LIKE and REGEXP are case-sensitive: TiCDC compares binary (see
``expr_values``). LIKE's ``_`` matches one character.
"""

from __future__ import annotations

import functools
import math
import operator
import re
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from sparkcdc.filter.expr_errors import ExprEvalError, syntax_error
from sparkcdc.filter.expr_values import (
    BYTES,
    DATETIME,
    DECIMAL,
    DECIMAL_CONTEXT,
    DIV_PRECISION_INCREMENT,
    FLOAT,
    INT,
    INT_LIKE,
    NULL,
    STRING,
    TEMPORAL,
    TIME,
    Node,
    Row,
    check_int,
    coerced,
    constant,
    make_node,
)

if TYPE_CHECKING:
    from sparkcdc.filter.expr_compile import Compiler

_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod)
_BITWISE: dict[type[exp.Expression], Callable[[int, int], int]] = {
    exp.BitwiseAnd: operator.and_,
    exp.BitwiseOr: operator.or_,
    exp.BitwiseXor: operator.xor,
    exp.BitwiseLeftShift: lambda a, b: a << b if b < 64 else 0,
    exp.BitwiseRightShift: lambda a, b: a >> b if b < 64 else 0,
}
_U64 = (1 << 64) - 1
_BASIC: dict[type[exp.Expression], Callable[[Any, Any], Any]] = {
    exp.Add: operator.add,
    exp.Sub: operator.sub,
    exp.Mul: operator.mul,
}
_DECIMAL_BASIC: dict[type[exp.Expression], Callable[[Any, Any], Any]] = {
    exp.Add: DECIMAL_CONTEXT.add,
    exp.Sub: DECIMAL_CONTEXT.subtract,
    exp.Mul: DECIMAL_CONTEXT.multiply,
}


def like(c: Compiler, e: exp.Expression, esc: str = "\\") -> Node:
    value, pattern = c.build(e.this), c.build(e.expression)
    kind = BYTES if BYTES in (value.kind, pattern.kind) else STRING
    fv, fp = coerced(value, kind), coerced(pattern, kind)
    hit, miss = (0, 1) if e.args.get("negate") else (1, 0)
    if pattern.const:
        p = fp(())
        if p is None:
            return constant(None, INT)
        rx = _like_regex(p, esc)

        def run_const(row: Row) -> int | None:
            v = fv(row)
            return None if v is None else (hit if rx.fullmatch(v) else miss)

        return make_node(run_const, INT, value, pattern)

    def run(row: Row) -> int | None:
        v, q = fv(row), fp(row)
        if v is None or q is None:
            return None
        return hit if _like_regex(q, esc).fullmatch(v) else miss

    return make_node(run, INT, value, pattern)


def escape(c: Compiler, e: exp.Expression) -> Node:
    pattern, char = e.this, e.expression
    if not isinstance(pattern, exp.Like) or not isinstance(char, exp.Literal) or not char.is_string:
        raise syntax_error(c.text, "ESCAPE takes a one-character string after LIKE")
    if len(char.this) > 1:
        raise syntax_error(c.text, "Incorrect arguments to ESCAPE")
    return like(c, pattern, char.this or "\\")


def regexp(c: Compiler, e: exp.Expression) -> Node:
    value, pattern = c.build(e.this), c.build(e.expression)
    fv, fp = coerced(value, STRING), coerced(pattern, STRING)
    if pattern.const:
        p = fp(())
        if p is None:
            return constant(None, INT)
        try:
            rx = re.compile(p)
        except re.error as err:
            raise syntax_error(c.text, f"invalid regular expression {p!r}: {err}") from None

        def run_const(row: Row) -> int | None:
            v = fv(row)
            return None if v is None else (1 if rx.search(v) else 0)

        return make_node(run_const, INT, value, pattern)

    def run(row: Row) -> int | None:
        v, q = fv(row), fp(row)
        if v is None or q is None:
            return None
        try:
            return 1 if _regex(q).search(v) else 0
        except re.error as err:
            raise ExprEvalError(f"invalid regular expression {q!r}: {err}") from None

    return make_node(run, INT, value, pattern)


# -- arithmetic ------------------------------------------------------------------------------------------
def arithmetic(c: Compiler, e: exp.Expression) -> Node:
    a, b = c.build(e.this), c.build(e.expression)
    if NULL in (a.kind, b.kind):
        return constant(None, INT)
    kind = _arith_kind(a.kind, b.kind)
    fa, fb = coerced(a, kind), coerced(b, kind)
    op = _arith_op(type(e), kind)
    out = INT if isinstance(e, exp.IntDiv) else (DECIMAL if isinstance(e, exp.Div) and kind == INT else kind)

    def run(row: Row) -> Any:
        x = fa(row)
        if x is None:
            return None
        y = fb(row)
        return None if y is None else op(x, y)

    try:
        return make_node(run, out, a, b)
    except ExprEvalError as err:
        raise syntax_error(c.text, err.message) from None


def neg(c: Compiler, e: exp.Expression) -> Node:
    x = c.build(e.this)
    if x.kind == NULL:
        return x
    kind = _arith_kind(x.kind, INT)
    f = coerced(x, kind)
    neg: Callable[[Any], Any] = (lambda v: check_int(-v)) if kind == INT else operator.neg

    def run(row: Row) -> Any:
        v = f(row)
        return None if v is None else neg(v)

    return make_node(run, kind, x)


def bitwise(c: Compiler, e: exp.Expression) -> Node:
    a, b = c.build(e.this), c.build(e.expression)
    if NULL in (a.kind, b.kind):
        return constant(None, INT)
    fa, fb, op = coerced(a, INT), coerced(b, INT), _BITWISE[type(e)]

    def run(row: Row) -> int | None:
        x, y = fa(row), fb(row)
        return None if x is None or y is None else op(x & _U64, y & _U64) & _U64

    return make_node(run, INT, a, b)


def bit_not(c: Compiler, e: exp.Expression) -> Node:
    x = c.build(e.this)
    f = coerced(x, INT) if x.kind != NULL else x.fn
    return make_node(lambda row: None if (v := f(row)) is None else ~v & _U64, INT, x)


# -- conversions -----------------------------------------------------------------------------------------
def cast(c: Compiler, e: exp.Expression) -> Node:
    x = c.build(e.this)
    to = e.args["to"]
    t = to.this if isinstance(to, exp.DataType) else None
    T = exp.DataType.Type
    if t in (T.BIGINT, T.INT):
        return _converted(x, INT, lambda v: check_int(v))
    if t == T.UBIGINT:
        return _converted(x, INT, lambda v: v & _U64)
    if t in (T.DOUBLE, T.FLOAT):
        return _converted(x, FLOAT, float)
    if t == T.DECIMAL:
        scale = 0
        params = to.expressions
        if len(params) > 1:
            scale = int(params[1].this.this)
        return _converted(x, DECIMAL, lambda v: Decimal(v).quantize(
            Decimal(1).scaleb(-scale), context=DECIMAL_CONTEXT))  # fmt: skip
    if t in (T.CHAR, T.VARCHAR, T.NCHAR, T.TEXT):
        return _converted(x, STRING, lambda v: v)
    if t in (T.BINARY, T.VARBINARY):
        return _converted(x, BYTES, lambda v: v)
    if t in (T.DATE, T.DATETIME, T.TIMESTAMP, T.TIMESTAMPTZ):
        width = 10 if t == T.DATE else 26
        f = coerced(x, DATETIME) if x.kind != NULL else x.fn
        out = "date" if t == T.DATE else DATETIME
        return make_node(lambda row: None if (v := f(row)) is None else v[:width], out, x)
    if t == T.TIME:
        return x if x.kind == TIME else _time_cast(x)
    raise syntax_error(c.text, f"CAST to {to.sql(dialect='mysql')} is not supported")


def _converted(x: Node, kind: str, then: Callable[[Any], Any]) -> Node:
    if x.kind == NULL:
        return constant(None, kind)
    f = coerced(x, kind)
    return make_node(lambda row: None if (v := f(row)) is None else then(v), kind, x)


def _time_cast(x: Node) -> Node:
    f = coerced(x, TIME) if x.kind != NULL else x.fn

    def text(micros: int) -> str:
        sign = "-" if micros < 0 else ""
        seconds, frac = divmod(abs(micros), 1_000_000)
        h, rest = divmod(seconds, 3600)
        m, s = divmod(rest, 60)
        return f"{sign}{h:02d}:{m:02d}:{s:02d}" + (f".{frac:06d}" if frac else "")

    return make_node(lambda row: None if (v := f(row)) is None else text(v), TIME, x)


def _arith_kind(a: str, b: str) -> str:
    """MySQL's arithmetic type: integers stay integers, DECIMAL (and temporal values, as numbers) wins over
    them, and a double or a string makes it a double."""
    if a in INT_LIKE and b in INT_LIKE:
        return INT
    exact = INT_LIKE | {DECIMAL} | TEMPORAL
    if a in exact and b in exact:
        return DECIMAL
    return FLOAT


def _scale(v: Any) -> int:
    exponent = v.as_tuple().exponent if isinstance(v, Decimal) else 0
    return max(-exponent, 0) if isinstance(exponent, int) else 0


def _divide(a: Any, b: Any) -> Decimal | None:
    if b == 0:
        return None
    q = DECIMAL_CONTEXT.divide(Decimal(a), Decimal(b))
    return q.quantize(Decimal(1).scaleb(-(_scale(a) + DIV_PRECISION_INCREMENT)), context=DECIMAL_CONTEXT)


def _int_div(a: Any, b: Any) -> int | None:
    if b == 0:
        return None
    if isinstance(a, int) and isinstance(b, int):
        q = abs(a) // abs(b)
        return check_int(q if (a < 0) == (b < 0) else -q)
    return check_int(int(DECIMAL_CONTEXT.divide(Decimal(a), Decimal(b))) if not isinstance(a, float) else
                     math.trunc(a / b))  # fmt: skip


def _int_mod(a: int, b: int) -> int | None:
    if b == 0:
        return None
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


def _arith_op(node: type[exp.Expression], kind: str) -> Callable[[Any, Any], Any]:
    if node is exp.Div:
        return (lambda a, b: a / b if b else None) if kind == FLOAT else _divide
    if node is exp.IntDiv:
        return _int_div
    if node is exp.Mod:
        if kind == INT:
            return _int_mod
        if kind == DECIMAL:
            return lambda a, b: DECIMAL_CONTEXT.remainder(Decimal(a), Decimal(b)) if b else None
        return lambda a, b: math.fmod(a, b) if b else None
    if kind == INT:
        base = _BASIC[node]
        return lambda a, b: check_int(base(a, b))
    return (_DECIMAL_BASIC if kind == DECIMAL else _BASIC)[node]


@functools.lru_cache(maxsize=1024)
def _like_regex(pattern: Any, escape: str) -> re.Pattern[Any]:
    """LIKE as a regular expression: ``%`` any run, ``_`` one character, ``escape`` quotes the next one."""
    is_bytes = isinstance(pattern, bytes)
    text = pattern.decode("utf-8", "surrogateescape") if is_bytes else pattern
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == escape and i + 1 < len(text):
            out.append(re.escape(text[i + 1]))
            i += 2
            continue
        out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
        i += 1
    rx = "".join(out)
    return re.compile(rx.encode("utf-8", "surrogateescape") if is_bytes else rx, re.DOTALL)


@functools.lru_cache(maxsize=1024)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


OPERATORS: dict[type[exp.Expression], Callable[[Compiler, exp.Expression], Node]] = {
    exp.Like: like,
    exp.Escape: escape,
    exp.RegexpLike: regexp,
    **dict.fromkeys(_ARITHMETIC, arithmetic),
    exp.Neg: neg,
    **dict.fromkeys(_BITWISE, bitwise),
    exp.BitwiseNot: bit_not,
    exp.Cast: cast,
}
