"""TiCDC's ``[[filter.event-filters]]``: drop some events of the matched tables by type, by DDL text or by value.

A rule has ``matcher`` (table-filter rules selecting the tables it applies to), ``ignore-event`` (event
types such as ``insert``, ``all dml``, ``drop table``), ``ignore-sql`` (regular expressions searched,
case-insensitively, in DDL statements; DML events have no SQL text) and the expression filters
``ignore-insert-value-expr`` (an INSERT's new row), ``ignore-update-old-value-expr`` /
``ignore-update-new-value-expr`` (an UPDATE is dropped when either image matches) and ``ignore-delete-value-expr``
(a DELETE's old row): TiDB expressions (``expr_compile``), compiled once per table version. An event is skipped
when any rule whose matcher selects its table ignores it; event types are checked before expressions, as in
TiCDC's ``filter.ShouldIgnoreDMLEvent``. As in TiCDC, matchers are case-sensitive whatever the changefeed's
``case-sensitive`` says.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sparkcdc.errors import ConfigError
from sparkcdc.filter.table_filter import ERR_FILTER_RULE_INVALID, TableFilter
from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.model.events import Row, RowChange, RowOp
from sparkcdc.model.table import TableInfo

ERR_INVALID_IGNORE_EVENT_TYPE = "CDC:ErrInvalidIgnoreEventType"

DML_EVENTS = ("insert", "update", "delete")

# TiDB DDL action -> binlog-filter event type name (TiCDC's DDL white list).
DDL_EVENT_TYPES: Mapping[DDLAction, str] = {
    DDLAction.CREATE_SCHEMA: "create database",
    DDLAction.DROP_SCHEMA: "drop database",
    DDLAction.MODIFY_SCHEMA_CHARSET_AND_COLLATE: "modify schema charset and collate",
    DDLAction.CREATE_TABLE: "create table",
    DDLAction.CREATE_TABLES: "create table",
    DDLAction.DROP_TABLE: "drop table",
    DDLAction.TRUNCATE_TABLE: "truncate table",
    DDLAction.RENAME_TABLE: "rename table",
    DDLAction.RENAME_TABLES: "rename table",
    DDLAction.RECOVER_TABLE: "recover table",
    DDLAction.MODIFY_TABLE_COMMENT: "modify table comment",
    DDLAction.MODIFY_TABLE_CHARSET_AND_COLLATE: "modify table charset and collate",
    DDLAction.CREATE_VIEW: "create view",
    DDLAction.DROP_VIEW: "drop view",
    DDLAction.ADD_TABLE_PARTITION: "add table partition",
    DDLAction.DROP_TABLE_PARTITION: "drop table partition",
    DDLAction.TRUNCATE_TABLE_PARTITION: "truncate table partition",
    DDLAction.EXCHANGE_TABLE_PARTITION: "exchange table partition",
    DDLAction.REORGANIZE_PARTITION: "reorganize table partition",
    DDLAction.ALTER_TABLE_PARTITIONING: "alter table partitioning",
    DDLAction.REMOVE_PARTITIONING: "remove table partitioning",
    DDLAction.ADD_COLUMN: "add column",
    DDLAction.DROP_COLUMN: "drop column",
    DDLAction.MODIFY_COLUMN: "modify column",
    DDLAction.SET_DEFAULT_VALUE: "set default value",
    DDLAction.REBASE_AUTO_ID: "rebase auto id",
    DDLAction.ADD_PRIMARY_KEY: "add primary key",
    DDLAction.DROP_PRIMARY_KEY: "drop primary key",
    DDLAction.ADD_INDEX: "create index",
    DDLAction.DROP_INDEX: "drop index",
    DDLAction.RENAME_INDEX: "rename index",
    DDLAction.ALTER_INDEX_VISIBILITY: "alter index visibility",
    DDLAction.MULTI_SCHEMA_CHANGE: "multi schema change",
    DDLAction.ADD_FOREIGN_KEY: "add foreign key",
    DDLAction.DROP_FOREIGN_KEY: "drop foreign key",
    DDLAction.ADD_COLUMNS: "add column",
    DDLAction.DROP_COLUMNS: "drop column",
}

# DDLs that also count as "alter table".
_ALTER_TABLE_ACTIONS = frozenset(
    {
        DDLAction.RENAME_TABLE,
        DDLAction.RENAME_TABLES,
        DDLAction.MODIFY_TABLE_COMMENT,
        DDLAction.MODIFY_TABLE_CHARSET_AND_COLLATE,
        DDLAction.ADD_TABLE_PARTITION,
        DDLAction.DROP_TABLE_PARTITION,
        DDLAction.TRUNCATE_TABLE_PARTITION,
        DDLAction.EXCHANGE_TABLE_PARTITION,
        DDLAction.REORGANIZE_PARTITION,
        DDLAction.ALTER_TABLE_PARTITIONING,
        DDLAction.REMOVE_PARTITIONING,
        DDLAction.ADD_COLUMN,
        DDLAction.DROP_COLUMN,
        DDLAction.MODIFY_COLUMN,
        DDLAction.SET_DEFAULT_VALUE,
        DDLAction.REBASE_AUTO_ID,
        DDLAction.ADD_PRIMARY_KEY,
        DDLAction.DROP_PRIMARY_KEY,
        DDLAction.ADD_INDEX,
        DDLAction.DROP_INDEX,
        DDLAction.RENAME_INDEX,
        DDLAction.ALTER_INDEX_VISIBILITY,
        DDLAction.MULTI_SCHEMA_CHANGE,
        DDLAction.ADD_COLUMNS,
        DDLAction.DROP_COLUMNS,
    }
)

_ALIASES = {"create schema": "create database", "drop schema": "drop database"}

SUPPORTED_EVENT_TYPES: tuple[str, ...] = tuple(
    dict.fromkeys(
        ["all dml", "all ddl", *DML_EVENTS, "alter table", "create schema", "drop schema", *DDL_EVENT_TYPES.values()]
    )
)

# key -> the EventFilterRule field holding it
_EXPR_KEYS = {
    "ignore-insert-value-expr": "ignore_insert_value_expr",
    "ignore-update-new-value-expr": "ignore_update_new_value_expr",
    "ignore-update-old-value-expr": "ignore_update_old_value_expr",
    "ignore-delete-value-expr": "ignore_delete_value_expr",
}
RULE_KEYS = ("matcher", "ignore-event", "ignore-sql", *_EXPR_KEYS)

Predicate = Callable[[Row], Any]  # the expression's value; the row matches when it is 1


@dataclass(frozen=True)
class EventFilterRule:
    """One ``[[filter.event-filters]]`` entry, already validated."""

    matcher: tuple[str, ...]
    ignore_event: tuple[str, ...] = ()
    ignore_sql: tuple[str, ...] = ()
    ignore_insert_value_expr: str = ""
    ignore_update_new_value_expr: str = ""
    ignore_update_old_value_expr: str = ""
    ignore_delete_value_expr: str = ""

    @classmethod
    def from_toml(cls, table: Mapping[str, Any], where: str = "filter.event-filters") -> EventFilterRule:
        """Build from a TOML/JSON mapping with TiCDC's kebab-case keys. Raises ConfigError naming the key."""
        if not isinstance(table, Mapping):
            raise ConfigError(f"{where}: must be a table, got {type(table).__name__}")
        for key in table:
            if key not in RULE_KEYS:
                raise ConfigError(f"{where}: unknown key {key!r}; use one of: {', '.join(RULE_KEYS)}")
        exprs = {}
        for key, field in _EXPR_KEYS.items():
            value = table.get(key, "")
            if not isinstance(value, str):
                raise ConfigError(f"{where}.{key}: must be a string (a TiDB expression)")
            exprs[field] = value
        rule = cls(
            matcher=_strings(table.get("matcher", []), f"{where}.matcher"),
            ignore_event=_strings(table.get("ignore-event", []), f"{where}.ignore-event"),
            ignore_sql=_strings(table.get("ignore-sql", []), f"{where}.ignore-sql"),
            **exprs,
        )
        rule.validate(where)
        return rule

    def expressions(self) -> dict[str, str]:
        """The expression filters this rule sets, by key."""
        return {key: getattr(self, field) for key, field in _EXPR_KEYS.items() if getattr(self, field)}

    def validate(self, where: str = "filter.event-filters") -> None:
        """Raises ConfigError: an unknown event type, a bad matcher or regex, or an expression that does not
        parse (``CDC:ErrInvalidFilterExpression``, naming the key)."""
        for event in self.ignore_event:
            if event not in SUPPORTED_EVENT_TYPES:
                raise ConfigError(
                    f"invalid ignore event type {event!r}; 'ignore-event' accepts: {', '.join(SUPPORTED_EVENT_TYPES)}",
                    code=ERR_INVALID_IGNORE_EVENT_TYPE,
                )
        TableFilter.parse(self.matcher, case_sensitive=True)
        _sql_regex(self.ignore_sql)
        for key, text in self.expressions().items():
            try:
                _parse(text)
            except ConfigError as e:
                raise ConfigError(f"{where}.{key}: {e.message}", code=e.code) from None

    def to_toml(self) -> dict[str, Any]:
        return {
            "matcher": list(self.matcher),
            "ignore-event": list(self.ignore_event),
            "ignore-sql": list(self.ignore_sql),
            **{key: getattr(self, field) for key, field in _EXPR_KEYS.items()},
        }


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: must be a list of strings")
    return tuple(value)


def _sql_regex(patterns: Sequence[str]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    joined = "|".join(patterns)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return re.compile(joined, re.IGNORECASE)
    except re.error as e:
        raise ConfigError(f"invalid ignore-sql pattern {joined!r}: {e}", code=ERR_FILTER_RULE_INVALID) from e


def _parse(text: str) -> Any:
    """``expr_compile.parse_expression``, imported on first use: it loads sqlglot (~0.07 CPU-s), which the Python
    processes Spark starts for each query of a changefeed without expression filters never need."""
    from sparkcdc.filter.expr_compile import parse_expression

    return parse_expression(text)


class _CompiledRule:
    def __init__(self, rule: EventFilterRule) -> None:
        self.tables = TableFilter.parse(rule.matcher, case_sensitive=True)
        self.events = frozenset(_ALIASES.get(e, e) for e in rule.ignore_event)
        self.sql = _sql_regex(rule.ignore_sql)
        self.exprs = {field: (text, _parse(text)) for field, text in
                      ((f, getattr(rule, f)) for f in _EXPR_KEYS.values()) if text}  # fmt: skip

    def predicate(self, field: str, table: TableInfo) -> Predicate:
        """The expression of ``field`` (an EventFilterRule field) compiled for ``table``. Raises ConfigError
        ``CDC:ErrExpressionColumnNotFound`` when it names a column the table lacks."""
        from sparkcdc.filter.expr_compile import compile_predicate

        text, tree = self.exprs[field]
        return compile_predicate(tree, text, table)

    def applies(self, schema: str, table: str | None) -> bool:
        if table:
            return self.tables.match_table(schema, table)
        return self.tables.match_schema(schema)

    def ignores(self, event: str, is_dml: bool, query: str) -> bool:
        if ("all dml" in self.events and is_dml) or ("all ddl" in self.events and not is_dml) or event in self.events:
            return True
        return bool(query) and self.sql is not None and self.sql.search(query) is not None


# the expression fields tested for each operation, in image order (an UPDATE: old row, then new row)
_FIELDS = {
    RowOp.INSERT: ("ignore_insert_value_expr",),
    RowOp.DELETE: ("ignore_delete_value_expr",),
    RowOp.UPDATE: ("ignore_update_old_value_expr", "ignore_update_new_value_expr"),
}
_OPS = {"insert": RowOp.INSERT, "update": RowOp.UPDATE, "delete": RowOp.DELETE}


class _TablePlan:
    """What the rules do to one table version's row changes: the operations ``ignore-event`` drops, then the
    expressions each image is tested with, compiled on the first row change of each operation (as TiCDC's
    ``getInsertExpr``…: an expression naming a column the table lacks fails only once such a row arrives)."""

    __slots__ = ("exprs", "ignored", "rules", "table")

    def __init__(self, table: TableInfo, ignored: frozenset[RowOp], rules: tuple[_CompiledRule, ...]) -> None:
        self.table = table
        self.ignored = ignored
        self.rules = rules
        self.exprs: dict[RowOp, tuple[tuple[Predicate, ...], ...]] = {}

    def predicates(self, op: RowOp) -> tuple[tuple[Predicate, ...], ...]:
        got = self.exprs.get(op)
        if got is None:
            got = self.exprs[op] = tuple(
                tuple(r.predicate(field, self.table) for r in self.rules if field in r.exprs) for field in _FIELDS[op]
            )
        return got


class EventFilter:
    """The changefeed's event filters; ``EventFilter([])`` skips nothing. Pure and picklable (compiled plans
    are rebuilt where it is unpickled)."""

    def __init__(self, rules: Iterable[EventFilterRule]) -> None:
        self.rules = tuple(rules)
        self._compiled = [_CompiledRule(r) for r in self.rules]
        self._plans: dict[tuple[str, str, int, int], _TablePlan] = {}
        self._last_table: TableInfo | None = None
        self._last_plan = _TablePlan(TableInfo("", "", 0, ()), frozenset(), ())

    def __reduce__(self) -> tuple[object, ...]:
        return (EventFilter, (self.rules,))

    def should_skip_dml(self, ev: RowChange) -> bool:
        """Whether a rule drops this row change. Raises ConfigError ``CDC:ErrExpressionColumnNotFound`` when an
        expression names a column the row's table version lacks (the changefeed then fails, as TiCDC's), and
        ExprEvalError (``CDC:ErrFailedToFilterDML``) when an expression fails on the row."""
        t = ev.table
        if t is self._last_table:  # the rows of one table version share its TableInfo: no key to build
            plan = self._last_plan
        else:
            key = (t.schema, t.table, t.version, len(t.columns))
            plan = self._plans.get(key) or self._plans.setdefault(key, self._plan(t))
            self._last_table, self._last_plan = t, plan
        op = ev.op
        if op in plan.ignored:
            return True
        if not plan.rules:
            return False
        if op is RowOp.UPDATE:
            old, new = plan.predicates(op)
            before, after = cast(Row, ev.before), cast(Row, ev.after)  # an UPDATE has both (RowChange checks)
            for p in old:
                if p(before) == 1:
                    return True
            for p in new:  # noqa: SIM110 - loops, not any(): a generator costs ~0.3 us per row here
                if p(after) == 1:
                    return True
            return False
        (preds,) = plan.predicates(op)
        row = ev.values
        for p in preds:  # noqa: SIM110 - as above
            if p(row) == 1:
                return True
        return False

    def _plan(self, table: TableInfo) -> _TablePlan:
        ignored: set[RowOp] = set()
        rules = []
        for rule in self._compiled:
            if not rule.applies(table.schema, table.table):
                continue
            ignored.update(op for name, op in _OPS.items() if rule.ignores(name, True, ""))
            if rule.exprs:
                rules.append(rule)
        return _TablePlan(table, frozenset(ignored), tuple(rules))

    def verify(self, tables: Iterable[TableInfo]) -> None:
        """Check every expression against the columns of the tables its rule matches (TiCDC's
        ``dmlExprFilter.verify`` at create and update). Raises ConfigError naming the rule's key."""
        from sparkcdc.filter.expr_compile import compile_predicate

        tables = list(tables)
        for i, (rule, compiled) in enumerate(zip(self.rules, self._compiled, strict=True)):
            if not compiled.exprs:
                continue
            for table in tables:
                if not compiled.applies(table.schema, table.table):
                    continue
                for key, text in rule.expressions().items():
                    try:
                        compile_predicate(_parse(text), text, table)
                    except ConfigError as e:
                        raise ConfigError(f"filter.event-filters[{i}].{key}: {e.message}", code=e.code) from None

    def should_skip_ddl(self, schema: str, table: str | None, action: int, query: str) -> bool:
        """Decide for one DDL. ``table`` is None/empty for schema-level DDLs; for a rename, pass the old name.

        DDL actions outside TiCDC's white list are never skipped (TiCDC logs and keeps them).
        """
        if not self._compiled:
            return False
        try:
            ddl = DDLAction(action)
        except ValueError:
            return False
        event = DDL_EVENT_TYPES.get(ddl)
        if event is None:
            return False
        alter = ddl in _ALTER_TABLE_ACTIONS
        for rule in self._compiled:
            if not rule.applies(schema, table):
                continue
            if rule.ignores(event, False, query) or (alter and rule.ignores("alter table", False, query)):
                return True
        return False
