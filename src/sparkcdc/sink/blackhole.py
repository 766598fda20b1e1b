"""``blackhole://``: discards every event, as TiCDC's blackhole sink does; for benchmarks that isolate capture,
decode and filter from encoding and writing. The checkpoint still advances (in ``progress.json`` only)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from sparkcdc.errors import ConfigError
from sparkcdc.model import DDLEvent, RowChange, TableInfo
from sparkcdc.sink.base import ERR_SINK_URI_INVALID, Payload, Routed, SinkContext

DEFAULT_FLUSH_INTERVAL = 1.0


@dataclass(frozen=True)
class BlackholeConfig:
    flush_interval: float = DEFAULT_FLUSH_INTERVAL
    worker_count: int = 1


class _Encoder:
    def encode(self, rows: Sequence[RowChange]) -> Iterator[Payload]:
        yield Payload(0, rows[0].physical_table_id, len(rows), b"")


class _Writer:
    def write(self, payloads: Iterable[Routed]) -> int:
        return sum(p.nrows for p in payloads)


class _Committer:
    def recover(self) -> None:
        return None  # a killed writer leaves nothing behind that a batch's retry does not replace

    def start(self, tables: Callable[[], Sequence[TableInfo]]) -> None:
        return None

    def commit(self, results: Sequence[Any], ddls: Sequence[DDLEvent]) -> None:
        return None

    def checkpoint(self, ts: int) -> None:
        return None


class _BlackholeSink:
    def config(self, uri: str, toml: Mapping[str, Any]) -> BlackholeConfig:
        try:
            params = dict(parse_qsl(urlsplit(uri).query, keep_blank_values=True))
        except ValueError as e:
            raise ConfigError(f"sink uri invalid {uri!r}: {e}", code=ERR_SINK_URI_INVALID) from e
        unknown = sorted(set(params) - {"protocol"})
        if unknown:
            raise ConfigError(f"blackhole sink takes no parameter {unknown[0]!r}", code=ERR_SINK_URI_INVALID)
        return BlackholeConfig()

    def check(self, config: BlackholeConfig, tables: Callable[[], Sequence[TableInfo]]) -> None:
        return None

    def encoder(self, config: BlackholeConfig, ctx: SinkContext) -> _Encoder:
        return _Encoder()

    def writer(self, config: BlackholeConfig, ctx: SinkContext) -> _Writer:
        return _Writer()

    def committer(self, config: BlackholeConfig, ctx: SinkContext) -> _Committer:
        return _Committer()


SINK = _BlackholeSink()
