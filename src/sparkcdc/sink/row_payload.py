"""One table's rows of one transaction as the bytes that travel to the one writer task owning the table.

The MySQL and lake sinks route by table and ship rows in this form; the redo log stores the MySQL sink's payloads as
they are, and ``cdc redo apply`` reads them back. So the form lives here, beside neither sink. The rows travel
pickled without their TableInfo: the writer gets the table from the payload's ``Routed.info``.
"""

from __future__ import annotations

import hashlib
import io
import pickle
from collections.abc import Sequence
from typing import Any, Final

from sparkcdc.model import RowChange, RowOp, TableInfo
from sparkcdc.model.steps import RenderedRow

_RENDERED: Final = "rendered"
_OPS: Final = (RowOp.INSERT, RowOp.UPDATE, RowOp.DELETE)
# (commit_ts, op code, slot bitmask, key before, key after, values): a RenderedRow without its table
Rendered = tuple[int, int, int, str | None, str | None, str | None]


def table_route(schema: str, table: str) -> int:
    """A stable non-negative route per table (writer task = route % writers). A mixing hash: CRC-32 is linear, so
    names differing in their last character (t0, t1, t2, t3) all landed on one of two tasks."""
    return int.from_bytes(hashlib.blake2b(f"{schema}\x00{table}".encode(), digest_size=4).digest(), "little") >> 1


def pack(rows: Sequence[RowChange]) -> bytes:
    packed = [(r.commit_ts, r.op, r.before, r.after, r.physical_table_id, r.start_ts) for r in rows]
    return pickle.dumps(packed, protocol=pickle.HIGHEST_PROTOCOL)


def pack_rendered(rows: Sequence[Rendered]) -> bytes:
    return pickle.dumps((_RENDERED, list(rows)), protocol=pickle.HIGHEST_PROTOCOL)


class _RowsUnpickler(pickle.Unpickler):
    """Reads what :func:`pack` and :func:`pack_rendered` write and nothing else: a payload the redo log's storage
    gives back cannot name any other class (so cannot run code)."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in (("sparkcdc.model.events", "RowOp"), ("decimal", "Decimal")):
            raise pickle.UnpicklingError(f"{module}.{name} is no part of a row payload")
        return super().find_class(module, name)


def unpack(data: bytes, table: TableInfo) -> list[RowChange] | list[RenderedRow]:
    """The rows of a payload: RowChanges (``pack``) or rows the native kernel rendered (``pack_rendered``). Raises
    pickle.UnpicklingError (and the like) for bytes neither wrote."""
    obj = _RowsUnpickler(io.BytesIO(data)).load()
    if isinstance(obj, tuple) and obj[0] == _RENDERED:
        return [RenderedRow(ts, table, _OPS[op], _slot_set(mask), kb, ka, values)
                for ts, op, mask, kb, ka, values in obj[1]]  # fmt: skip
    return [RowChange(ts, table, op, before, after, pid, start) for ts, op, before, after, pid, start
            in obj]  # fmt: skip


def _slot_set(mask: int) -> frozenset[int]:
    """The conflict slots whose bits ``mask`` sets (the writer's ``SLOTS`` bound every mask the kernel writes)."""
    return frozenset(s for s in range(mask.bit_length()) if mask >> s & 1)
