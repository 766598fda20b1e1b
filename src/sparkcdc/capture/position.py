"""Upstream positions and start points (values: frozen, primitives only)."""

from __future__ import annotations

from dataclasses import dataclass

from sparkcdc.errors import ConfigError


@dataclass(frozen=True, slots=True)
class BinlogPosition:
    """A point in the upstream binlog between two transactions, with the TSO state needed to continue
    allocating identical commit-ts values from there (``last_tso``) and the GTID state (MariaDB
    ``domain-server-seq`` list, comma separated) reached at that point."""

    file: str
    pos: int
    gtid_state: str = ""
    last_tso: int = 0

    def __post_init__(self) -> None:
        if self.pos < 4 and self.file:
            raise ConfigError(f"invalid binlog position {self.file}:{self.pos}: positions start at 4")

    def key(self) -> tuple[int, int]:
        """Sortable (file sequence number, position)."""
        return file_seq(self.file), self.pos


def file_seq(name: str) -> int:
    """Numeric suffix of a binlog file name (``mysql-bin.000012`` -> 12)."""
    _, _, suffix = name.rpartition(".")
    if not suffix.isdigit():
        raise ConfigError(f"invalid binlog file name {name!r}: expected a numeric extension such as mysql-bin.000001")
    return int(suffix)


@dataclass(frozen=True, slots=True)
class StartPoint:
    """Where a fresh puller starts. Exactly one of the modes:

    - ``StartPoint.now()``: the current end of the binlog (the schema snapshot is taken consistently there);
    - ``StartPoint.at(BinlogPosition)``: a file/position (between transactions) with its ``last_tso``;
    - ``StartPoint.from_gtid("0-1-100")``: after the given MariaDB GTID state;
    - ``StartPoint.from_tso(ts)``: the first transaction whose commit-ts is > ts, scanning from the oldest
      binlog file the server still has whose first event is not newer than ts.
    A puller whose data dir already holds a relay log ignores the start point and resumes from its last
    durable position.
    """

    mode: str
    position: BinlogPosition | None = None
    gtid: str = ""
    tso: int = 0

    @staticmethod
    def now() -> StartPoint:
        return StartPoint("now")

    @staticmethod
    def at(position: BinlogPosition) -> StartPoint:
        return StartPoint("position", position=position)

    @staticmethod
    def from_gtid(gtid: str) -> StartPoint:
        if not gtid:
            raise ConfigError("empty GTID start point; give a MariaDB GTID list such as 0-1-100")
        return StartPoint("gtid", gtid=gtid)

    @staticmethod
    def from_tso(tso: int) -> StartPoint:
        return StartPoint("tso", tso=tso)
