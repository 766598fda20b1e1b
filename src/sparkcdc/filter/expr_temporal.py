"""Date and time functions of the expression filters, over TiDB's text of DATE/DATETIME/TIMESTAMP/TIME values
(``sparkcdc.model.column_type``) or over date text: ``DATE``, ``YEAR``, ``MONTH``, ``DAY``/``DAYOFMONTH``,
``HOUR``, ``MINUTE``, ``SECOND``, ``QUARTER``, ``DAYOFWEEK``, ``WEEKDAY``, ``DAYOFYEAR``, ``DATEDIFF``.

A zero date (``0000-00-00``) has year, month and day 0 and no weekday (NULL), as in MySQL. sqlglot reads
``YEAR(d)`` as ``Year(TsOrDsToDate(d))``, so ``TsOrDsToDate`` is ``DATE()`` here. Functions of the current time
(``NOW()``, ``CURDATE()``) are not offered: a filter's verdict would change between a run and its replay.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from sqlglot import exp

from sparkcdc.filter.expr_functions import Build, Handler, apply, apply_typed, one_arg
from sparkcdc.filter.expr_values import (
    DATE,
    DATETIME,
    INT,
    STRING,
    TEMPORAL,
    Node,
    Row,
    coerced,
    date_parts,
    make_node,
    parse_datetime_key,
    time_parts,
)


def _date_arg(build: Build, e: exp.Expression) -> Node:
    x = build(e.this)
    if isinstance(e.this, exp.TsOrDsToDate) or x.kind in (DATE, DATETIME):
        return x
    return _to_date(x)


def _to_date(x: Node) -> Node:
    if x.kind in (DATE, DATETIME):
        return apply(DATE, lambda v: v[:10], x)

    def date_of(v: Any) -> str | None:
        key = parse_datetime_key(v if isinstance(v, str) else str(v))
        return key[:10] if key is not None else None

    return apply(DATE, date_of, x, target=None if x.kind == STRING else STRING)


def _date(build: Build, e: exp.Expression) -> Node:
    return _to_date(build(e.this))


def _date_part(index: int) -> Handler:
    def handler(build: Build, e: exp.Expression) -> Node:
        x = _date_arg(build, e)
        return apply(INT, lambda v: p[index] if (p := date_parts(v, DATE)) is not None else None, x)

    return handler


def _time_part(index: int) -> Handler:
    def handler(build: Build, e: exp.Expression) -> Node:
        x = build(e.this)
        kind = x.kind if x.kind in TEMPORAL else STRING
        text = coerced(x, STRING) if x.kind not in TEMPORAL else x.fn

        def run(row: Row) -> int | None:
            v = text(row)
            if v is None:
                return None
            parts = time_parts(v, kind)
            return parts[index] if parts is not None else None

        return make_node(run, INT, x)

    return handler


def _real_date(v: str) -> datetime.date | None:
    p = date_parts(v, DATE)
    try:
        return datetime.date(*p) if p is not None else None
    except ValueError:  # zero date, or a day the month lacks
        return None


def _calendar(fn: Callable[[datetime.date], int]) -> Handler:
    def handler(build: Build, e: exp.Expression) -> Node:
        x = _date_arg(build, e)
        return apply(INT, lambda v: fn(d) if (d := _real_date(v)) is not None else None, x)

    return handler


def _weekday(build: Build, e: exp.Expression) -> Node:
    return _calendar(datetime.date.weekday)(build, exp.TsOrDsToDate(this=one_arg(e)))


def _datediff(build: Build, e: exp.Expression) -> Node:
    a, b = _to_date(build(e.this)), _to_date(build(e.args["expression"]))

    def diff(x: str, y: str) -> int | None:
        dx, dy = _real_date(x), _real_date(y)
        return (dx - dy).days if dx is not None and dy is not None else None

    return apply_typed(INT, diff, [(a, DATE), (b, DATE)])


TEMPORAL_FUNCTIONS: dict[type[exp.Expression], Handler] = {
    exp.TsOrDsToDate: _date,
    exp.Year: _date_part(0),
    exp.Month: _date_part(1),
    exp.Day: _date_part(2),
    exp.DayOfMonth: _date_part(2),
    exp.Hour: _time_part(0),
    exp.Minute: _time_part(1),
    exp.Second: _time_part(2),
    exp.Quarter: _calendar(lambda d: (d.month - 1) // 3 + 1),
    exp.DayOfWeek: _calendar(lambda d: d.isoweekday() % 7 + 1),
    exp.DayOfYear: _calendar(lambda d: d.timetuple().tm_yday),
    exp.DateDiff: _datediff,
}
TEMPORAL_ANONYMOUS: dict[str, Handler] = {"weekday": _weekday}
