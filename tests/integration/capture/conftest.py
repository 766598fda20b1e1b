"""Helpers shared by the capture integration tests."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from sparkcdc.capture import Puller, PullerConfig, RelayLog, SchemaHistory, decode_chunk
from sparkcdc.model.events import DDLEvent, RowChange
from tests.fixtures.mariadb import FreshDatabase


def make_puller(db: FreshDatabase, data_dir: Path, **kw: Any) -> Puller:
    start = kw.pop("start", None)
    return Puller(PullerConfig(data_dir=str(data_dir), **db.puller_kwargs(), **kw), start)


def decode_all(data_dir: Path, start: int = 0, target_bytes: int = 1 << 20, **kw: Any) -> list[RowChange | DDLEvent]:
    relay = RelayLog(data_dir)
    history = SchemaHistory.load(data_dir)
    out: list[RowChange | DDLEvent] = []
    for ref in relay.chunks(start, 1 << 62, target_bytes):
        out.extend(decode_chunk(ref, history, **kw))
    relay.close()
    return out


def for_schema(events: list[RowChange | DDLEvent], schema: str) -> list[RowChange | DDLEvent]:
    return [e for e in events if (e.table.schema if isinstance(e, RowChange) else e.schema) == schema]


class Running:
    """A puller running in a background thread until the context exits."""

    def __init__(self, puller: Puller) -> None:
        self.puller = puller
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.puller.run(self.stop)
        except BaseException as e:
            self.error = e

    def __enter__(self) -> Running:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(30)
        self.puller.close()
