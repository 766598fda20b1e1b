"""TiCDC's event router: the topic and partition of every row, DDL, watermark and bootstrap message.

``[[sink.dispatchers]]`` rules are tried in order and the **first** whose ``matcher`` (table-filter rules,
case-insensitive unless the changefeed is ``case-sensitive``) selects the table decides; a final implicit rule
``matcher = ["*.*"], partition = "default", topic = ""`` catches the rest, so every table has a route. Pure:
no client, no I/O; an :class:`EventRouter` pickles to executors by its rules.

Where the other events go (tiflow ``ddlsink/mq`` and ``GetTopicForDDL``, the same in pingcap/ticdc):

* a DDL goes to the topic of its table, named by the table *before* the DDL (a RENAME goes to the old name's
  topic); a DDL without a table (CREATE/DROP DATABASE) goes to the default topic. canal-json (and canal) send it
  to partition 0 only, every other protocol to all partitions of that topic (:func:`ddl_partitions`);
* a watermark goes to every partition of every active table's topic and of the default topic
  (:meth:`EventRouter.active_topics`); with no tables, to the default topic only;
* the simple protocol's BOOTSTRAP goes to all partitions of the table's topic, or partition 0 when
  ``send-bootstrap-to-all-partition = false``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sparkcdc.errors import ConfigError
from sparkcdc.filter.table_filter import TableFilter
from sparkcdc.model import DDLEvent, RowChange, TableInfo
from sparkcdc.sink.kafka.partition import (
    ERR_DISPATCHER,
    ColumnsPartition,
    IndexValuePartition,
    Partition,
    PartitionGenerator,
    partition_generator,
)
from sparkcdc.sink.kafka.topic import TopicRule

ERR_SINK_CONFIG = "CDC:ErrSinkInvalidConfig"
_RULE_KEYS = frozenset({"matcher", "dispatcher", "partition", "index", "columns", "topic"})
# Protocols whose DDL messages TiCDC sends to partition 0 only (getDDLDispatchRule).
_DDL_TO_PARTITION_ZERO = frozenset({"canal", "canal-json"})


@dataclass(frozen=True, slots=True)
class DispatchRule:
    """One ``[[sink.dispatchers]]`` table. ``partition`` keeps the spelling given (``dispatcher``, TiCDC's
    deprecated name for it, is folded in)."""

    matcher: tuple[str, ...]
    partition: str = "default"
    index: str = ""
    columns: tuple[str, ...] = ()
    topic: str = ""


def parse_dispatch_rules(raw: Any) -> tuple[DispatchRule, ...]:
    """Validate ``[[sink.dispatchers]]`` (a list of tables) into rules.

    Raises ConfigError naming the rule (1-based) for a non-table entry, an unknown key, a value of the wrong
    type, or both ``dispatcher`` and ``partition`` set (``CDC:ErrSinkInvalidConfig``, as TiCDC).
    """
    if raw is None:
        return ()
    if not isinstance(raw, Sequence) or isinstance(raw, (str, bytes)):
        raise ConfigError("[sink] dispatchers must be an array of tables ([[sink.dispatchers]])", code=ERR_SINK_CONFIG)
    rules = []
    for n, item in enumerate(raw, 1):
        where = f"[[sink.dispatchers]] #{n}"
        if not isinstance(item, Mapping):
            raise ConfigError(f"{where} must be a table, got {type(item).__name__}", code=ERR_SINK_CONFIG)
        for key in item:
            if key not in _RULE_KEYS:
                raise ConfigError(
                    f"unknown key {key!r} in {where}; allowed: {', '.join(sorted(_RULE_KEYS))}", code=ERR_SINK_CONFIG
                )
        matcher = _strings(item.get("matcher", []), f"{where} matcher")
        old, new = (
            _string(item.get("dispatcher", ""), f"{where} dispatcher"),
            _string(item.get("partition", ""), f"{where} partition"),
        )
        if old and new:
            raise ConfigError(
                f"{where}: dispatcher and partition cannot be configured both; keep partition (dispatcher is its "
                "deprecated name)",
                code=ERR_SINK_CONFIG,
            )
        rules.append(
            DispatchRule(
                matcher=matcher,
                partition=new or old or "default",
                index=_string(item.get("index", ""), f"{where} index"),
                columns=_strings(item.get("columns", []), f"{where} columns"),
                topic=_string(item.get("topic", ""), f"{where} topic"),
            )
        )
    return tuple(rules)


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{where} must be a string, got {value!r}", code=ERR_SINK_CONFIG)
    return value


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        raise ConfigError(f"{where} must be an array of strings, got {value!r}", code=ERR_SINK_CONFIG)
    return tuple(_string(v, where) for v in value)


def ddl_partitions(protocol: str, partition_num: int) -> range:
    """Partitions a DDL message is sent to: ``[0]`` for canal-json, every partition otherwise."""
    return range(1) if protocol in _DDL_TO_PARTITION_ZERO else range(partition_num)


def bootstrap_partitions(to_all_partitions: bool, partition_num: int) -> range:
    """Partitions a simple BOOTSTRAP message is sent to (``send-bootstrap-to-all-partition``)."""
    return range(partition_num) if to_all_partitions else range(1)


class _MatchNothing:
    """The filter of a rule with an empty matcher: TiDB's table filter of no rules selects no table."""

    def match_table(self, schema: str, table: str) -> bool:
        return False


_NOTHING = _MatchNothing()


@dataclass(frozen=True)
class _Route:
    filter: TableFilter | _MatchNothing
    topic: TopicRule
    partition: PartitionGenerator


class EventRouter:
    """Topic and partition of each event, from the dispatcher rules and the default topic.

    Raises ConfigError at construction for an invalid matcher (``CDC:ErrFilterRuleInvalid``) or topic
    expression (``CDC:ErrKafkaTopicExprInvalid``); :meth:`partition_for_row` raises ConfigError
    (``CDC:ErrDispatcherFailed``) when a rule names an index or column the table lacks.
    """

    def __init__(self, rules: Sequence[DispatchRule], default_topic: str, *, case_sensitive: bool = False) -> None:
        self.rules = tuple(rules)
        self.default_topic = default_topic
        self.case_sensitive = case_sensitive
        catch_all = DispatchRule(matcher=("*.*",), partition="default", topic="")
        self._routes = tuple(
            _Route(
                TableFilter.parse(rule.matcher, case_sensitive=case_sensitive) if rule.matcher else _NOTHING,
                TopicRule.parse(rule.topic, default_topic),
                partition_generator(rule.partition, rule.index, rule.columns),
            )
            for rule in (*self.rules, catch_all)
        )

    def _route(self, schema: str, table: str) -> _Route:
        for route in self._routes:
            if route.filter.match_table(schema, table):
                return route
        raise AssertionError("the catch-all dispatch rule matches every table")  # pragma: no cover

    def topic_for_table(self, schema: str, table: str) -> str:
        """The topic of a table's rows (TiCDC's ``GetTopicForRowChange``)."""
        return self._route(schema, table).topic.topic(schema, table)

    def topic_for_row(self, row: RowChange) -> str:
        return self.topic_for_table(row.table.schema, row.table.table)

    def topic_for_ddl(self, ddl: DDLEvent) -> str:
        """The topic of a DDL: its table's before the DDL; the default topic for database-level DDLs."""
        if ddl.pre_table_info is not None:
            schema, table = ddl.pre_table_info.schema, ddl.pre_table_info.table
        elif ddl.table_info is not None:
            schema, table = ddl.table_info.schema, ddl.table_info.table
        else:
            schema, table = ddl.schema, ddl.table
        if not table:
            return self.default_topic
        return self.topic_for_table(schema, table)

    def partition_generator(self, schema: str, table: str) -> PartitionGenerator:
        return self._route(schema, table).partition

    def partition_for_row(self, row: RowChange, partition_num: int) -> Partition:
        """The partition (and TiCDC's partition key) of a row in a topic of ``partition_num`` partitions."""
        return self._route(row.table.schema, row.table.table).partition.partition(row, partition_num)

    def active_topics(self, tables: Iterable[tuple[str, str]]) -> list[str]:
        """Distinct topics of the given (schema, table) pairs in first-seen order, then the default topic if it
        is not among them: where TiCDC broadcasts watermarks."""
        topics: list[str] = []
        for schema, table in tables:
            topic = self.topic_for_table(schema, table)
            if topic not in topics:
                topics.append(topic)
        if self.default_topic not in topics:
            topics.append(self.default_topic)
        return topics

    def verify_tables(self, tables: Iterable[TableInfo]) -> None:
        """TiCDC's ``VerifyTables``: an ``index`` must exist and be unique, ``columns`` must exist and be stored.

        Raises ConfigError (``CDC:ErrDispatcherFailed``) naming the table and the index or column.
        """
        for info in tables:
            generator = self.partition_generator(info.schema, info.table)
            if isinstance(generator, IndexValuePartition) and generator.index:
                wanted = generator.index.lower()
                found = next((idx for idx in info.indexes if idx.name.lower() == wanted), None)
                if found is None:
                    raise ConfigError(
                        f"index not found when verify the table, table: {info.qualified_name}, "
                        f"index: {generator.index}; fix the dispatcher's index",
                        code=ERR_DISPATCHER,
                    )
                if not (found.unique or found.primary):
                    raise ConfigError(
                        f"index is not unique when verify the table, table: {info.qualified_name}, "
                        f"index: {generator.index}; index-value dispatch needs a unique index",
                        code=ERR_DISPATCHER,
                    )
            elif isinstance(generator, ColumnsPartition):
                generator.columns_of(info)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.rules, self.default_topic, self.case_sensitive))

    def __repr__(self) -> str:
        return f"EventRouter(default_topic={self.default_topic!r}, rules={len(self.rules)})"


def _rebuild(rules: tuple[DispatchRule, ...], default_topic: str, case_sensitive: bool) -> EventRouter:
    return EventRouter(rules, default_topic, case_sensitive=case_sensitive)
