"""Changefeed id rules, records and their text forms."""

from __future__ import annotations

import json
import re

import pytest

from sparkcdc.changefeed.info import (
    ChangefeedInfo,
    RunningError,
    new_changefeed_id,
    now_rfc3339,
    validate_changefeed_id,
)
from sparkcdc.changefeed.runner import BatchStats, RunnerStatus, SinkTotals
from sparkcdc.changefeed.snapshot import SnapshotProgress, TableProgress
from sparkcdc.errors import ConfigError, StorageError


@pytest.mark.parametrize(
    "cf", ["a", "simple-replication-task", "A1-b2-C3", "x" * 128, pytest.param(new_changefeed_id(), id="generated")]
)
def test_valid_ids(cf: str) -> None:
    validate_changefeed_id(cf)


@pytest.mark.parametrize("cf", ["", "-a", "a-", "a--b", "a_b", "a.b", "a b", "ä", "x" * 129, "a\n"])
def test_invalid_ids(cf: str) -> None:
    with pytest.raises(ConfigError) as e:
        validate_changefeed_id(cf)
    assert e.value.code == "CDC:ErrAPIInvalidParam"
    assert "\n" not in str(e.value)


def test_running_error_from_exceptions() -> None:
    err = RunningError.from_exception(StorageError("put failed\nsecond line"), "127.0.0.1:8300")
    assert err.code == "CDC:ErrExternalStorageAPI" and err.message == "put failed" and err.addr == "127.0.0.1:8300"
    other = RunningError.from_exception(KeyError("x"))
    assert other.code == "CDC:ErrProcessorUnknown" and other.message.startswith("KeyError")
    assert RunningError.from_record(err.to_record()) == err


def test_now_is_go_rfc3339() -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d*[1-9])?(Z|[+-]\d\d:\d\d)", now_rfc3339())


def test_info_repr_masks_secrets() -> None:
    info = ChangefeedInfo(id="cf", sink_uri="s3://b/p?protocol=csv&secret-access-key=TOPSECRET", start_ts=1)
    assert "TOPSECRET" not in repr(info) and "TOPSECRET" not in str(info)
    assert ChangefeedInfo.from_record(info.to_record()) == info


def test_a_runner_status_read_from_another_capture_is_the_one_it_reported() -> None:
    status = RunnerStatus(
        checkpoint_ts=440000000000000001,
        resolved_ts=440000000000000009,
        error=None,
        warning=RunningError(code="CDC:ErrKafkaSendMessage", message="broker away", addr="127.0.0.1:8301", time="t"),
        snapshot=SnapshotProgress(
            440000000000000000,
            {"db.t": TableProgress(chunks=4, chunks_done=2, rows_done=40000, rows_estimated=79000, watermark=9),
             "db.u": TableProgress(chunks=1)},
            frozenset({0, 1}),
        ),
        finished=True,
        totals=SinkTotals(rows=12, size=3400, batches=3, last_synced_ts=440000000000000001),
        last_batch=BatchStats(rows=4, size=1000, flush_seconds=0.25, batch_seconds=1.5, last_ts=440000000000000001),
        last_batch_id=7,
    )
    assert RunnerStatus.from_record(json.loads(json.dumps(status.to_record()))) == status
    bare = RunnerStatus(5, 6)
    assert RunnerStatus.from_record(bare.to_record()) == bare
