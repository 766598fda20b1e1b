"""The sinks' per-worker client cache: made once, reused, closed once idle, never while in use."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from sparkcdc.sink.worker_cache import DEFAULT_IDLE_SECONDS, IDLE_ENV, WorkerCache, idle_seconds


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Client:
    made = 0

    def __init__(self, name: str) -> None:
        Client.made += 1
        self.name = name
        self.closed = False

    def close(self) -> None:
        self.closed = True


def cache(clock: Clock, close: Callable[[Client], None] = Client.close) -> WorkerCache[str, Client]:
    return WorkerCache(close, idle=60, clock=clock, background=False)


def test_an_entry_is_made_once_and_reused() -> None:
    clock = Clock()
    c = cache(clock)
    with c.use("a", lambda: Client("a")) as first:
        pass
    clock.now += 59
    with c.use("a", lambda: Client("again")) as second:
        assert second is first and second.name == "a"
    assert len(c) == 1 and not first.closed


def test_an_entry_unused_past_the_idle_time_is_closed_and_made_again_when_needed() -> None:
    clock = Clock()
    c = cache(clock)
    with c.use("gone", lambda: Client("gone")) as gone:
        pass
    with c.use("kept", lambda: Client("kept")) as kept:
        pass
    clock.now += 40
    with c.use("kept", lambda: Client("other")):
        pass
    clock.now += 30  # "gone" unused for 70 s, "kept" for 30 s
    assert c.sweep() == 1
    assert gone.closed and not kept.closed and len(c) == 1
    with c.use("gone", lambda: Client("gone, new")) as fresh:
        assert fresh is not gone and fresh.name == "gone, new"


def test_an_entry_in_use_is_never_closed() -> None:
    clock = Clock()
    c = cache(clock)
    with c.use("busy", lambda: Client("busy")) as busy:
        clock.now += 3600  # a batch that takes an hour
        assert c.sweep() == 0 and not busy.closed
    clock.now += 59  # its idle time counts from the end of the use
    assert c.sweep() == 0
    clock.now += 2
    assert c.sweep() == 1 and busy.closed


def test_a_failing_close_still_drops_the_entry() -> None:
    clock = Clock()

    def broken(_client: Client) -> None:
        raise OSError("connection already gone")

    c = cache(clock, broken)
    with c.use("a", lambda: Client("a")):
        pass
    clock.now += 61
    assert c.sweep() == 1 and len(c) == 0


def test_pop_forgets_without_closing_and_a_failed_create_stores_nothing() -> None:
    clock = Clock()
    c = cache(clock)
    with c.use("a", lambda: Client("a")) as a:
        pass
    assert c.pop("a") is a and not a.closed and c.pop("a") is None

    def fail() -> Client:
        raise ConnectionError("refused")

    with pytest.raises(ConnectionError), c.use("b", fail):
        pass
    assert len(c) == 0


def test_the_background_thread_closes_idle_entries() -> None:
    closed = threading.Event()
    c: WorkerCache[str, Client] = WorkerCache(lambda _client: closed.set(), idle=0.1)
    with c.use("a", lambda: Client("a")):
        pass
    assert closed.wait(5)
    assert len(c) == 0  # forgotten before it is closed


@pytest.mark.parametrize(("raw", "expected"), [(None, DEFAULT_IDLE_SECONDS), ("2", 2.0), ("0.5", 0.5),
                                               ("0", DEFAULT_IDLE_SECONDS), ("-3", DEFAULT_IDLE_SECONDS),
                                               ("soon", DEFAULT_IDLE_SECONDS)])  # fmt: skip
def test_idle_seconds_from_the_environment(monkeypatch: pytest.MonkeyPatch, raw: str | None, expected: float) -> None:
    if raw is None:
        monkeypatch.delenv(IDLE_ENV, raising=False)
    else:
        monkeypatch.setenv(IDLE_ENV, raw)
    assert idle_seconds() == expected
