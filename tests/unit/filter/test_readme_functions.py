"""The README's list of expression-filter functions is exactly what the evaluator implements: every name listed
compiles, and every handler is reached by a listed name."""

from __future__ import annotations

import re
from pathlib import Path

import sqlglot
from sqlglot import exp

from sparkcdc.errors import ConfigError
from sparkcdc.filter.expr_compile import parse_expression
from sparkcdc.filter.expr_functions import ANONYMOUS, FUNCTIONS, WITH_EQUAL
from sparkcdc.filter.expr_numbers import NUMERIC_FUNCTIONS
from sparkcdc.filter.expr_temporal import TEMPORAL_ANONYMOUS, TEMPORAL_FUNCTIONS

README = Path(__file__).resolve().parents[3] / "README.md"


def listed() -> list[str]:
    text = README.read_text(encoding="utf-8")
    start = text.index("- Functions: ")
    block = text[start : text.index(". Functions of the current time", start)]
    return re.findall(r"\b([A-Z][A-Z_]+)\b", block.removeprefix("- Functions: "))


def _compiled(name: str) -> exp.Expression:
    """The sqlglot node of ``name`` called with the first argument list that compiles (arities differ)."""
    for args in ("'2024-01-02'", "'abc', 2", "'abc', 2, 'x'"):
        try:
            parse_expression(f"{name}({args}) IS NULL")
        except ConfigError:
            continue
        node: exp.Expression = sqlglot.parse_one(f"SELECT {name}({args})", read="mysql").expressions[0]
        return node.this if isinstance(node, exp.Paren) else node  # ISNULL(x) is (x IS NULL)
    raise AssertionError(f"{name}() is listed but compiles with no argument list tried")


def test_every_listed_function_compiles_and_every_handler_is_listed() -> None:
    names = listed()
    assert len(names) > 50
    reached = set()
    for name in names:
        node = _compiled(name)
        reached.add(node.name.lower() if isinstance(node, exp.Anonymous) else type(node))
    handlers = {*FUNCTIONS, *NUMERIC_FUNCTIONS, *TEMPORAL_FUNCTIONS, *ANONYMOUS, *TEMPORAL_ANONYMOUS, *WITH_EQUAL}
    assert not handlers - reached - {exp.Case}, f"implemented but not in the README: {handlers - reached}"
