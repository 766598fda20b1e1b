"""Executor side, source stage: one table's rows of one transaction -> messages, grouped by topic partition.

Per row, as TiCDC's MQ sink: split a key-changing UPDATE (unless ``output-raw-change-event``), choose the topic
and the partition from the full row, drop the columns the column selectors filter, encode with the protocol
(large messages handled as configured; a claim-check file is durable before its message exists). Each payload
holds the messages of one partition and is routed by that partition, so one writer task sends a partition's
messages in commit order.
"""

from __future__ import annotations

import pickle
import zlib
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

from sparkcdc.codec.base import Message
from sparkcdc.model import RowChange, RowOp, RowsEvent, TableInfo
from sparkcdc.model.events import split_key_updates
from sparkcdc.sink.base import Payload
from sparkcdc.sink.kafka.client import clients
from sparkcdc.sink.kafka.codec import message_codec
from sparkcdc.sink.kafka.config import KafkaSinkConfig
from sparkcdc.sink.kafka.partition import TablePartition, TsPartition


def route_of(topic: str, partition: int) -> int:
    """The writer route of a topic partition (a stable non-negative int; writer task = route % writers).

    Consecutive partitions get consecutive routes, so a topic's partitions spread over the writer tasks (a CRC of
    topic and partition number does not: CRC-32 is linear, and partitions 0-3 all landed on one of two tasks)."""
    return (zlib.crc32(topic.encode()) + partition) & 0x7FFFFFFF


Keys = tuple[bytes | None, ...] | None


def pack(topic: str, partition: int, values: Sequence[bytes], keys: Sequence[bytes | None] | None = None) -> bytes:
    """A payload's bytes: the destination, the message values and their keys (None when no message has one: only
    avro writes keys) — our own bytes between our processes."""
    keyed = tuple(keys) if keys is not None and any(k is not None for k in keys) else None
    return pickle.dumps((topic, partition, tuple(values), keyed), protocol=pickle.HIGHEST_PROTOCOL)


def unpack(data: bytes) -> tuple[str, int, tuple[bytes, ...], Keys]:
    topic, partition, values, keys = pickle.loads(data)
    return topic, partition, values, keys


class KafkaEncoder:
    """One instance per task; the codec's and the router's per-table caches live as long as it does."""

    def __init__(self, config: KafkaSinkConfig, changefeed: str) -> None:
        self.config = config
        self.changefeed = changefeed
        self.router = config.event_router()
        self.selectors = config.column_selectors()
        self.codec: Any = message_codec(config, changefeed)
        self._verified: set[tuple[str, str, int]] = set()
        self._claim_storage: Any = None

    def encode(self, rows: Sequence[RowChange]) -> Iterator[Payload]:
        if not self.config.output_raw_change_event:
            rows = split_key_updates(rows)
        table = rows[0].table
        self._verify(table)
        topic = self.router.topic_for_table(table.schema, table.table)
        with clients(self.config, self.changefeed) as client:
            count = client.topics.partitions(topic)
        generator = self.router.partition_generator(table.schema, table.table)
        # default/table: one partition for the whole table, computed once instead of per row
        fixed = generator.partition(rows[0], count).index if isinstance(generator, TablePartition) else None
        encode = self.codec.encode_row if self.config.large_message_handle_option == "none" else self._checked
        if self.config.protocol == "avro":  # the registry's subjects are the topic's
            encode = partial(self.codec.encode_row, topic=topic)
        select = self.selectors.select if self.selectors.rules else None
        batch = getattr(self.codec, "encode_rows", None) if select is None else None
        messages: list[Message] | None = batch(rows) if batch is not None else None  # canal-json: per transaction
        if messages is None:  # the partition is chosen from the full row, the message from the selected one
            messages = [encode(row if select is None else select(row)) for row in rows]
        groups: dict[int, list[Message]] = {}
        for row, message in zip(rows, messages, strict=True):
            partition = fixed if fixed is not None else generator.partition(row, count).index
            groups.setdefault(partition, []).append(message)
        for partition, group in groups.items():
            values, keys = [m.value for m in group], [m.key for m in group]
            yield Payload(route_of(topic, partition), rows[0].physical_table_id, len(values),
                          pack(topic, partition, values, keys))  # fmt: skip

    def encode_events(self, events: Sequence[RowsEvent]) -> Iterator[Payload]:
        """``encode`` of the events' rows; their messages come from the protocol's native kernel when the whole
        table goes to one partition per transaction (dispatchers ``default``, ``table``, ``ts``), no column
        selector applies and every message fits (large-message handling is the Python path's)."""
        table = events[0].table
        generator = self.router.partition_generator(table.schema, table.table)
        native = getattr(self.codec, "encode_events", None)
        messages = None
        if native is not None and not self.selectors.rules and isinstance(generator, TablePartition | TsPartition):
            self._verify(table)
            messages = native(events, not self.config.output_raw_change_event)
        if messages is None:
            yield from self.encode([row for e in events for row in e.rows()])
            return
        topic = self.router.topic_for_table(table.schema, table.table)
        with clients(self.config, self.changefeed) as client:
            count = client.topics.partitions(topic)
        # the partition of any row of the transaction: these dispatchers read only its table and commit-ts
        probe = RowChange(events[0].commit_ts, table, RowOp.INSERT, None, (), events[0].physical_table_id)
        partition = generator.partition(probe, count).index
        yield Payload(route_of(topic, partition), events[0].physical_table_id, len(messages),
                      pack(topic, partition, messages))  # fmt: skip

    def _verify(self, table: TableInfo) -> None:
        """TiCDC's VerifyTables, once per table version: the dispatchers' index/columns exist, the selectors keep
        the row's identity. Raises ConfigError (the changefeed fails: a retry cannot fix it)."""
        key = (table.schema, table.table, table.version)
        if key in self._verified:
            return
        self.router.verify_tables([table])
        self.selectors.verify_tables([table], self.router)
        self._verified.add(key)

    def _checked(self, row: RowChange) -> Message:
        """The message with large-message handling (``none`` is the codec's ``encode_row``: it raises
        CDC:ErrMessageTooLarge for a message above max-message-bytes)."""
        encoded = self.codec.encode_row_checked(row)
        if encoded.claim_check is not None:
            if self._claim_storage is None:
                from sparkcdc.storage.external import ExternalStorage

                self._claim_storage = ExternalStorage.from_uri(self.config.claim_check_storage_uri)
            self._claim_storage.write(encoded.claim_check.name, encoded.claim_check.data)
        return encoded.message  # type: ignore[no-any-return]
