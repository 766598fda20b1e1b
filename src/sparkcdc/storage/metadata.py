"""The ``metadata`` checkpoint file at the sink root: ``{"checkpoint-ts":<uint64>}`` (Go ``json.Marshal``,
no spaces, no newline; ``spec/storage-layout.md`` §8), written by the storage sink and read by it and the consumers."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from sparkcdc.errors import ConfigError, CorruptDataError
from sparkcdc.storage.layout import METADATA_FILE

if TYPE_CHECKING:
    from sparkcdc.storage.external import ExternalStorage

PATH = METADATA_FILE
_UINT64_MAX = (1 << 64) - 1


def encode_checkpoint(checkpoint_ts: int) -> bytes:
    """Raises ConfigError for a ts outside uint64."""
    if isinstance(checkpoint_ts, bool) or not isinstance(checkpoint_ts, int) or not 0 <= checkpoint_ts <= _UINT64_MAX:
        raise ConfigError(f"checkpoint-ts {checkpoint_ts!r} is not a uint64")
    return b'{"checkpoint-ts":%d}' % checkpoint_ts


def decode_checkpoint(data: bytes, *, source: str = PATH) -> int:
    """The checkpoint ts of a ``metadata`` file (TiCDC's or the docs' spaced form).

    Raises CorruptDataError naming ``source`` when the content is not such a document.
    """
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise CorruptDataError(f'{source}: not valid JSON; expected {{"checkpoint-ts":<ts>}}') from None
    ts = doc.get("checkpoint-ts") if isinstance(doc, dict) else None
    if isinstance(ts, bool) or not isinstance(ts, int) or not 0 <= ts <= _UINT64_MAX:
        raise CorruptDataError(f"{source}: checkpoint-ts is missing or not a uint64")
    return ts


def write_checkpoint(storage: ExternalStorage, checkpoint_ts: int) -> None:
    """Write ``<root>/metadata`` atomically. Call it only after every file up to ``checkpoint_ts`` is durable.

    Raises ConfigError (not a uint64), StorageError.
    """
    storage.write(PATH, encode_checkpoint(checkpoint_ts))


def read_checkpoint(storage: ExternalStorage) -> int | None:
    """The checkpoint ts in ``<root>/metadata``, None when absent. Raises CorruptDataError, StorageError."""
    data = storage.read(PATH)
    return None if data is None else decode_checkpoint(data, source=f"{storage.uri.masked()}/{PATH}")
