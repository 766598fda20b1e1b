"""Ports for the private servers of tests, benchmarks and demos: free now, and still free when the server binds.

A port from ``bind(("127.0.0.1", 0))`` is free the moment it is handed out, but the server binds it seconds later
(a JVM's start), and meanwhile nothing stops another process from taking it: any ``bind(0)`` of the machine (a
Spark JVM binds several at start, py4j and Python workers more) draws from the same kernel range, and so does
another test worker's ``bind(0)`` for its own server. While a server is stopped to be started again on its port
(an outage a test makes), the same can happen. The server then fails to start, or, worse, the readiness probe
reaches the other process's server and a test talks to it.

So :func:`free_port` hands out ports the kernel never hands out by itself (outside
``net.ipv4.ip_local_port_range``: no ``bind(0)`` or outgoing connection takes one), and reserves each for as long as
the process that asked lives, with an abstract Unix socket named after the port: no other process that asks gets
it (the kernel frees the name when the process exits, also after ``kill -9``; nothing is left on disk).
"""

from __future__ import annotations

import functools
import random
import socket
from pathlib import Path
from typing import Final

_LOWEST: Final = 10000  # below: well-known services
_RESERVATION: Final = "\0sparkcdc-port-{}"
_held: dict[int, socket.socket] = {}  # this process's reservations, kept open while it lives


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


@functools.cache
def candidates() -> tuple[int, ...]:
    """The ports :func:`free_port` chooses from: those from 10000 up the kernel does not hand out by itself (all
    of them if that leaves too few)."""
    low, high = _ephemeral_range()
    outside = tuple(p for p in range(_LOWEST, 65536) if not low <= p <= high)
    return outside if len(outside) >= 1000 else tuple(range(_LOWEST, 65536))


def _reserve(port: int) -> socket.socket | None:
    """This process's hold on ``port`` among the processes that use :func:`free_port`; None when another holds it."""
    lock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        lock.bind(_RESERVATION.format(port))
    except OSError:
        lock.close()
        return None
    return lock


def _bindable(port: int) -> bool:
    """Whether nothing on the machine uses ``port`` on 127.0.0.1 now (a listener, a connection, TIME_WAIT)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A port on 127.0.0.1 nothing uses, reserved for this process (see the module docstring): no other caller in
    any process gets it while this process lives, so a server may be stopped and started on it again. Raises
    RuntimeError when none is found (every candidate taken)."""
    pool = candidates()
    for _ in range(2000):
        port = random.choice(pool)
        if port in _held:
            continue
        lock = _reserve(port)
        if lock is None:
            continue
        if not _bindable(port):  # something outside our processes has it
            lock.close()
            continue
        _held[port] = lock
        return port
    raise RuntimeError("no free port on 127.0.0.1 outside the kernel's ephemeral range")
