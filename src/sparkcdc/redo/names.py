"""Names of the redo log's files under its storage root (value objects: ``format()``/``parse()`` round-trip).

One micro-batch ``(begin, end]`` of changefeed ``cf`` (its file key: ``namespace.id``) is written as one log per
relay chunk the batch reads (``index`` of ``count``), each in parts of about ``max-log-size`` (``part``; the chunk's
last part is marked), so that whether a batch is complete in the log is told by its names alone::

    <cf>_<begin:020>_<end:020>_<index:05>-<count:05>_<part:04><p|e>.log
    <cf>_<begin:020>_<end:020>_00000-00000_0000e.log      a batch without transactions (count 0)
    <cf>.meta                                             the driver's meta (checkpoint and resolved ts)

Namespaces and changefeed IDs are TiCDC's (``[a-zA-Z0-9]+(-[a-zA-Z0-9]+)*``): no ``_`` nor ``.``, so a changefeed
``namespace/id`` is ``namespace.id`` in a name, and names split without ambiguity.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

LOG_SUFFIX: Final = ".log"
META_SUFFIX: Final = ".meta"
_LOG = re.compile(r"^([A-Za-z0-9.-]+)_(\d{20})_(\d{20})_(\d{5})-(\d{5})_(\d{4})([pe])\.log\Z")
_META = re.compile(r"^([A-Za-z0-9.-]+)\.meta\Z")


@dataclass(frozen=True, order=True, slots=True)
class LogName:
    """One log file of ``changefeed`` (its :func:`file_key`): part ``part`` of chunk ``index`` (of ``count``) of batch
    ``(begin, end]``; ``last`` marks the chunk's last part. Orders as the records inside follow each other: by
    batch, chunk, part."""

    changefeed: str
    begin: int
    end: int
    index: int
    count: int
    part: int = 0
    last: bool = False

    def format(self) -> str:
        return (f"{self.changefeed}_{self.begin:020d}_{self.end:020d}_{self.index:05d}-{self.count:05d}_"
                f"{self.part:04d}{'e' if self.last else 'p'}{LOG_SUFFIX}")  # fmt: skip

    @classmethod
    def parse(cls, name: str) -> LogName | None:
        """The log file ``name`` (a base name) stands for; None when it is not one."""
        m = _LOG.match(name)
        if m is None:
            return None
        cf, begin, end, index, count, part, kind = m.groups()
        return cls(cf, int(begin), int(end), int(index), int(count), int(part), kind == "e")

    def next_part(self, *, last: bool) -> LogName:
        return LogName(self.changefeed, self.begin, self.end, self.index, self.count, self.part + 1, last)


def file_key(changefeed: str) -> str:
    """``namespace/id`` as file names spell it (``namespace.id``)."""
    return changefeed.replace("/", ".")


def changefeed_of(key: str) -> str:
    return key.replace(".", "/")


def meta_name(key: str) -> str:
    return f"{key}{META_SUFFIX}"


def parse_meta_name(name: str) -> str | None:
    """The changefeed key whose meta ``name`` is; None when it is no meta file."""
    m = _META.match(name)
    return m.group(1) if m else None
