"""String and control-flow functions of the expression filters, as TiDB evaluates them (NULL in, NULL out, unless
said), and the helpers the numeric (``expr_numbers``) and date (``expr_temporal``) functions share.

Each handler takes the builder of child nodes and the sqlglot node (MySQL dialect) and returns a compiled
``Node``. sqlglot normalises MySQL's spellings into its own nodes (``UCASE`` is ``Upper``, ``IFNULL`` is
``Coalesce``, ``YEAR(d)`` is ``Year(TsOrDsToDate(d))``, ``LOCATE``/``INSTR``/``POSITION`` are ``StrPosition``);
names it does not know arrive as ``Anonymous`` and are looked up in ``ANONYMOUS``. The README lists them all
(a unit test checks that list against these tables).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlglot import exp

from sparkcdc.filter.expr_errors import ArgumentError
from sparkcdc.filter.expr_values import (
    BYTES,
    INT,
    NULL,
    STRING,
    Node,
    Row,
    as_result,
    coerced,
    constant,
    make_node,
    result_kind,
    truth_of,
)

Build = Callable[[exp.Expression], Node]
Handler = Callable[[Build, exp.Expression], Node]


def _args(e: exp.Expression, *keys: str) -> list[exp.Expression]:
    out = []
    for k in keys:
        v = e.args.get(k)
        if isinstance(v, list):
            out.extend(v)
        elif isinstance(v, exp.Expression):
            out.append(v)
    return out


def apply(kind: str, fn: Callable[..., Any], *args: Node, target: str | None = None) -> Node:
    """A node applying ``fn`` to the arguments' values converted to ``target`` (their own kinds when None);
    NULL when any is NULL."""
    return _strict(kind, fn, args, [target] * len(args))


def _strict(kind: str, fn: Callable[..., Any], args: Sequence[Node], targets: Sequence[str | None]) -> Node:
    """``fn`` of the arguments' values, each converted to its target kind (its own when None); NULL when any is."""
    if any(a.kind == NULL for a in args):
        return constant(None, kind)
    getters = [coerced(a, t) if t else a.fn for a, t in zip(args, targets, strict=True)]
    if len(getters) == 1:
        (g,) = getters

        def one(row: Row) -> Any:
            v = g(row)
            return None if v is None else fn(v)

        return make_node(one, kind, *args)

    def many(row: Row) -> Any:
        vals = []
        for g in getters:
            v = g(row)
            if v is None:
                return None
            vals.append(v)
        return fn(*vals)

    return make_node(many, kind, *args)


def _text_kind(node: Node) -> str:
    return BYTES if node.kind == BYTES else STRING


def strings(build: Build, e: exp.Expression, *keys: str) -> list[Node]:
    return [build(a) for a in _args(e, *keys)]


# -- strings -------------------------------------------------------------------------------------------------
def _length(build: Build, e: exp.Expression) -> Node:
    (s,) = strings(build, e, "this")
    if e.args.get("binary"):  # LENGTH/OCTET_LENGTH: bytes (UTF-8)
        return apply(INT, lambda v: len(v) if isinstance(v, bytes) else len(v.encode()), s, target=_text_kind(s))
    return apply(INT, len, s, target=_text_kind(s))  # CHAR_LENGTH


def _octet_length(build: Build, e: exp.Expression) -> Node:
    return _length(build, exp.Length(this=one_arg(e), binary=True))


def _case(upper: bool) -> Handler:
    def handler(build: Build, e: exp.Expression) -> Node:
        (s,) = strings(build, e, "this")
        if s.kind == BYTES:  # MySQL leaves binary strings as they are
            return s
        return apply(STRING, str.upper if upper else str.lower, s, target=STRING)

    return handler


def substring(s: Any, pos: int, length: int | None = None) -> Any:
    """MySQL's SUBSTRING: 1-based, a negative position counts from the end, position 0 gives ''."""
    n = len(s)
    if pos > 0:
        start = pos - 1
    elif pos < 0 and n + pos >= 0:
        start = n + pos
    else:
        return s[:0]
    if length is None:
        return s[start:]
    return s[start : start + length] if length > 0 else s[:0]


def _substring(build: Build, e: exp.Expression) -> Node:
    args = strings(build, e, "this", "start", "length")
    if len(args) < 2:
        raise ArgumentError("SUBSTRING takes 2 or 3 arguments")
    return _substring_of(args)


def _mid(build: Build, e: exp.Expression) -> Node:
    args = strings(build, e, "expressions")
    if len(args) != 3:
        raise ArgumentError("MID takes 3 arguments")
    return _substring_of(args)


def _substring_of(args: list[Node]) -> Node:
    s, rest = args[0], args[1:]
    k = _text_kind(s)
    return apply_typed(k, substring, [(s, k)] + [(a, INT) for a in rest])


def apply_typed(kind: str, fn: Callable[..., Any], args: list[tuple[Node, str]]) -> Node:
    """Like ``apply`` with a target kind per argument."""
    return _strict(kind, fn, [a for a, _ in args], [t for _, t in args])


def _left_right(left: bool) -> Handler:
    def handler(build: Build, e: exp.Expression) -> Node:
        s, n = strings(build, e, "this", "expression")
        k = _text_kind(s)
        if left:
            return apply_typed(k, lambda v, i: v[:i] if i > 0 else v[:0], [(s, k), (n, INT)])
        return apply_typed(k, lambda v, i: v[-i:] if i > 0 else v[:0], [(s, k), (n, INT)])

    return handler


def _concat(build: Build, e: exp.Expression) -> Node:
    args = strings(build, e, "expressions")
    k = BYTES if any(a.kind == BYTES for a in args) else STRING
    return apply_typed(k, lambda *vs: vs[0][:0].join(vs), [(a, k) for a in args])


def _concat_ws(build: Build, e: exp.Expression) -> Node:
    args = strings(build, e, "expressions")
    if len(args) < 2:
        raise ArgumentError("CONCAT_WS takes at least 2 arguments")
    k = BYTES if any(a.kind == BYTES for a in args) else STRING
    sep, parts = coerced(args[0], k), [coerced(a, k) for a in args[1:]]

    def run(row: Row) -> Any:
        s = sep(row)
        if s is None:
            return None
        return s.join(v for v in (p(row) for p in parts) if v is not None)

    return make_node(run, k, *args)


def _trim(build: Build, e: exp.Expression) -> Node:
    s = build(e.this)
    k = _text_kind(s)
    position = str(e.args.get("position") or "BOTH").upper()
    rem = build(e.args["expression"]) if e.args.get("expression") is not None else constant(" ", STRING)

    def trim(v: Any, r: Any) -> Any:
        if not r:
            return v
        if position in ("BOTH", "LEADING"):
            while v.startswith(r):
                v = v[len(r) :]
        if position in ("BOTH", "TRAILING"):
            while v.endswith(r):
                v = v[: -len(r)]
        return v

    return apply_typed(k, trim, [(s, k), (rem, k)])


def _replace(build: Build, e: exp.Expression) -> Node:
    args = strings(build, e, "this", "expression", "replacement")
    if len(args) != 3:
        raise ArgumentError("REPLACE takes 3 arguments")
    k = _text_kind(args[0])
    return apply_typed(k, lambda s, a, b: s.replace(a, b) if a else s, [(x, k) for x in args])


def _reverse(build: Build, e: exp.Expression) -> Node:
    (s,) = strings(build, e, "this")
    k = _text_kind(s)
    return apply(k, lambda v: v[::-1], s, target=k)


def _locate(build: Build, e: exp.Expression) -> Node:
    s, sub = build(e.this), build(e.args["substr"])
    k = BYTES if BYTES in (s.kind, sub.kind) else STRING
    if e.args.get("position") is None:
        return apply_typed(INT, lambda v, x: v.find(x) + 1, [(s, k), (sub, k)])
    pos = build(e.args["position"])
    return apply_typed(INT, lambda v, x, p: v.find(x, p - 1) + 1 if p >= 1 else 0, [(s, k), (sub, k), (pos, INT)])


def _pad(build: Build, e: exp.Expression) -> Node:
    s, n = build(e.this), build(e.args["expression"])
    if e.args.get("fill_pattern") is None:
        raise ArgumentError("LPAD/RPAD take 3 arguments")
    fill = build(e.args["fill_pattern"])
    k = _text_kind(s)
    left = bool(e.args.get("is_left"))

    def pad(v: Any, length: int, f: Any) -> Any:
        if length < 0:
            return None
        if len(v) >= length:
            return v[:length]
        if not f:
            return None
        filler = (f * (length // len(f) + 1))[: length - len(v)]
        return filler + v if left else v + filler

    return apply_typed(k, pad, [(s, k), (n, INT), (fill, k)])


def _repeat(build: Build, e: exp.Expression) -> Node:
    s, n = build(e.this), build(e.args["times"])
    k = _text_kind(s)
    return apply_typed(k, lambda v, i: v * i if i > 0 else v[:0], [(s, k), (n, INT)])


def _strcmp(build: Build, e: exp.Expression) -> Node:
    args = strings(build, e, "expressions")
    if len(args) != 2:
        raise ArgumentError("STRCMP takes 2 arguments")
    k = BYTES if any(a.kind == BYTES for a in args) else STRING
    return apply_typed(INT, lambda a, b: (a > b) - (a < b), [(x, k) for x in args])


# -- control flow --------------------------------------------------------------------------------------------
def _if(build: Build, e: exp.Expression) -> Node:
    cond, yes = build(e.this), build(e.args["true"])
    no = build(e.args["false"]) if e.args.get("false") is not None else constant(None, NULL)
    k = result_kind([yes.kind, no.kind])
    c, a, b = truth_of(cond), as_result(yes, k), as_result(no, k)
    return make_node(lambda row: a(row) if c(row) else b(row), k, cond, yes, no)


def _coalesce(build: Build, e: exp.Expression) -> Node:
    args = strings(build, e, "this", "expressions")
    k = result_kind([a.kind for a in args])
    getters = [as_result(a, k) for a in args if a.kind != NULL]

    def run(row: Row) -> Any:
        for g in getters:
            v = g(row)
            if v is not None:
                return v
        return None

    return make_node(run, k, *args)


def _nullif(build: Build, e: exp.Expression, equal: Callable[[Node, Node], Node]) -> Node:
    a, b = build(e.this), build(e.args["expression"])
    same, value = equal(a, b).fn, a.fn
    return make_node(lambda row: None if same(row) == 1 else value(row), a.kind, a, b)


def _case_when(build: Build, e: exp.Expression, equal: Callable[[Node, Node], Node]) -> Node:
    subject = build(e.this) if e.args.get("this") is not None else None
    conds, results, whens = [], [], []
    for branch in e.args.get("ifs") or []:
        when = build(branch.this)
        whens.append(when)
        conds.append(truth_of(when) if subject is None else _is_one(equal(subject, when)))
        results.append(build(branch.args["true"]))
    default = build(e.args["default"]) if e.args.get("default") is not None else constant(None, NULL)
    k = result_kind([r.kind for r in [*results, default]])
    pairs = [(c, as_result(r, k)) for c, r in zip(conds, results, strict=True)]
    otherwise = as_result(default, k)

    def run(row: Row) -> Any:
        for cond, result in pairs:
            if cond(row):
                return result(row)
        return otherwise(row)

    children = [*whens, *results, default] + ([subject] if subject is not None else [])
    return make_node(run, k, *children)


def _is_one(node: Node) -> Callable[[Row], bool]:
    f = node.fn
    return lambda row: f(row) == 1


def one_arg(e: exp.Expression) -> exp.Expression:
    args = _args(e, "expressions") if isinstance(e, exp.Anonymous) else _args(e, "this")
    if len(args) != 1:
        raise ArgumentError(f"{e.name if isinstance(e, exp.Anonymous) else e.key}() takes 1 argument")
    return args[0]


FUNCTIONS: dict[type[exp.Expression], Handler] = {
    exp.Length: _length,
    exp.Upper: _case(True),
    exp.Lower: _case(False),
    exp.Substring: _substring,
    exp.Left: _left_right(True),
    exp.Right: _left_right(False),
    exp.Concat: _concat,
    exp.ConcatWs: _concat_ws,
    exp.Trim: _trim,
    exp.Replace: _replace,
    exp.Reverse: _reverse,
    exp.StrPosition: _locate,
    exp.Pad: _pad,
    exp.Repeat: _repeat,
    exp.If: _if,
    exp.Coalesce: _coalesce,
}

ANONYMOUS: dict[str, Handler] = {
    "mid": _mid,
    "octet_length": _octet_length,
    "strcmp": _strcmp,
}

# NULLIF and CASE compare with the comparison rules, which the compiler owns: it passes its ``=`` in.
WITH_EQUAL: dict[type[exp.Expression], Callable[[Build, exp.Expression, Callable[[Node, Node], Node]], Node]] = {
    exp.Nullif: _nullif,
    exp.Case: _case_when,
}
