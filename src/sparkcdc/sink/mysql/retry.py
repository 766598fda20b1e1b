"""Retrying downstream work that failed for a reason a retry may fix (connection lost or refused, deadlock, lock
wait timeout), with TiCDC's backoff shape (0.5 s doubling), for a bounded time: a longer outage fails the batch, the
changefeed shows a warning and the runner restarts the query, which retries again from the last checkpoint."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from sparkcdc.errors import SparkcdcError

log = logging.getLogger(__name__)

T = TypeVar("T")
RETRY_SECONDS = 10.0
_BASE_DELAY, _MAX_DELAY = 0.5, 4.0


def with_retries(work: Callable[[], T], what: str, *, budget: float = RETRY_SECONDS) -> T:
    """``work()``, again after each retryable SparkcdcError until ``budget`` seconds have passed. Raises the last
    error (or a non-retryable one at once)."""
    deadline = time.monotonic() + budget
    delay = _BASE_DELAY
    while True:
        try:
            return work()
        except SparkcdcError as e:
            if not e.retryable or time.monotonic() + delay > deadline:
                raise
            log.warning("%s failed, retrying in %.1fs: %s", what, delay, e.message)
            time.sleep(delay)
            delay = min(delay * 2, _MAX_DELAY)
