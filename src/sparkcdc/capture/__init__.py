"""Capture: binlog puller, relay log, schema tracker and the chunk decoder.

Public entry points (see each module for details):

- ``Puller`` (puller.py): replica connection -> relay log, sequential and cheap.
- ``RelayLog`` / ``ChunkRef`` / ``read_chunk`` (relay_log.py): durable, transaction-framed raw events.
- ``decode_chunk`` (decode.py): raw chunk -> RowChange/DDLEvent, runs on executors without a connection.
- ``SchemaHistory`` (schema_history.py): persisted table versions, ``table_info_at(schema, table, ts)``.
"""

from sparkcdc.capture.decode import decode_chunk
from sparkcdc.capture.position import BinlogPosition, StartPoint
from sparkcdc.capture.puller import Puller, PullerConfig
from sparkcdc.capture.relay_log import ChunkRef, RelayLog, read_chunk
from sparkcdc.capture.schema_history import SchemaHistory

__all__ = [
    "BinlogPosition",
    "ChunkRef",
    "Puller",
    "PullerConfig",
    "RelayLog",
    "SchemaHistory",
    "StartPoint",
    "decode_chunk",
    "read_chunk",
]
