"""Changefeed records kept by the server: info (what the user asked for) and status (progress).

Both are frozen dataclasses of primitives (plus the ReplicaConfig) so they pickle and can be handed to the
pipeline's runner. ``to_record``/``from_record`` are the JSON forms stored in SQLite; the Open API shapes are
built in ``sparkcdc.server.api_model``.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sparkcdc.changefeed.config import ReplicaConfig
from sparkcdc.errors import ConfigError, SparkcdcError

DEFAULT_NAMESPACE = "default"
CHANGEFEED_ID_MAX_LEN = 128
_ID_RE = re.compile(r"^[a-zA-Z0-9]+(-[a-zA-Z0-9]+)*\Z")

ERR_API_INVALID_PARAM = "CDC:ErrAPIInvalidParam"


class FeedState(StrEnum):
    """TiCDC's changefeed states (``warning``/``pending`` are reported while a retryable error persists)."""

    NORMAL = "normal"
    STOPPED = "stopped"
    FAILED = "failed"
    FINISHED = "finished"
    REMOVED = "removed"
    WARNING = "warning"
    PENDING = "pending"


# the states in which a changefeed replicates (FeedState is a StrEnum: the API's state strings match too)
RUNNING = frozenset({FeedState.NORMAL, FeedState.WARNING, FeedState.PENDING})


def validate_changefeed_id(changefeed_id: str) -> None:
    """TiCDC's rule: ``^[a-zA-Z0-9]+(-[a-zA-Z0-9]+)*$``, at most 128 characters. Raises ConfigError."""
    if not isinstance(changefeed_id, str) or not _ID_RE.match(changefeed_id) or len(changefeed_id) > 128:
        raise ConfigError(
            f"invalid changefeed_id: {_shown(changefeed_id)}; it must match ^[a-zA-Z0-9]+(\\-[a-zA-Z0-9]+)*$ "
            f'and be at most {CHANGEFEED_ID_MAX_LEN} characters long, eg, "simple-changefeed-task"',
            code=ERR_API_INVALID_PARAM,
        )


def validate_namespace(namespace: str) -> None:
    if not isinstance(namespace, str) or not _ID_RE.match(namespace) or len(namespace) > 128:
        raise ConfigError(f"invalid namespace: {_shown(namespace)}", code=ERR_API_INVALID_PARAM)


def _shown(name: object) -> str:
    """A user-given name for a one-line message: as typed when printable, else Python-quoted."""
    return name if isinstance(name, str) and name.isprintable() else repr(name)


def new_changefeed_id() -> str:
    """A version-4 UUID, as TiCDC uses when no id is given."""
    return str(uuid.uuid4())


@dataclass(frozen=True)
class RunningError:
    """An error that stopped or disturbed a changefeed (TiCDC's ``RunningError``)."""

    code: str
    message: str
    addr: str = ""
    time: str = ""  # RFC 3339

    @classmethod
    def from_exception(cls, err: BaseException, addr: str = "") -> RunningError:
        code = err.code if isinstance(err, SparkcdcError) else "CDC:ErrProcessorUnknown"
        message = err.message if isinstance(err, SparkcdcError) else f"{type(err).__name__}: {err}"
        return cls(code=code, message=message.splitlines()[0] if message else code, addr=addr, time=now_rfc3339())

    def to_record(self) -> dict[str, Any]:
        return {"time": self.time, "addr": self.addr, "code": self.code, "message": self.message}

    @classmethod
    def from_record(cls, rec: dict[str, Any] | None) -> RunningError | None:
        if not rec:
            return None
        return cls(code=rec["code"], message=rec["message"], addr=rec.get("addr", ""), time=rec.get("time", ""))


def now_rfc3339() -> str:
    """Now as Go's ``time.RFC3339Nano`` in the local zone: trailing zeros trimmed, ``Z`` for UTC."""
    now = datetime.now(UTC).astimezone()
    text = now.strftime("%Y-%m-%dT%H:%M:%S")
    if now.microsecond:
        text += f".{now.microsecond:06d}".rstrip("0")
    offset = now.utcoffset()
    if not offset:
        return text + "Z"
    minutes = int(offset.total_seconds()) // 60
    sign = "+" if minutes >= 0 else "-"
    return text + f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


@dataclass(frozen=True)
class ChangefeedInfo:
    """What the user configured, plus the lifecycle state. Persisted; changed only by the state machine."""

    id: str
    sink_uri: str  # unmasked: mask before showing it (sparkcdc.masking.mask_uri)
    start_ts: int
    target_ts: int = 0  # 0 = no target
    config: ReplicaConfig = field(default_factory=ReplicaConfig)
    namespace: str = DEFAULT_NAMESPACE
    state: FeedState = FeedState.NORMAL
    error: RunningError | None = None
    create_time: str = field(default_factory=now_rfc3339)
    creator_version: str = ""
    upstream_id: int = 0
    stopped_at: float = 0.0  # Unix seconds when it last became stopped/failed (gc-ttl); 0 while running

    def with_changes(self, **changes: Any) -> ChangefeedInfo:
        return replace(self, **changes)

    def __repr__(self) -> str:
        from sparkcdc.masking import mask_uri

        return (
            f"ChangefeedInfo(id={self.id!r}, sink_uri={mask_uri(self.sink_uri)!r}, start_ts={self.start_ts}, "
            f"target_ts={self.target_ts}, state={self.state.value!r})"
        )

    __str__ = __repr__

    def to_record(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "namespace": self.namespace,
            "sink_uri": self.sink_uri,
            "start_ts": self.start_ts,
            "target_ts": self.target_ts,
            "config": self.config.to_toml(),
            "state": self.state.value,
            "error": self.error.to_record() if self.error else None,
            "create_time": self.create_time,
            "creator_version": self.creator_version,
            "upstream_id": self.upstream_id,
            "stopped_at": self.stopped_at,
        }

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> ChangefeedInfo:
        return cls(
            id=rec["id"],
            namespace=rec.get("namespace", DEFAULT_NAMESPACE),
            sink_uri=rec["sink_uri"],
            start_ts=int(rec["start_ts"]),
            target_ts=int(rec.get("target_ts", 0)),
            config=ReplicaConfig.from_toml(rec.get("config", {})),
            state=FeedState(rec["state"]),
            error=RunningError.from_record(rec.get("error")),
            create_time=rec.get("create_time", ""),
            creator_version=rec.get("creator_version", ""),
            upstream_id=int(rec.get("upstream_id", 0)),
            stopped_at=float(rec.get("stopped_at", 0.0)),
        )


@dataclass(frozen=True)
class ChangefeedStatus:
    """Progress: every transaction with commit-ts <= checkpoint_ts is durable in the sink."""

    checkpoint_ts: int
    resolved_ts: int
    last_warning: RunningError | None = None

    def to_record(self) -> dict[str, Any]:
        return {
            "checkpoint_ts": self.checkpoint_ts,
            "resolved_ts": self.resolved_ts,
            "last_warning": self.last_warning.to_record() if self.last_warning else None,
        }

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> ChangefeedStatus:
        return cls(
            checkpoint_ts=int(rec["checkpoint_ts"]),
            resolved_ts=int(rec["resolved_ts"]),
            last_warning=RunningError.from_record(rec.get("last_warning")),
        )
