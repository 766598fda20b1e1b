"""The row shape shared by ``format("ticdc")`` (storage-sink trees) and ``format("ticdc-kafka")`` (Kafka topics).

Both sources yield exactly these columns, with the same value-to-text conversion, so a query can switch from
one to the other by changing only ``format(...)`` and the path. Every table fits one schema because row images
are ``map<string,string>`` (column name -> value text).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, Final

from sparkcdc.errors import ConfigError
from sparkcdc.model import RowChange

SCHEMA: Final = (
    "database string, table string, table_version long, partition long, commit_ts long, op string, "
    "before map<string,string>, after map<string,string>, file string, row_number long"
)
TRUE: Final = ("1", "true", "yes", "on")
FALSE: Final = ("0", "false", "no", "off")


def value_text(value: Any) -> str | None:
    """A column value as text: integers and decimals in decimal, floats as Python ``repr``, temporals as MySQL
    text (the decoders' strings), binary values base64, NULL as None."""
    if value is None:
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, Decimal):
        return str(value)
    return str(value)


def image(names: Sequence[str], values: Sequence[Any] | None) -> dict[str, str | None] | None:
    """A row image as the ``before``/``after`` map (None for a missing image)."""
    if values is None:
        return None
    return {n: value_text(v) for n, v in zip(names, values)}


def change_row(
    row: RowChange, database: str, table: str, table_version: int, partition: int, file: str, row_number: int
) -> tuple[Any, ...]:
    """One output row in :data:`SCHEMA` order."""
    names = [c.name for c in row.table.columns]
    return (
        database, table, table_version, partition, row.commit_ts, row.op.value,
        image(names, row.before), image(names, row.after), file, row_number,
    )  # fmt: skip


def flag(options: Mapping[str, str], key: str, default: bool = False) -> bool:
    """A boolean option (``true``/``false``, ``1``/``0``, ``yes``/``no``, ``on``/``off``); raises ConfigError
    naming the option for anything else."""
    raw = options.get(key)
    if raw is None:
        return default
    text = str(raw).strip().lower()
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    raise ConfigError(f"option {key}={raw!r} is not a boolean; use true or false")
