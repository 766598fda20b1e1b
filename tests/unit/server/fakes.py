"""A scriptable ChangefeedRunner for state-machine and API tests."""

from __future__ import annotations

import pytest

from sparkcdc.changefeed.info import ChangefeedInfo, RunningError
from sparkcdc.changefeed.runner import CaptureStats, RunnerStatus
from sparkcdc.errors import ConfigError, SparkcdcError
from sparkcdc.model import tso
from sparkcdc.model.table import TableInfo

NOW = tso.compose(1_700_000_000_000)
OLDEST = tso.compose(1_600_000_000_000)
SINK = "file:///tmp/sparkcdc-unit-sink?protocol=canal-json"


def object_stores_answer(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Unit tests reach no object store: the storage probe of create and update (``storage.probe``) passes without
    I/O. Returns the storages it was asked about, as named in its messages (URIs masked)."""
    asked: list[str] = []
    monkeypatch.setattr("sparkcdc.storage.probe.check_writable", lambda storage, where: asked.append(where))
    return asked


class FakeRunner:
    def __init__(self) -> None:
        self.now = NOW
        self.oldest = OLDEST
        self.running: dict[str, int] = {}
        self.progress: dict[str, RunnerStatus] = {}
        self.calls: list[tuple[str, str]] = []
        self.fail_start: SparkcdcError | None = None
        self.removed: list[str] = []
        self.gc_calls: list[int] = []
        self.closed = False
        self.capture: CaptureStats | None = None
        self.tables: list[TableInfo] | None = None  # the upstream's tables, for the expression filters' check
        self.table_reads = 0  # how often they were asked for (a read of the relay log's schema history each)
        self.engine_ready = True
        self.unstartable: str | None = None  # check_startable's refusal (a Spark runner without --upstream)

    def start(self, info: ChangefeedInfo, checkpoint_ts: int) -> None:
        self.calls.append(("start", info.id))
        if self.fail_start is not None:
            raise self.fail_start
        assert info.id not in self.running, "started twice without stop"
        self.running[info.id] = checkpoint_ts

    def stop(self, namespace: str, changefeed_id: str) -> None:
        self.calls.append(("stop", changefeed_id))
        self.running.pop(changefeed_id, None)

    def status(self, namespace: str, changefeed_id: str) -> RunnerStatus | None:
        if changefeed_id not in self.running:
            return None
        return self.progress.get(changefeed_id)

    def remove(self, info: ChangefeedInfo) -> None:
        self.removed.append(info.id)

    def current_tso(self) -> int:
        return self.now

    def oldest_retained_tso(self) -> int:
        return self.oldest

    def gc(self, safepoint_ts: int) -> None:
        """Records the safepoint and, like a real runner, refuses older start-ts from then on."""
        self.gc_calls.append(safepoint_ts)
        self.oldest = max(self.oldest, safepoint_ts)

    def activate(self) -> None:
        """Nothing runs only on the owner here."""

    def suspend(self) -> None:
        """No longer the owner: what ran here stops."""
        self.calls.append(("suspend", ""))
        self.running.clear()

    def capture_stats(self) -> CaptureStats | None:
        return self.capture

    def upstream_tables(self, ts: int) -> list[TableInfo] | None:
        self.table_reads += 1
        return self.tables

    def check_startable(self) -> None:
        if self.unstartable is not None:
            raise ConfigError(self.unstartable, code="CDC:ErrInvalidServerOption")

    def ready(self) -> bool:
        return self.engine_ready

    def close(self) -> None:
        self.closed = True

    def report(self, changefeed_id: str, checkpoint: int, error: RunningError | None = None,
               warning: RunningError | None = None) -> None:  # fmt: skip
        self.progress[changefeed_id] = RunnerStatus(checkpoint, checkpoint, error=error, warning=warning)
