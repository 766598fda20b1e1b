"""The two codec shapes and the registry that finds them by protocol name.

Storage sinks encode a whole single-table transaction into bytes (one file chunk); message queues encode
one event into one message. Decoders turn bytes back into events. Codecs never do I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sparkcdc.errors import ConfigError
from sparkcdc.model import DDLEvent, Event, RowChange, TableInfo


class TxnEncoder(Protocol):
    """Storage-sink encoder: rows of one table's transaction in, file bytes out (terminators included)."""

    file_extension: str

    def file_header(self, table: TableInfo) -> bytes:
        """Bytes written once at the start of every data file (CSV header line, or ``b""``)."""
        ...

    def encode_txn(self, rows: Sequence[RowChange]) -> bytes: ...


class FileDecoder(Protocol):
    """Storage-sink decoder: one data file's bytes and the table definition from its schema file."""

    def decode_file(self, data: bytes, table: TableInfo, *, source: str = "") -> Iterator[RowChange]: ...


@dataclass(frozen=True, slots=True)
class Message:
    """One message-queue message. ``key`` is None for keyless messages."""

    key: bytes | None
    value: bytes


class MessageEncoder(Protocol):
    def encode_row(self, row: RowChange) -> Message: ...

    def encode_ddl(self, ddl: DDLEvent) -> Message: ...

    def encode_watermark(self, ts: int) -> Message: ...

    def encode_bootstrap(self, table: TableInfo) -> Message: ...


class MessageDecoder(Protocol):
    def decode(self, message: Message) -> Iterator[Event]: ...


CodecFactory = Callable[[Mapping[str, Any]], Any]

# protocol name -> "module:factory"; factories take the protocol's option mapping and return a codec.
# Backends are imported lazily so importing the registry stays cheap.
_REGISTRY: dict[str, dict[str, str]] = {
    "txn_encoder": {
        "csv": "sparkcdc.codec.csv.encoder:from_options",
        "canal-json": "sparkcdc.codec.canal_json.encoder:txn_encoder_from_options",
    },
    "file_decoder": {
        "csv": "sparkcdc.codec.csv.decoder:from_options",
        "canal-json": "sparkcdc.codec.canal_json.decoder:file_decoder_from_options",
    },
    "message_encoder": {
        "canal-json": "sparkcdc.codec.canal_json.encoder:message_encoder_from_options",
        "simple": "sparkcdc.codec.simple.encoder:from_options",
        "avro": "sparkcdc.codec.avro.encoder:from_options",
    },
    "message_decoder": {
        "canal-json": "sparkcdc.codec.canal_json.decoder:message_decoder_from_options",
        "simple": "sparkcdc.codec.simple.decoder:from_options",
        "avro": "sparkcdc.codec.avro.decoder:from_options",
    },
}


def _load(kind: str, protocol: str, options: Mapping[str, Any]) -> Any:
    table = _REGISTRY[kind]
    target = table.get(protocol)
    if target is None:
        raise ConfigError(f"unsupported protocol {protocol!r}; use one of: {', '.join(sorted(table))}")
    module_name, _, attr = target.partition(":")
    module = __import__(module_name, fromlist=[attr])
    factory: CodecFactory = getattr(module, attr)
    return factory(options)


def txn_encoder(protocol: str, options: Mapping[str, Any] | None = None) -> TxnEncoder:
    """The storage-sink encoder for ``protocol`` (``csv`` or ``canal-json``)."""
    encoder: TxnEncoder = _load("txn_encoder", protocol, options or {})
    return encoder


def file_decoder(protocol: str, options: Mapping[str, Any] | None = None) -> FileDecoder:
    decoder: FileDecoder = _load("file_decoder", protocol, options or {})
    return decoder


def message_encoder(protocol: str, options: Mapping[str, Any] | None = None) -> MessageEncoder:
    encoder: MessageEncoder = _load("message_encoder", protocol, options or {})
    return encoder


def message_decoder(protocol: str, options: Mapping[str, Any] | None = None) -> MessageDecoder:
    decoder: MessageDecoder = _load("message_decoder", protocol, options or {})
    return decoder
