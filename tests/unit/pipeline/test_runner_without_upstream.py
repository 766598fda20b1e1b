"""The Spark runner of a cdc server started without --upstream: no changefeed can run, so it says so before one is
created (``check_startable``) instead of a changefeed created normal that fails at once. No Spark is started: the
runner is given a stand-in session."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.changefeed.runner import RunnerContext
from sparkcdc.errors import ConfigError
from sparkcdc.pipeline.runner import SparkRunner
from sparkcdc.server.changefeed import ChangefeedManager, CreateRequest
from sparkcdc.server.store import MetaStore

SINK = "blackhole://"


def test_create_on_a_server_without_upstream_is_one_line_saying_what_to_do(tmp_path: Path) -> None:
    runner = SparkRunner(RunnerContext(data_dir=tmp_path / "data"), spark=object())
    manager = ChangefeedManager(MetaStore(tmp_path / "meta"), runner, addr="127.0.0.1:1")
    manager.start(poll=False)
    try:
        with pytest.raises(ConfigError) as e:
            manager.create(CreateRequest(changefeed_id="cf1", sink_uri=SINK))
        assert e.value.code == "CDC:ErrInvalidServerOption"
        assert "started without --upstream" in e.value.message and "--runner noop" in e.value.message
        assert "\n" not in e.value.message
        assert manager.list(None) == []
    finally:
        manager.close()
