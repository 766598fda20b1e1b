"""The test servers' ports (``sparkcdc.devtools.ports``): out of the kernel's own range, and one process's
reservations kept from every other process that asks."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from sparkcdc.devtools import ports


def test_ports_are_distinct_and_outside_the_range_the_kernel_hands_out_by_itself() -> None:
    low, high = ports._ephemeral_range()
    given = [ports.free_port() for _ in range(50)]
    assert len(set(given)) == 50
    assert not [p for p in given if low <= p <= high]
    with socket.socket() as s:  # what bind(0) (every Spark JVM, py4j, a Python worker) takes is never one of them
        s.bind(("127.0.0.1", 0))
        assert low <= s.getsockname()[1] <= high


def test_a_port_another_process_holds_is_never_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """The other xdist worker's ports, also while its server is stopped for an outage, and ports a program of the
    machine listens on, are skipped."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; from sparkcdc.devtools.ports import free_port; "
                              "print(*(free_port() for _ in range(20)), flush=True); sys.stdin.read()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert child.stdout is not None
        theirs = tuple(int(p) for p in child.stdout.readline().split())
        with socket.socket() as busy:
            busy.bind(("127.0.0.1", 0))
            busy.listen()
            spare = ports.free_port()
            ports._held.pop(spare).close()  # free, and held by no one
            monkeypatch.setattr(ports, "candidates", lambda: (*theirs, busy.getsockname()[1], spare))
            assert ports.free_port() == spare
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(10)
