"""TiCDC's large-message handling, shared by the simple and canal-json message encoders.

A row whose message exceeds ``max-message-bytes`` (plus Kafka's record overhead) is, by
``large-message-handle-option``: refused (``none``, CDC:ErrMessageTooLarge), sent with only its handle-key
columns (``handle-key-only``), or written whole to a claim-check file under ``claim-check-storage-uri`` while
a handle-key-only message names the file (``claim-check``). Codecs do no I/O: the encoder returns the file
(:class:`ClaimCheckFile`) and the sink writes it before sending the message.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from dataclasses import dataclass
from typing import Final

import orjson

from sparkcdc.codec.base import Message
from sparkcdc.errors import ConfigError, DecodeError

LARGE_MESSAGE_OPTIONS: Final = ("none", "handle-key-only", "claim-check")
DEFAULT_MAX_MESSAGE_BYTES: Final = 10 * 1024 * 1024  # TiCDC's config.DefaultMaxMessageBytes
# Kafka's per-record overhead TiCDC adds when comparing with max-message-bytes (common.MaxRecordOverhead:
# 5 * binary.MaxVarintLen32 + binary.MaxVarintLen64 + 1).
MAX_RECORD_OVERHEAD: Final = 5 * 5 + 10 + 1
MESSAGE_TOO_LARGE: Final = "CDC:ErrMessageTooLarge"
INVALID_REPLICA_CONFIG: Final = "CDC:ErrInvalidReplicaConfig"


@dataclass(frozen=True, slots=True)
class ClaimCheckFile:
    """A file the sink must write under ``claim-check-storage-uri`` before sending the message."""

    name: str
    data: bytes


@dataclass(frozen=True, slots=True)
class EncodedRow:
    """A row's message and, for claim-check, the file holding its full message."""

    message: Message
    claim_check: ClaimCheckFile | None = None


def new_claim_check_uuid() -> str:
    """A random UUID v4 (TiCDC's claim-check file names are ``<uuid>.json``); module-level so encoders pickle."""
    return str(uuid.uuid4())


def claim_check_location(storage_uri: str, name: str) -> str:
    """TiCDC's ``FileNameWithPrefix``: the storage URI without a trailing ``/``, then ``/<name>``."""
    return f"{storage_uri.rstrip('/')}/{name}"


def claim_check_envelope(key: bytes | None, value: bytes) -> bytes:
    """TiCDC's claim-check file: Go JSON of ``{Key, Value []byte}`` (base64, ``null`` for nil).

    Base64 text holds nothing Go escapes, so orjson's bytes are Go's.
    """
    return orjson.dumps(
        {"key": None if key is None else base64.b64encode(key).decode(), "value": base64.b64encode(value).decode()}
    )


def claim_check_value(data: bytes, name: str) -> bytes:
    """The message value inside a claim-check file ``{"key": b64|null, "value": b64}``.

    Raises DecodeError naming the file when it is not such an envelope.
    """
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise DecodeError(f"claim-check file {name} is not JSON: {e}") from e
    if type(obj) is not dict or "value" not in obj:
        raise DecodeError(f'claim-check file {name} is not a {{"key":…,"value":…}} object')
    value = obj["value"]
    if type(value) is not str:
        raise DecodeError(f"claim-check file {name}: value must be a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as e:
        raise DecodeError(f"claim-check file {name}: value is not base64") from e


def claim_check_name(location: str) -> str:
    """The file name of a ``claimCheckLocation`` (TiCDC's consumers read the base name under their storage)."""
    return location.rstrip("/").rsplit("/", 1)[-1]


def validate_large_message(
    where: str,
    *,
    option: str,
    compression: str,
    storage_uri: str,
    max_message_bytes: int,
    tidb_extension: bool | None = None,
) -> None:
    """TiCDC's ``LargeMessageHandleConfig.AdjustAndValidate`` plus the size bound, for one codec config.

    ``where`` prefixes messages (``"simple protocol"``); ``tidb_extension`` is the codec's
    ``enable-tidb-extension`` when the protocol needs it for large-message handling (canal-json), else None.
    Raises ConfigError naming the option and what to set.
    """
    if option not in LARGE_MESSAGE_OPTIONS:
        raise ConfigError(
            f"{where}: unsupported large-message-handle-option {option!r}; "
            f"use one of: {', '.join(LARGE_MESSAGE_OPTIONS)}",
            code=INVALID_REPLICA_CONFIG,
        )
    if compression not in ("none", ""):
        raise ConfigError(
            f"{where}: large-message-handle-compression {compression!r} is not supported by sparkcdc; use none",
            code=INVALID_REPLICA_CONFIG,
        )
    if max_message_bytes <= 0:
        raise ConfigError(f"{where}: max-message-bytes must be positive, got {max_message_bytes}")
    if option == "none":
        return
    if tidb_extension is False:
        raise ConfigError(
            f"{where}: large-message-handle-option={option} needs enable-tidb-extension=true",
            code=INVALID_REPLICA_CONFIG,
        )
    if option == "claim-check" and not storage_uri:
        raise ConfigError(
            f"{where}: large-message-handle-option=claim-check needs claim-check-storage-uri",
            code=INVALID_REPLICA_CONFIG,
        )
