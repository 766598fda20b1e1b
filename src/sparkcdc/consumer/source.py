"""The consumers' source seam: where changes come from (a storage-sink tree, a Kafka topic, a redo log).

A source turns what it reads into :mod:`~sparkcdc.model.steps` in the order they may be applied, resuming from the
positions its :class:`~.target.Target` holds; the one :class:`~.runner.Consumer` loop applies them and retries what
may be retried. A new source is one module implementing :class:`Source` (and its command's options).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from sparkcdc.consumer.target import Target
from sparkcdc.errors import SparkcdcError
from sparkcdc.model.steps import EngineStats, Step


class Source(Protocol):
    """What the run loop needs of a source. Methods raise SparkcdcError: CorruptDataError naming the message or
    file that cannot be read (nothing after it is applied), StorageError or KafkaError for where it reads from."""

    @property
    def bounded(self) -> bool:
        """Whether it ends by itself (a redo log, ``--once``): such a run gives up after a few failures in a row."""
        ...

    @property
    def finished(self) -> bool:
        """Nothing more will come: the loop ends."""
        ...

    def start(self, target: Target) -> None:
        """Connect and decide where to resume; then the target's start check (:meth:`Target.check_start`), or
        forget its positions when asked to start over. Called again after :meth:`close` when the loop retries."""
        ...

    def steps(self, target: Target) -> Iterator[Step]:
        """What may be applied now (one poll, one round of a tree), in order. The loop applies each step before it
        asks for the next, so code after a ``yield`` runs once that step is durable in the target (where a source
        acknowledges it: Kafka commits its offsets there)."""
        ...

    def retryable(self, error: SparkcdcError) -> bool:
        """Whether a retry may help (Kafka: not when the cluster never answered)."""
        ...

    def progress_line(self, stats: EngineStats) -> str:
        """One line for the terminal: the target's counters and where the source stands."""
        ...

    def close(self) -> None: ...
