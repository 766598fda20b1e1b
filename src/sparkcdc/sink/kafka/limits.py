"""Topic-level numbers the sink settles once it has asked the broker: partitions to dispatch over and the
largest message to send (TiCDC's ``AdjustOptions`` and ``SetPartitionNum``). Pure: the caller passes what the
admin client reported."""

from __future__ import annotations

import logging
from typing import Final

from sparkcdc.errors import ConfigError

log = logging.getLogger(__name__)

# Partitions of a topic the sink creates when partition-num is not set (TiCDC's defaultPartitionNum).
DEFAULT_PARTITION_NUM: Final = 3
# TiCDC keeps this far below the broker's limit: messages grow a little on the wire.
MAX_MESSAGE_BYTES_OVERHEAD: Final = 128


def effective_max_message_bytes(configured: int, broker_limit: int) -> int:
    """The producer's and codec's limit: ``max-message-bytes`` capped by the topic's ``max.message.bytes`` (or the
    broker's ``message.max.bytes`` for a topic the sink creates) less 128 bytes, with a warning when capped."""
    limit = broker_limit - MAX_MESSAGE_BYTES_OVERHEAD
    if limit < configured:
        log.warning("max-message-bytes %d is above the broker's limit %d; using %d", configured, broker_limit, limit)
        return limit
    return configured


def resolve_partition_num(configured: int, actual: int | None) -> int:
    """Partitions rows are dispatched over. ``configured`` is ``partition-num`` (0 = not set); ``actual`` the
    existing topic's partition count, None for a topic the sink creates (then ``partition-num``, default 3).

    Raises ConfigError (``CDC:ErrKafkaInvalidPartitionNum``) when ``partition-num`` exceeds the topic's count;
    a smaller one is used with a warning (the other partitions get no rows), as TiCDC does.
    """
    if actual is None:
        return configured or DEFAULT_PARTITION_NUM
    if configured == 0:
        return actual
    if configured > actual:
        raise ConfigError(
            f"the number of partition ({configured}) specified in sink-uri is more than that of actual topic "
            f"({actual}); lower partition-num or add partitions to the topic",
            code="CDC:ErrKafkaInvalidPartitionNum",
        )
    if configured < actual:
        log.warning(
            "partition-num %d is less than the topic's %d partitions; partitions %d.. get no rows",
            configured, actual, configured,
        )  # fmt: skip
    return configured
