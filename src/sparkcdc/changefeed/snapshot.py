"""The changefeed's ``[snapshot]`` table and the snapshot's progress (values only, no I/O).

TiCDC replicates only what changes after start-ts (TiDB users load the base data with Dumpling/Lightning).
Our upstreams are MySQL/MariaDB, so a changefeed can first copy every selected table's current rows, as
Debezium's ``snapshot.mode`` does; the mode names are Debezium's:

* ``never`` (default, TiCDC's behaviour): stream from start-ts only;
* ``initial``: copy the tables, then stream from start-ts;
* ``initial-only``: copy the tables, then finish the changefeed.

``chunk-size`` is how many rows one read (one Spark task) covers; ``parallelism`` how many chunks one micro-batch
reads at once (more tasks than the cluster's cores only queue).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from sparkcdc.errors import ConfigError

MODES: Final = ("never", "initial", "initial-only")
DEFAULT_CHUNK_SIZE = 20_000
DEFAULT_PARALLELISM = 4
MAX_CHUNK_SIZE = 10_000_000
MAX_PARALLELISM = 1024
_KEYS: Final = frozenset({"mode", "chunk-size", "parallelism"})
_ERR = "CDC:ErrInvalidReplicaConfig"


@dataclass(frozen=True)
class SnapshotConfig:
    mode: str = "never"
    chunk_size: int = DEFAULT_CHUNK_SIZE
    parallelism: int = DEFAULT_PARALLELISM

    @property
    def enabled(self) -> bool:
        return self.mode != "never"

    @classmethod
    def from_toml(cls, table: Mapping[str, Any]) -> SnapshotConfig:
        """The ``[snapshot]`` table (kebab-case keys). Raises ConfigError naming the key and what is allowed."""
        unknown = sorted(set(table) - _KEYS)
        if unknown:
            raise ConfigError(f"snapshot.{unknown[0]}: unknown key; known keys are {', '.join(sorted(_KEYS))}",
                              code=_ERR)  # fmt: skip
        mode = table.get("mode", "never")
        if mode not in MODES:
            raise ConfigError(f"snapshot.mode: {mode!r} is not one of {', '.join(MODES)}", code=_ERR)
        return cls(
            mode,
            _bounded(table, "chunk-size", DEFAULT_CHUNK_SIZE, MAX_CHUNK_SIZE),
            _bounded(table, "parallelism", DEFAULT_PARALLELISM, MAX_PARALLELISM),
        )

    def to_toml(self) -> dict[str, Any]:
        return {"mode": self.mode, "chunk-size": self.chunk_size, "parallelism": self.parallelism}


def _bounded(table: Mapping[str, Any], key: str, default: int, high: int) -> int:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
        raise ConfigError(f"snapshot.{key}: {value!r} is not an integer from 1 to {high}", code=_ERR)
    return value


@dataclass(frozen=True)
class TableProgress:
    """One table's copy: chunks and rows done against the plan's estimate; ``watermark`` is the relay's
    resolved ts before its first chunk was read (streamed changes of the table up to it are in the copy)."""

    chunks: int
    chunks_done: int = 0
    rows_done: int = 0
    rows_estimated: int = 0
    watermark: int = 0

    @property
    def done(self) -> bool:
        return self.chunks_done >= self.chunks


@dataclass(frozen=True)
class SnapshotProgress:
    """The snapshot of one changefeed run: rows copied at ``start_ts``, tables by ``schema.table``."""

    start_ts: int
    tables: Mapping[str, TableProgress] = field(default_factory=dict)
    chunks_done: frozenset[int] = frozenset()
    complete: bool = False

    @property
    def rows_done(self) -> int:
        return sum(t.rows_done for t in self.tables.values())

    @property
    def rows_estimated(self) -> int:
        return sum(t.rows_estimated for t in self.tables.values())

    def to_record(self) -> dict[str, Any]:
        """JSON-ready: the changefeed's ``snapshot.json``, and a status read from another capture of the cluster."""
        return {"start_ts": self.start_ts, "complete": self.complete, "chunks_done": sorted(self.chunks_done),
                "tables": {n: asdict(t) for n, t in self.tables.items()}}  # fmt: skip

    @classmethod
    def from_record(cls, rec: Mapping[str, Any]) -> SnapshotProgress:
        """Raises KeyError, TypeError or ValueError for a record that is not one."""
        tables = {name: TableProgress(**t) for name, t in rec["tables"].items()}
        return cls(int(rec["start_ts"]), tables, frozenset(int(c) for c in rec["chunks_done"]), bool(rec["complete"]))

    def to_api(self) -> dict[str, Any]:
        """What ``changefeed query`` and the Open API show."""
        return {
            "state": "finished" if self.complete else "running",
            "rows_done": self.rows_done,
            "rows_estimated": self.rows_estimated,
            "tables": [
                {
                    "table": name,
                    "chunks": t.chunks,
                    "chunks_done": t.chunks_done,
                    "rows_done": t.rows_done,
                    "rows_estimated": t.rows_estimated,
                }
                for name, t in sorted(self.tables.items())
            ],
        }
