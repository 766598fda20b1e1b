"""TiDB expressions for TiCDC's expression filters: parsed by sqlglot (MySQL dialect), compiled once per table
version into closures, then called per row.

``parse_expression`` checks the text as TiCDC does at create (``select * from t where <expr>`` must parse) and
also refuses what sparkcdc cannot evaluate (a function it does not implement, a subquery, a variable), so that
such an expression is one error at create rather than a failed changefeed later. ``compile_predicate`` binds a
parsed expression to one table's columns (an unknown column is ``CDC:ErrExpressionColumnNotFound``) and returns
the expression's value per row; a row matches exactly when it is the integer 1, as TiCDC's
``d.GetInt64() == 1`` (NULL, 0, a string or a decimal never match).
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any, ClassVar

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError

from sparkcdc.filter.expr_errors import (
    ArgumentError,
    ColumnNotFound,
    ExprEvalError,
    column_not_found,
    syntax_error,
)
from sparkcdc.filter.expr_functions import ANONYMOUS, FUNCTIONS, WITH_EQUAL, Handler
from sparkcdc.filter.expr_numbers import NUMERIC_FUNCTIONS
from sparkcdc.filter.expr_operators import OPERATORS
from sparkcdc.filter.expr_temporal import TEMPORAL_ANONYMOUS, TEMPORAL_FUNCTIONS
from sparkcdc.filter.expr_values import (
    BYTES,
    DATETIME,
    DECIMAL,
    FLOAT,
    INT,
    INT_LIKE,
    NULL,
    STRING,
    UINT_MAX,
    Node,
    Row,
    coerced,
    column_kind,
    compare_kind,
    constant,
    make_node,
    truth_of,
)
from sparkcdc.model.table import TableInfo

_WRAP = "SELECT 1 FROM t WHERE "
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@functools.lru_cache(maxsize=256)
def parse_expression(text: str) -> exp.Expression:
    """The parsed expression; raises ConfigError (``CDC:ErrInvalidFilterExpression``) when it is no single
    expression, or uses what sparkcdc cannot evaluate. Cached by text: the tree is only read, never changed."""
    try:
        statements = sqlglot.parse(_WRAP + text, read="mysql")
    except ParseError as e:
        first = e.errors[0] if e.errors else {}
        near = _ANSI.sub("", str(first.get("highlight") or "")).strip()
        col = max(int(first.get("col") or 0) - len(_WRAP) - len(near) + 1, 1)  # sqlglot's col ends the token
        raise syntax_error(text, f"near '{near}' at column {col}" if near else f"at column {col}") from None
    except SqlglotError:  # the tokenizer: an unterminated string or quoted name
        raise syntax_error(text, "an unterminated string or quoted name") from None
    stmt = statements[0] if len(statements) == 1 else None
    where = stmt.args.get("where") if isinstance(stmt, exp.Select) else None
    clauses = stmt.args.items() if stmt is not None else ()
    extra = [k for k, v in clauses if v and k not in ("expressions", "from_", "from", "where")]
    if not isinstance(where, exp.Where) or extra:
        raise syntax_error(text, "not a single expression")
    tree: exp.Expression = where.this
    Compiler(text, None).build(tree)  # refuses what cannot be evaluated, before any table is known
    return tree


def compile_predicate(tree: exp.Expression, text: str, table: TableInfo) -> Callable[[Row], Any]:
    """The expression's value for ``table``'s rows (values aligned with ``table.columns``); a row matches when
    it is 1 (``== 1``: an integer result, as TiCDC's ``GetInt64() == 1``). Raises ConfigError:
    ``CDC:ErrExpressionColumnNotFound`` for a column the table lacks, ``CDC:ErrInvalidFilterExpression`` for a
    literal that cannot be what it is compared with (``d > 'yesterday'`` for a DATETIME ``d``)."""
    try:
        node = Compiler(text, table).build(tree)
    except ColumnNotFound as e:
        raise column_not_found(str(e.args[0]), table.qualified_name, text) from None
    if node.kind not in INT_LIKE:
        return lambda _row: None  # a string, decimal or double result never matches
    return node.fn


_COMPARISONS: dict[type[exp.Expression], Callable[[Any, Any], bool]] = {
    exp.EQ: operator.eq,
    exp.NEQ: operator.ne,
    exp.GT: operator.gt,
    exp.GTE: operator.ge,
    exp.LT: operator.lt,
    exp.LTE: operator.le,
}


class Compiler:
    """Builds ``Node`` closures for one expression over one table (``table=None``: a check with no table,
    where every column is a string)."""

    def __init__(self, text: str, table: TableInfo | None) -> None:
        self.text = text
        self.table = table

    def build(self, e: exp.Expression) -> Node:
        method = self._OPS.get(type(e))
        if method is not None:
            return method(self, e)
        handler: Handler | None = (
            FUNCTIONS.get(type(e)) or NUMERIC_FUNCTIONS.get(type(e)) or TEMPORAL_FUNCTIONS.get(type(e))
        )
        try:
            if handler is not None:
                return handler(self.build, e)
            if type(e) in WITH_EQUAL:
                return WITH_EQUAL[type(e)](self.build, e, self._equal)
            named = ANONYMOUS.get(e.name.lower()) or TEMPORAL_ANONYMOUS.get(e.name.lower())
            if isinstance(e, exp.Anonymous) and named is not None:
                return named(self.build, e)
        except ArgumentError as err:
            raise syntax_error(self.text, str(err)) from None
        except ExprEvalError as err:  # a constant part failed (1 DIV 0 is NULL; this is an overflow)
            raise syntax_error(self.text, err.message) from None
        what = f"function {e.name.upper()}()" if isinstance(e, exp.Func) else f"'{e.sql(dialect='mysql')}'"
        raise syntax_error(
            self.text, f"{what} is not supported by sparkcdc; the README's 'Expression filters' lists what is"
        )

    # -- leaves ----------------------------------------------------------------------------------------------
    def _column(self, e: exp.Expression) -> Node:
        assert isinstance(e, exp.Column)
        name = e.name
        qualifier = e.table
        if self.table is None:
            return Node(lambda row: row[0], STRING)
        if qualifier and qualifier.lower() != self.table.table.lower():
            raise ColumnNotFound(f"{qualifier}.{name}")
        try:
            pos = self.table.column_position(name)
        except KeyError:
            raise ColumnNotFound(name) from None
        ck = column_kind(self.table.columns[pos])
        return Node(operator.itemgetter(pos), ck.kind, False, ck.elements)

    def _literal(self, e: exp.Expression) -> Node:
        assert isinstance(e, exp.Literal)
        text = e.this
        if e.is_string:
            return constant(text, STRING)
        if "e" in text.lower():
            return constant(float(text), FLOAT)
        if "." in text:
            return constant(Decimal(text), DECIMAL)
        return constant(int(text), INT if int(text) <= UINT_MAX else DECIMAL)

    def _hex(self, e: exp.Expression) -> Node:
        digits = e.this if len(e.this) % 2 == 0 else "0" + e.this
        return constant(bytes.fromhex(digits), BYTES)

    def _bits(self, e: exp.Expression) -> Node:
        return constant(int(e.this or "0", 2), INT)

    # -- logic -----------------------------------------------------------------------------------------------
    def _not(self, e: exp.Expression) -> Node:
        x = self.build(e.this)
        t = truth_of(x)

        def run(row: Row) -> int | None:
            v = t(row)
            return None if v is None else (0 if v else 1)

        return make_node(run, INT, x)

    def _and(self, e: exp.Expression) -> Node:
        a, b = self.build(e.this), self.build(e.expression)
        ta, tb = truth_of(a), truth_of(b)

        def run(row: Row) -> int | None:
            x = ta(row)
            if x is not None and not x:
                return 0
            y = tb(row)
            if y is not None and not y:
                return 0
            return None if x is None or y is None else 1

        return make_node(run, INT, a, b)

    def _or(self, e: exp.Expression) -> Node:
        a, b = self.build(e.this), self.build(e.expression)
        ta, tb = truth_of(a), truth_of(b)

        def run(row: Row) -> int | None:
            x = ta(row)
            if x:
                return 1
            y = tb(row)
            if y:
                return 1
            return None if x is None or y is None else 0

        return make_node(run, INT, a, b)

    def _xor(self, e: exp.Expression) -> Node:
        a, b = self.build(e.this), self.build(e.expression)
        ta, tb = truth_of(a), truth_of(b)

        def run(row: Row) -> int | None:
            x, y = ta(row), tb(row)
            return None if x is None or y is None else int(bool(x) != bool(y))

        return make_node(run, INT, a, b)

    def _is(self, e: exp.Expression) -> Node:
        x = self.build(e.this)
        target = e.expression
        if isinstance(target, exp.Null):
            f = x.fn
            return make_node(lambda row: 1 if f(row) is None else 0, INT, x)
        if isinstance(target, exp.Boolean):
            want = bool(target.this)
            t = truth_of(x)
            return make_node(lambda row: 1 if (v := t(row)) is not None and bool(v) is want else 0, INT, x)
        raise syntax_error(self.text, f"IS {target.sql(dialect='mysql')} is not supported")

    # -- comparisons -----------------------------------------------------------------------------------------
    def _compare(self, e: exp.Expression) -> Node:
        return self.compare(_COMPARISONS[type(e)], self.build(e.this), self.build(e.expression))

    def _equal(self, a: Node, b: Node) -> Node:
        return self.compare(operator.eq, a, b)

    def _operand(self, node: Node, kind: str) -> Callable[[Row], Any]:
        """``node`` converted for a comparison as ``kind``; a constant that cannot be converted is an error here
        (``d = 'not a date'``), not a NULL on every row."""
        f = coerced(node, kind)
        if node.const and node.kind != NULL and f(()) is None:
            what = "DATETIME" if kind == DATETIME else kind.upper()
            raise syntax_error(self.text, f"{node.fn(())!r} is not a valid {what} value")
        return f

    def compare(self, op: Callable[[Any, Any], bool], a: Node, b: Node) -> Node:
        kind = compare_kind(a.kind, b.kind)
        if kind == NULL:
            return constant(None, INT)
        fa, fb = self._operand(a, kind), self._operand(b, kind)
        if b.const:
            right = fb(())

            def run_const(row: Row) -> int | None:
                x = fa(row)
                return None if x is None else (1 if op(x, right) else 0)

            return make_node(run_const, INT, a, b)

        def run(row: Row) -> int | None:
            x = fa(row)
            if x is None:
                return None
            y = fb(row)
            return None if y is None else (1 if op(x, y) else 0)

        return make_node(run, INT, a, b)

    def _null_safe_eq(self, e: exp.Expression) -> Node:
        a, b = self.build(e.this), self.build(e.expression)
        kind = compare_kind(a.kind, b.kind)
        fa, fb = (a.fn, b.fn) if kind == NULL else (self._operand(a, kind), self._operand(b, kind))

        def run(row: Row) -> int:
            x, y = fa(row), fb(row)
            if x is None or y is None:
                return 1 if x is None and y is None else 0
            return 1 if x == y else 0

        return make_node(run, INT, a, b)

    def _in(self, e: exp.Expression) -> Node:
        if e.args.get("query") is not None or e.args.get("unnest") is not None:
            raise syntax_error(self.text, "IN (subquery) is not supported")
        x = self.build(e.this)
        items = [self.build(i) for i in e.args.get("expressions") or []]
        if not items:
            raise syntax_error(self.text, "IN () needs at least one value")
        kinds = {compare_kind(x.kind, i.kind) for i in items} - {NULL}
        has_null = any(i.kind == NULL for i in items)
        if x.kind == NULL:
            return constant(None, INT)
        if len(kinds) == 1 and all(i.const for i in items):
            (kind,) = kinds
            values = frozenset(self._operand(i, kind)(()) for i in items if i.kind != NULL)
            fx = coerced(x, kind)
            miss = None if has_null else 0

            def run_set(row: Row) -> int | None:
                v = fx(row)
                return None if v is None else (1 if v in values else miss)

            return make_node(run_set, INT, x, *items)
        tests = [self._equal(x, i).fn for i in items]

        def run(row: Row) -> int | None:
            unknown = False
            for t in tests:
                r = t(row)
                if r == 1:
                    return 1
                unknown = unknown or r is None
            return None if unknown else 0

        return make_node(run, INT, x, *items)

    def _between(self, e: exp.Expression) -> Node:
        x, lo, hi = self.build(e.this), self.build(e.args["low"]), self.build(e.args["high"])
        ge, le = self.compare(operator.ge, x, lo).fn, self.compare(operator.le, x, hi).fn

        def run(row: Row) -> int | None:
            a = ge(row)
            if a == 0:
                return 0
            b = le(row)
            if b == 0:
                return 0
            return None if a is None or b is None else 1

        return make_node(run, INT, x, lo, hi)

    # -- wrappers --------------------------------------------------------------------------------------------
    def _paren(self, e: exp.Expression) -> Node:
        return self.build(e.this)

    def _introducer(self, e: exp.Expression) -> Node:
        return self.build(e.expression)

    _OPS: ClassVar[dict[type[exp.Expression], Callable[[Compiler, exp.Expression], Node]]] = {
        exp.Column: _column,
        exp.Literal: _literal,
        exp.Null: lambda self, e: constant(None, NULL),
        exp.Boolean: lambda self, e: constant(1 if e.this else 0, INT),
        exp.HexString: _hex,
        exp.BitString: _bits,
        exp.National: lambda self, e: constant(e.this, STRING),
        exp.Paren: _paren,
        exp.Introducer: _introducer,
        exp.Collate: _paren,  # TiCDC compares binary whatever the collation (see expr_values)
        exp.Not: _not,
        exp.And: _and,
        exp.Or: _or,
        exp.Xor: _xor,
        exp.Is: _is,
        **dict.fromkeys(_COMPARISONS, _compare),
        exp.NullSafeEQ: _null_safe_eq,
        exp.In: _in,
        exp.Between: _between,
        **OPERATORS,
    }
