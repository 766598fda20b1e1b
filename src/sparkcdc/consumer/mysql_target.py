"""The consumers' MySQL-compatible target (``mysql://``, ``mysql+ssl://``, ``tidb://``, ``tidb+ssl://``,
``mariadb://``): the apply engine over the downstream URI."""

from __future__ import annotations

from sparkcdc.consumer.target import TargetOptions
from sparkcdc.mysql.engine import ApplyEngine
from sparkcdc.mysql.target import MysqlTarget


def open_target(uri: str, options: TargetOptions) -> ApplyEngine:
    """Log in once (an unreachable downstream or a wrong password fails at once, in the target's own words), then
    the engine. Raises ConfigError for a malformed URI, SparkcdcError when the downstream cannot be reached."""
    target = MysqlTarget.parse(uri)
    target.connect().close()
    return ApplyEngine(target, changefeed=options.consumer, time_zone=options.time_zone, workers=options.workers,
                       checkpoint_schema=options.checkpoint_schema, on_progress=options.on_progress)  # fmt: skip
