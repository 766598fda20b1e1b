"""TiCDC's ``[[filter.event-filters]]``: drop some events of the matched tables by type or by DDL text.

A rule has ``matcher`` (table-filter rules selecting the tables it applies to), ``ignore-event`` (event
types such as ``insert``, ``all dml``, ``drop table``) and ``ignore-sql`` (regular expressions searched,
case-insensitively, in DDL statements; DML events have no SQL text). An event is skipped when any rule whose
matcher selects its table ignores it. As in TiCDC, matchers are case-sensitive whatever the changefeed's
``case-sensitive`` says. The ``ignore-*-value-expr`` expression filters are not supported: setting one is a
ConfigError rather than a silently ignored setting.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sparkcdc.errors import ConfigError
from sparkcdc.filter.table_filter import ERR_FILTER_RULE_INVALID, TableFilter
from sparkcdc.model.ddl_action import DDLAction

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

_EXPR_KEYS = (
    "ignore-insert-value-expr",
    "ignore-update-new-value-expr",
    "ignore-update-old-value-expr",
    "ignore-delete-value-expr",
)
RULE_KEYS = ("matcher", "ignore-event", "ignore-sql", *_EXPR_KEYS)


@dataclass(frozen=True)
class EventFilterRule:
    """One ``[[filter.event-filters]]`` entry, already validated."""

    matcher: tuple[str, ...]
    ignore_event: tuple[str, ...] = ()
    ignore_sql: tuple[str, ...] = ()

    @classmethod
    def from_toml(cls, table: Mapping[str, Any], where: str = "filter.event-filters") -> EventFilterRule:
        """Build from a TOML/JSON mapping with TiCDC's kebab-case keys. Raises ConfigError naming the key."""
        if not isinstance(table, Mapping):
            raise ConfigError(f"{where}: must be a table, got {type(table).__name__}")
        for key in table:
            if key not in RULE_KEYS:
                raise ConfigError(f"{where}: unknown key {key!r}; use one of: {', '.join(RULE_KEYS)}")
        for key in _EXPR_KEYS:
            if table.get(key):
                raise ConfigError(f"{where}.{key}: expression filters are not supported by sparkcdc; remove it")
        rule = cls(
            matcher=_strings(table.get("matcher", []), f"{where}.matcher"),
            ignore_event=_strings(table.get("ignore-event", []), f"{where}.ignore-event"),
            ignore_sql=_strings(table.get("ignore-sql", []), f"{where}.ignore-sql"),
        )
        rule.validate()
        return rule

    def validate(self) -> None:
        for event in self.ignore_event:
            if event not in SUPPORTED_EVENT_TYPES:
                raise ConfigError(
                    f"invalid ignore event type {event!r}; 'ignore-event' accepts: {', '.join(SUPPORTED_EVENT_TYPES)}",
                    code=ERR_INVALID_IGNORE_EVENT_TYPE,
                )
        TableFilter.parse(self.matcher, case_sensitive=True)
        _sql_regex(self.ignore_sql)

    def to_toml(self) -> dict[str, Any]:
        return {
            "matcher": list(self.matcher),
            "ignore-event": list(self.ignore_event),
            "ignore-sql": list(self.ignore_sql),
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


class _CompiledRule:
    def __init__(self, rule: EventFilterRule) -> None:
        self.tables = TableFilter.parse(rule.matcher, case_sensitive=True)
        self.events = frozenset(_ALIASES.get(e, e) for e in rule.ignore_event)
        self.sql = _sql_regex(rule.ignore_sql)

    def applies(self, schema: str, table: str | None) -> bool:
        if table:
            return self.tables.match_table(schema, table)
        return self.tables.match_schema(schema)

    def ignores(self, event: str, is_dml: bool, query: str) -> bool:
        if ("all dml" in self.events and is_dml) or ("all ddl" in self.events and not is_dml) or event in self.events:
            return True
        return bool(query) and self.sql is not None and self.sql.search(query) is not None


class EventFilter:
    """The changefeed's event filters; ``EventFilter([])`` skips nothing. Pure and picklable."""

    def __init__(self, rules: Iterable[EventFilterRule]) -> None:
        self.rules = tuple(rules)
        self._compiled = [_CompiledRule(r) for r in self.rules]

    def __reduce__(self) -> tuple[object, ...]:
        return (EventFilter, (self.rules,))

    def should_skip_dml(self, schema: str, table: str, op: str) -> bool:
        """``op`` is ``insert``, ``update`` or ``delete``. Raises ValueError for anything else (a bug)."""
        if op not in DML_EVENTS:
            raise ValueError(f"unknown DML type {op!r}")
        return any(r.applies(schema, table) and r.ignores(op, True, "") for r in self._compiled)

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
