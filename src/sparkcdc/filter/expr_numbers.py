"""Numeric functions of the expression filters, with MySQL's result types: ``ABS``, ``SIGN``, ``ROUND``,
``TRUNCATE``, ``FLOOR``, ``CEIL``/``CEILING``, ``POW``/``POWER``, ``SQRT``, ``GREATEST``, ``LEAST``.

An exact argument (integer, DECIMAL) rounds half away from zero and stays exact; a double rounds half to even, as
the C library MySQL and TiDB use; a string is read as a double.
"""

from __future__ import annotations

import decimal
import math
from decimal import Decimal
from typing import Any

from sqlglot import exp

from sparkcdc.filter.expr_errors import ArgumentError
from sparkcdc.filter.expr_functions import Build, Handler, apply, apply_typed, strings
from sparkcdc.filter.expr_values import (
    DECIMAL,
    DECIMAL_CONTEXT,
    FLOAT,
    INT,
    INT_LIKE,
    NULL,
    NUMERIC,
    TEMPORAL,
    Node,
    check_int,
    constant,
    result_kind,
    round_half_away,
)


def _numeric_kind(node: Node) -> str:
    if node.kind in INT_LIKE:
        return INT
    return node.kind if node.kind in NUMERIC else (DECIMAL if node.kind in TEMPORAL else FLOAT)


def _abs(build: Build, e: exp.Expression) -> Node:
    x = build(e.this)
    k = _numeric_kind(x)
    return apply(k, (lambda v: check_int(abs(v))) if k == INT else abs, x, target=k)


def _sign(build: Build, e: exp.Expression) -> Node:
    x = build(e.this)
    k = _numeric_kind(x)
    return apply(INT, lambda v: (v > 0) - (v < 0), x, target=k)


def _places(build: Build, e: exp.Expression) -> Node:
    d = e.args.get("decimals")
    return build(d) if d is not None else constant(0, INT)


def _round(build: Build, e: exp.Expression) -> Node:
    x, d = build(e.this), _places(build, e)
    k = _numeric_kind(x)
    if k == FLOAT:  # approximate values: round half to even, as the C library (MySQL) does
        return apply_typed(FLOAT, lambda v, p: float(round(v, p)), [(x, FLOAT), (d, INT)])
    if k == INT:
        return apply_typed(INT, lambda v, p: v if p >= 0 else int(round_half_away(Decimal(v), p)), [(x, INT), (d, INT)])
    return apply_typed(DECIMAL, lambda v, p: round_half_away(v, p), [(x, DECIMAL), (d, INT)])


def _truncate(build: Build, e: exp.Expression) -> Node:
    x, d = build(e.this), _places(build, e)
    k = _numeric_kind(x)

    def trunc_decimal(v: Any, p: int) -> Decimal:
        return Decimal(v).quantize(Decimal(1).scaleb(-p), rounding=decimal.ROUND_DOWN, context=DECIMAL_CONTEXT)

    if k == FLOAT:
        return apply_typed(FLOAT, lambda v, p: math.trunc(v * 10**p) / 10**p, [(x, FLOAT), (d, INT)])
    if k == INT:
        return apply_typed(INT, lambda v, p: v if p >= 0 else int(trunc_decimal(v, p)), [(x, INT), (d, INT)])
    return apply_typed(DECIMAL, trunc_decimal, [(x, DECIMAL), (d, INT)])


def _floor_ceil(floor: bool) -> Handler:
    def handler(build: Build, e: exp.Expression) -> Node:
        if e.args.get("decimals") is not None or e.args.get("to") is not None:
            raise ArgumentError("FLOOR/CEIL take 1 argument")
        x = build(e.this)
        k = _numeric_kind(x)
        if k == FLOAT:
            return apply(FLOAT, lambda v: float(math.floor(v) if floor else math.ceil(v)), x, target=FLOAT)
        return apply(INT, math.floor if floor else math.ceil, x, target=k)

    return handler


def _pow(build: Build, e: exp.Expression) -> Node:
    def power(a: float, b: float) -> float | None:
        try:
            return math.pow(a, b)
        except (OverflowError, ValueError):
            return None

    return apply_typed(FLOAT, power, [(build(e.this), FLOAT), (build(e.args["expression"]), FLOAT)])


def _sqrt(build: Build, e: exp.Expression) -> Node:
    return apply(FLOAT, lambda v: math.sqrt(v) if v >= 0 else None, build(e.this), target=FLOAT)


def _greatest_least(greatest: bool) -> Handler:
    def handler(build: Build, e: exp.Expression) -> Node:
        args = strings(build, e, "this", "expressions")
        if len(args) < 2:
            raise ArgumentError("GREATEST/LEAST take at least 2 arguments")
        k = result_kind([a.kind for a in args])
        if k == NULL:
            return constant(None, NULL)
        pick = max if greatest else min
        return apply_typed(k, lambda *vs: pick(vs), [(a, k) for a in args])

    return handler


NUMERIC_FUNCTIONS: dict[type[exp.Expression], Handler] = {
    exp.Abs: _abs,
    exp.Sign: _sign,
    exp.Round: _round,
    exp.Trunc: _truncate,
    exp.Floor: _floor_ceil(True),
    exp.Ceil: _floor_ceil(False),
    exp.Pow: _pow,
    exp.Sqrt: _sqrt,
    exp.Greatest: _greatest_least(True),
    exp.Least: _greatest_least(False),
}
