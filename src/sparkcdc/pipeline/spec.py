"""What one changefeed's Spark query needs, as one picklable value stored in a private file.

The runner writes the spec to ``<changefeed dir>/spec.json`` (mode 0600: the sink URI may hold keys) and gives
the data sources only that path as an option, so secrets never appear in Spark plans or logs. The driver-side
reader/writer load it once; their pickled copies travel to executors and to the commit worker.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkcdc.errors import ConfigError, StorageError
from sparkcdc.local_file import write_atomic

if TYPE_CHECKING:
    from sparkcdc.sink.base import Sink, SinkContext

DEFAULT_CHUNK_BYTES = 4 << 20
DEFAULT_MAX_BATCH_BYTES = 256 << 20


@dataclass(frozen=True)
class FeedSpec:
    """One run of a changefeed query.

    ``start_ts``: the query's first offset (rows with commit-ts > it); ``target_ts``: 0 or the last commit-ts to
    replicate; ``sink_start_ts``: TiCDC's TableSinkStartTs (directory version floor, the checkpoint this run
    started from); ``capture_dir``: the puller's data dir (relay log); ``state_dir``: the changefeed's private
    dir where the driver-side commit records its checkpoint (``progress.json``); ``batch_interval``: seconds
    between micro-batches while the query is caught up (the sink's flush-interval); a batch the DDL barrier or
    ``max_batch_bytes`` cut short is followed at once. ``snapshot``: this run first copies the tables' rows
    (``[snapshot]``, ``sparkcdc.pipeline.snapshot_source``), reading them from ``upstream_uri``. ``ship_relay``:
    executors may not share the driver's disk (a ``spark://`` master), so the relay chunks and schema history
    travel inside the tasks instead of as paths. ``writer_tasks``: 0 when the query shuffles decoded rows to its
    writer tasks by route; n when the source's partitions are the n writer tasks themselves (``query.route_aligned``):
    each reads the batch's whole relay range and decodes only the tables it writes.
    """

    changefeed: str
    capture_dir: str
    state_dir: str
    sink_uri: str = field(repr=False)
    config: dict[str, Any] = field(default_factory=dict, repr=False)
    start_ts: int = 0
    target_ts: int = 0
    sink_start_ts: int = 0
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    tz: str | None = None
    batch_interval: float = 0.0
    upstream_uri: str = field(default="", repr=False)
    snapshot: bool = False
    ship_relay: bool = False
    writer_tasks: int = 0

    def __post_init__(self) -> None:
        if self.start_ts < 0 or self.target_ts < 0:
            raise ConfigError(f"changefeed {self.changefeed}: start-ts and target-ts must not be negative")
        if self.target_ts and self.target_ts < self.start_ts:
            raise ConfigError(
                f"changefeed {self.changefeed}: target-ts {self.target_ts} is before start-ts {self.start_ts}"
            )

    # -- derived configs (built once per spec object; the cache travels with the pickled spec) -----------
    @cached_property
    def _sink_config(self) -> Any:
        from sparkcdc.sink.base import sink_config

        return sink_config(self.sink_uri, self.config)

    def sink_config(self) -> Any:
        """The sink's validated config (validated once: clamp warnings are not repeated by every task)."""
        return self._sink_config

    @cached_property
    def _redo(self) -> Any:
        from sparkcdc.changefeed.consistent import ConsistentConfig

        config = ConsistentConfig.from_toml(self.config.get("consistent"))
        return config if config.enabled else None

    def redo(self) -> Any:
        """The redo log's settings (a ``ConsistentConfig``) when ``[consistent] level = "eventual"``, else None."""
        return self._redo

    def sink(self) -> Sink:
        from sparkcdc.sink.base import sink_for

        return sink_for(self.sink_uri)

    def sink_context(self) -> SinkContext:
        from sparkcdc.sink.base import SinkContext

        return SinkContext(changefeed=self.changefeed, sink_start_ts=self.sink_start_ts, state_dir=self.state_dir)

    def replica_config(self) -> Any:
        from sparkcdc.changefeed.config import ReplicaConfig

        return ReplicaConfig.from_toml(self.config)

    @property
    def progress_path(self) -> Path:
        return Path(self.state_dir) / "progress.json"

    @property
    def snapshot_plan_path(self) -> Path:
        return Path(self.state_dir) / "snapshot_plan.pickle"

    @property
    def snapshot_progress_path(self) -> Path:
        return Path(self.state_dir) / "snapshot.json"

    @property
    def drain_path(self) -> Path:
        """While this file exists the source plans no new micro-batch (the query is being stopped)."""
        return Path(self.state_dir) / "draining"

    # -- persistence -----------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write atomically with mode 0600. Raises StorageError."""
        write_atomic(path, json.dumps(asdict(self)).encode(), what="the changefeed spec", mode=0o600)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> FeedSpec:
        """Raises StorageError (missing/unreadable) or ConfigError (malformed)."""
        try:
            doc = json.loads(Path(path).read_text())
        except OSError as e:
            raise StorageError(f"{path}: cannot read the changefeed spec: {e.strerror or e}") from e
        except ValueError as e:
            raise ConfigError(f"{path}: the changefeed spec is not valid JSON: {e}") from e
        try:
            return cls(**doc)
        except TypeError as e:
            raise ConfigError(f"{path}: malformed changefeed spec: {e}") from e
