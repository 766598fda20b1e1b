"""The consumers' target seam: where a source's steps are applied, found by the downstream URI's scheme.

Every consumer (``cdc storage-consumer``, ``cdc kafka-consumer``, ``cdc redo apply``) is a :class:`~.source.Source`
feeding one :class:`~.runner.Consumer` loop and one :class:`Target`. A target applies
:mod:`~sparkcdc.model.steps` atomically with each stream's position and keeps those positions itself, so a source
resumes from what the target holds (the MySQL target: ``sparkcdc.mysql.engine.ApplyEngine``, positions in the
downstream's checkpoint table; the lake target: ``lake_target.LakeTarget``, the commit-ts in every lake commit).
A new target is one module with an ``open_target(uri, options)`` function plus one line in :data:`TARGETS`, as
sinks are (``sparkcdc.sink.base``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from sparkcdc.errors import ConfigError
from sparkcdc.filter.system_schemas import CONSUMER_SCHEMA
from sparkcdc.masking import mask_uri
from sparkcdc.model.steps import Checkpoint, EngineStats, Step, StreamKey


class Target(Protocol):
    """A downstream that applies steps, effectively once. Every method raises SparkcdcError (``retryable`` when a
    retry may help: the connection was lost)."""

    stats: EngineStats
    checkpoints: Mapping[StreamKey, Checkpoint]

    def reload(self) -> None:
        """Read every stream's position again (:attr:`checkpoints`): after a failure some streams moved."""
        ...

    def ddl_version(self, schema: str, table: str) -> int:
        """The commit-ts of the table's last DDL that ran (0: none)."""
        ...

    def apply(self, step: Step) -> None:
        """Apply ``step`` after every earlier one; each batch atomically with its position."""
        ...

    def check_start(self) -> None:
        """Before anything is applied: refuse positions the downstream cannot honour any more (a table they say
        rows were applied to is gone)."""
        ...

    def reset_checkpoints(self) -> int:
        """Forget every position (start over); returns how many there were."""
        ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class TargetOptions:
    """What a consumer asks of its target. ``consumer`` names its positions (``--changefeed``, the Kafka group, the
    redo log's changefeed), ``checkpoint_schema`` where they are kept; ``workers`` streams are applied in parallel;
    ``time_zone`` is the session zone TIMESTAMP values are written in; ``on_progress`` is called after each batch."""

    consumer: str = "default"
    checkpoint_schema: str = CONSUMER_SCHEMA
    time_zone: str | None = None
    workers: int = 4
    on_progress: Callable[[], None] | None = None


# downstream URI scheme -> "module:function" opening the Target; imported when used.
TARGETS: dict[str, str] = {
    "delta": "sparkcdc.consumer.lake_target:open_target",
    "iceberg": "sparkcdc.consumer.lake_target:open_target",
    "mariadb": "sparkcdc.consumer.mysql_target:open_target",
    "mysql": "sparkcdc.consumer.mysql_target:open_target",
    "mysql+ssl": "sparkcdc.consumer.mysql_target:open_target",
    "tidb": "sparkcdc.consumer.mysql_target:open_target",
    "tidb+ssl": "sparkcdc.consumer.mysql_target:open_target",
}


def open_target(uri: str, options: TargetOptions) -> Target:
    """The target serving ``uri``'s scheme, connected. Raises ConfigError naming the schemes there are (the URI
    masked), SparkcdcError when the downstream cannot be reached."""
    try:
        scheme = urlsplit(uri).scheme.lower()
    except ValueError:
        scheme = ""
    found = TARGETS.get(scheme)
    if found is None:
        raise ConfigError(f"unsupported downstream scheme {scheme!r} in {mask_uri(uri)!r}; use one of: "
                          f"{', '.join(f'{s}://' for s in sorted(TARGETS))}", code="CDC:ErrSinkURIInvalid")  # fmt: skip
    module, _, attr = found.partition(":")
    opener: Callable[[str, TargetOptions], Target] = getattr(importlib.import_module(module), attr)
    return opener(uri, options)
