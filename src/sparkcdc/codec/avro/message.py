"""The avro protocol's wire layout (TiCDC ``pkg/sink/codec/avro``), names and subjects.

A row message's key and value are each Confluent's envelope: magic byte ``0``, the schema id as a big-endian
int32, then the Avro binary body. A DELETE has a key and no value (a tombstone, which Confluent's sink connectors
read as a delete); a table without a handle key has no key. With ``enable-tidb-extension`` and
``avro-enable-watermark`` TiCDC also writes keyless DDL messages (byte ``1`` then the JSON of ``DDL_MEMBERS``) and
watermarks (byte ``2`` then the ts as a big-endian uint64): only its own consumer reads those.

Subjects follow Confluent's TopicNameStrategy: ``<topic>-key`` and ``<topic>-value``, the topic with every ``.``
replaced by ``_`` (TiCDC's ``sanitizeTopic``). Record, namespace and field names are TiCDC's ``SanitizeName``.
"""

from __future__ import annotations

import struct
from typing import Final

from sparkcdc.errors import DecodeError

MAGIC_BYTE: Final = 0
DDL_BYTE: Final = 1
CHECKPOINT_BYTE: Final = 2
# pingcap/ticdc (the new architecture) writes a DELETE's value as this byte and the commit ts when watermarks are
# on; its own consumer reads it, and so does ours.
DELETE_BYTE: Final = 3

KEY_SUFFIX: Final = "-key"
VALUE_SUFFIX: Final = "-value"

# TiDB extension fields, in the order TiCDC appends them to the value schema.
TIDB_OP: Final = "_tidb_op"
TIDB_COMMIT_TS: Final = "_tidb_commit_ts"
TIDB_PHYSICAL_TIME: Final = "_tidb_commit_physical_time"
EXTENSION_FIELDS: Final = (TIDB_OP, TIDB_COMMIT_TS, TIDB_PHYSICAL_TIME)
# Row checksum fields TiCDC adds with [integrity]; a decoder skips them.
CHECKSUM_FIELDS: Final = ("_tidb_row_level_checksum", "_tidb_corrupted", "_tidb_checksum_version")
INSERT_OP: Final = "c"
UPDATE_OP: Final = "u"
DELETE_OP: Final = "d"

# Members of a DDL message's JSON, in the order of TiCDC's ``ddlEvent`` struct.
DDL_MEMBERS: Final = ("query", "type", "schema", "table", "commitTs")

_HEADER = struct.Struct(">bI")
_TS = struct.Struct(">BQ")


def envelope(schema_id: int, body: bytes) -> bytes:
    """Confluent's wire format: magic byte, schema id, Avro binary."""
    return _HEADER.pack(MAGIC_BYTE, schema_id) + body


def split_envelope(data: bytes, where: str) -> tuple[int, bytes]:
    """The schema id and the Avro body of a Confluent-framed message. Raises DecodeError naming ``where``."""
    if len(data) < _HEADER.size:
        raise DecodeError(f"avro: {where} has {len(data)} bytes; a Confluent Avro message has at least 5")
    if data[0] != MAGIC_BYTE:
        raise DecodeError(f"avro: {where} starts with byte {data[0]}, not Confluent's magic byte 0")
    return _HEADER.unpack_from(data)[1], data[_HEADER.size :]


def watermark(ts: int) -> bytes:
    return _TS.pack(CHECKPOINT_BYTE, ts)


def delete_marker(commit_ts: int) -> bytes:
    return _TS.pack(DELETE_BYTE, commit_ts)


def read_ts(data: bytes, where: str) -> int:
    """The ts of a watermark (or pingcap/ticdc delete marker). Raises DecodeError for a short message."""
    if len(data) < _TS.size:
        raise DecodeError(f"avro: {where} has {len(data)} bytes; a watermark has 9")
    return int(_TS.unpack_from(data)[1])


def subject(topic: str, suffix: str) -> str:
    """The registry subject of a topic's keys or values (TopicNameStrategy on the sanitized topic)."""
    return sanitize_topic(topic) + suffix


def sanitize_topic(topic: str) -> str:
    """TiCDC's ``sanitizeTopic``: a ``.`` may mean something to sink connectors, so it becomes ``_``."""
    return topic.replace(".", "_")


def _first(c: str) -> bool:
    return ("a" <= c <= "z") or ("A" <= c <= "Z") or c == "_"


def sanitize_name(name: str) -> str:
    """An Avro name as TiCDC's ``SanitizeName`` makes it: characters outside ``[A-Za-z0-9_]`` become ``_`` (one per
    character), and a name that does not start with a letter or ``_`` gets a ``_`` first (a leading digit kept)."""
    out = []
    for i, c in enumerate(name):
        if i == 0 and not _first(c):
            out.append("_" + c if "0" <= c <= "9" else "_")
        elif not (_first(c) or "0" <= c <= "9"):
            out.append("_")
        else:
            out.append(c)
    return "".join(out)


def avro_namespace(namespace: str, schema: str) -> str:
    """TiCDC's ``getAvroNamespace``: ``<changefeed namespace>.<schema>``, each part sanitized."""
    ns, s = sanitize_name(namespace), sanitize_name(schema)
    return f"{ns}.{s}" if s else ns


def escape_element(option: str) -> str:
    """An ENUM/SET element as TiCDC writes it into ``allowed`` (``EscapeEnumAndSetOptions``)."""
    return option.replace(",", "\\,").replace("\\'", "'").replace("''", "'")
