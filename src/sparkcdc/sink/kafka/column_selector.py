"""TiCDC's ``[[sink.column-selectors]]``: which columns of a table's rows the MQ sink sends.

Each selector has a ``matcher`` (table-filter rules, case-insensitive unless the changefeed is
``case-sensitive``) and ``columns`` (TiDB column-filter rules: ``*``, ``!secret``, ``a?``, ``[a-c]*``,
```quoted```, ``/regex/``; always case-insensitive; the last matching rule decides; no rule matches nothing).
The **first** selector whose matcher selects a table applies; a table no selector matches keeps every column.

A filtered column is absent from the message (not NULL). TiCDC refuses a configuration that would drop the
row's identity (``VerifyTables``, pingcap/ticdc's rule): when the table has a primary key all its columns must
be kept, otherwise every column of at least one unique index; and a column named by a ``columns`` partition
dispatcher must be kept. Both raise ConfigError ``CDC:ErrColumnSelectorFailed``.

:meth:`ColumnSelectors.select` is a pure function over rows: it returns the row with a projected
:class:`TableInfo` (one object per source table version, so encoders' per-table caches keep working) and
projected images. Apply it after splitting key-changing UPDATEs and choose the partition from the full row
(pingcap/ticdc's order; the kept handle key makes both orders agree for ``default``/``index-value``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from sparkcdc.errors import ConfigError
from sparkcdc.filter.table_filter import ERR_FILTER_RULE_INVALID, TableFilter, _Matcher, _RuleParser
from sparkcdc.model import RowChange, TableInfo
from sparkcdc.sink.kafka.dispatcher import EventRouter
from sparkcdc.sink.kafka.partition import ColumnsPartition

ERR_COLUMN_SELECTOR = "CDC:ErrColumnSelectorFailed"
_SELECTOR_KEYS = frozenset({"matcher", "columns"})
_CACHE_LIMIT: Final = 4096


@dataclass(frozen=True, slots=True)
class ColumnSelectorRule:
    """One ``[[sink.column-selectors]]`` table."""

    matcher: tuple[str, ...]
    columns: tuple[str, ...]


def parse_column_selectors(raw: Any) -> tuple[ColumnSelectorRule, ...]:
    """Validate ``[[sink.column-selectors]]``; raises ConfigError naming the selector (1-based) and the key."""
    if raw is None:
        return ()
    if not isinstance(raw, Sequence) or isinstance(raw, (str, bytes)):
        raise ConfigError(
            "[sink] column-selectors must be an array of tables ([[sink.column-selectors]])",
            code="CDC:ErrSinkInvalidConfig",
        )
    out = []
    for n, item in enumerate(raw, 1):
        where = f"[[sink.column-selectors]] #{n}"
        if not isinstance(item, Mapping):
            raise ConfigError(f"{where} must be a table, got {type(item).__name__}", code="CDC:ErrSinkInvalidConfig")
        for key in item:
            if key not in _SELECTOR_KEYS:
                raise ConfigError(
                    f"unknown key {key!r} in {where}; allowed: columns, matcher", code="CDC:ErrSinkInvalidConfig"
                )
        values = []
        for key in ("matcher", "columns"):
            value = item.get(key, [])
            if (
                not isinstance(value, Sequence)
                or isinstance(value, (str, bytes))
                or not all(isinstance(v, str) for v in value)
            ):
                raise ConfigError(
                    f"{where} {key} must be an array of strings, got {value!r}", code="CDC:ErrSinkInvalidConfig"
                )
            values.append(tuple(value))
        out.append(ColumnSelectorRule(values[0], values[1]))
    return tuple(out)


class ColumnFilter:
    """TiDB's column filter (``filter.ParseColumnFilter``): last matching rule decides, no match = dropped."""

    def __init__(self, rules: Iterable[str]) -> None:
        self.rules = tuple(rules)
        parsed: list[tuple[_Matcher, bool]] = []
        for text in self.rules:
            rule = _parse_column_rule(text)
            if rule is not None:
                parsed.append(rule)
        self._reversed = tuple(reversed(parsed))

    def match(self, column: str) -> bool:
        name = column.lower()
        for matcher, positive in self._reversed:
            if matcher.match(name):
                return positive
        return False


def _parse_column_rule(text: str) -> tuple[_Matcher, bool] | None:
    parser = _RuleParser(text)
    line = text.strip(" \t")
    if not line or line.startswith("#"):
        return None
    positive = True
    if line[0] == "!":
        positive, line = False, line[1:]
    elif line[0] == "@":
        raise ConfigError(
            f"invalid column filter rule {text!r}: importing filter files with '@' is not supported",
            code=ERR_FILTER_RULE_INVALID,
        )
    try:
        matcher, rest = parser.pattern(line)
    except ConfigError as e:
        raise ConfigError(
            e.message.replace("invalid filter rule", "invalid column filter rule"), code=ERR_FILTER_RULE_INVALID
        ) from None
    if rest:
        raise ConfigError(
            f"invalid column filter rule {text!r}: unexpected special character {rest[0]!r} (escape it as \\{rest[0]})",
            code=ERR_FILTER_RULE_INVALID,
        )
    return matcher.lowered(), positive


@dataclass(frozen=True)
class _Selector:
    tables: TableFilter | None
    columns: ColumnFilter

    def matches(self, schema: str, table: str) -> bool:
        return self.tables is not None and self.tables.match_table(schema, table)


class ColumnSelectors:
    """All column selectors of a changefeed; pickles by its rules."""

    def __init__(self, rules: Sequence[ColumnSelectorRule], *, case_sensitive: bool = False) -> None:
        self.rules = tuple(rules)
        self.case_sensitive = case_sensitive
        self._selectors = tuple(
            _Selector(
                TableFilter.parse(rule.matcher, case_sensitive=case_sensitive) if rule.matcher else None,
                ColumnFilter(rule.columns),
            )
            for rule in self.rules
        )
        self._projections: dict[int, tuple[TableInfo, TableInfo, tuple[int, ...] | None]] = {}

    def columns_for(self, schema: str, table: str) -> ColumnFilter | None:
        """The column filter of the first selector matching the table, None when no selector does."""
        for selector in self._selectors:
            if selector.matches(schema, table):
                return selector.columns
        return None

    def _projection(self, table: TableInfo) -> tuple[TableInfo, tuple[int, ...] | None]:
        cached = self._projections.get(id(table))
        if cached is not None and cached[0] is table:
            return cached[1], cached[2]
        columns = self.columns_for(table.schema, table.table)
        keep = None if columns is None else tuple(i for i, c in enumerate(table.columns) if columns.match(c.name))
        if keep is None or len(keep) == len(table.columns):
            projected, positions = table, None
        else:
            kept_names = {table.columns[i].name.lower() for i in keep}
            projected = replace(
                table,
                columns=tuple(table.columns[i] for i in keep),
                indexes=tuple(idx for idx in table.indexes if all(n.lower() in kept_names for n in idx.columns)),
            )
            positions = keep
        if len(self._projections) >= _CACHE_LIMIT:
            self._projections.clear()
        self._projections[id(table)] = (table, projected, positions)
        return projected, positions

    def project(self, table: TableInfo) -> TableInfo:
        """``table`` as its selected rows describe it (the same object when no column is filtered)."""
        return self._projection(table)[0]

    def select(self, row: RowChange) -> RowChange:
        """``row`` without the columns its table's selector filters out (the same object when none is)."""
        projected, positions = self._projection(row.table)
        if positions is None:
            return row
        before = None if row.before is None else tuple(row.before[i] for i in positions)
        after = None if row.after is None else tuple(row.after[i] for i in positions)
        return RowChange(row.commit_ts, projected, row.op, before, after, row.physical_table_id, row.start_ts)

    def verify_tables(self, tables: Iterable[TableInfo], router: EventRouter | None = None) -> None:
        """TiCDC's ``ColumnSelectors.VerifyTables``; raises ConfigError (``CDC:ErrColumnSelectorFailed``)."""
        if not self._selectors:
            return
        for info in tables:
            for selector in self._selectors:
                if not selector.matches(info.schema, info.table):
                    continue
                kept = {c.name.lower() for c in info.columns if selector.columns.match(c.name)}
                if router is not None:
                    generator = router.partition_generator(info.schema, info.table)
                    if isinstance(generator, ColumnsPartition):
                        for column in info.columns:
                            if column.name.lower() not in kept and column.name in generator.columns:
                                raise ConfigError(
                                    f"the filtered out column is used in the column dispatcher, table: "
                                    f"{info.qualified_name}, column: {column.name}; keep it in the column selector",
                                    code=ERR_COLUMN_SELECTOR,
                                )
                if not _keeps_identity(info, kept):
                    raise ConfigError(
                        f"no primary key columns or unique key columns obtained after filter out, table: "
                        f"{info.qualified_name}; keep the primary key or a whole unique key",
                        code=ERR_COLUMN_SELECTOR,
                    )

    def __getstate__(self) -> dict[str, Any]:
        return {"rules": self.rules, "case_sensitive": self.case_sensitive}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["rules"], case_sensitive=state["case_sensitive"])  # type: ignore[misc]


def _keeps_identity(info: TableInfo, kept: set[str]) -> bool:
    pk = [c.name.lower() for c in info.columns if c.primary_key]
    if pk and all(name in kept for name in pk):
        return True
    return any(
        (idx.unique or idx.primary) and all(name.lower() in kept for name in idx.columns) for idx in info.indexes
    )
