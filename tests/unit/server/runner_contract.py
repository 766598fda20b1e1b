"""Checks any ChangefeedRunner against the contract in sparkcdc.changefeed.runner (reusable by the pipeline's tests).

Usage: ``check_runner_contract(my_runner, info)`` where ``info`` is a ChangefeedInfo the runner can start.
"""

from __future__ import annotations

from sparkcdc.changefeed.info import ChangefeedInfo
from sparkcdc.changefeed.runner import ChangefeedRunner, RunnerStatus


def check_runner_contract(runner: ChangefeedRunner, info: ChangefeedInfo) -> None:
    assert isinstance(runner, ChangefeedRunner)
    now = runner.current_tso()
    oldest = runner.oldest_retained_tso()
    assert 0 <= oldest <= now, (oldest, now)
    assert runner.status(info.namespace, info.id) is None, "status of a changefeed never started must be None"
    runner.stop(info.namespace, info.id)  # unknown id: no-op

    runner.start(info, info.start_ts)
    st = runner.status(info.namespace, info.id)
    assert st is None or isinstance(st, RunnerStatus)
    if st is not None:
        assert st.checkpoint_ts >= info.start_ts and st.error is None
    runner.stop(info.namespace, info.id)
    runner.stop(info.namespace, info.id)  # idempotent
    assert runner.status(info.namespace, info.id) is None

    runner.start(info, info.start_ts)  # start again after stop
    runner.gc(oldest)  # the safepoint never asks for more than what is already refused
    assert runner.oldest_retained_tso() >= oldest
    runner.stop(info.namespace, info.id)
    runner.remove(info)
    runner.close()
