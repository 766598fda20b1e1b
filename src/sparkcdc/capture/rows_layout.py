"""The layout of a table map's row images: decodes a ``RowsEvent`` in Python and describes it to the native
kernels (``sparkcdc._native``).

The description is what the Python ``RowDecoder`` decided per column (binlog type and metadata, signedness, and
how character bytes become text), so both paths read every column the same way; columns the kernel cannot read
the way the Python decoder does (other charsets, MySQL binary JSON, TIMESTAMP in a zone other than UTC) are
read by the kernel through the decoder's own Python function (a callback per value).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC
from typing import Any

from sparkcdc.capture import table_map as tm
from sparkcdc.capture.charsets import text_decoder
from sparkcdc.capture.json_binary import decode_json_binary
from sparkcdc.capture.row_decoder import RowDecoder
from sparkcdc.capture.values import read_old_timestamp, read_timestamp2
from sparkcdc.model.events import RowChange, RowOp, RowsEvent

_UTF8 = frozenset({"utf8mb4", "utf8mb3", "utf8"})
_CHARACTER = frozenset({tm.T_VARCHAR, tm.T_VAR_STRING, tm.T_STRING, tm.T_BLOB, tm.T_TINY_BLOB, tm.T_MEDIUM_BLOB,
                        tm.T_LONG_BLOB})  # fmt: skip
_NATIVE = frozenset({tm.T_TINY, tm.T_SHORT, tm.T_INT24, tm.T_LONG, tm.T_LONGLONG, tm.T_FLOAT, tm.T_DOUBLE, tm.T_YEAR,
                     tm.T_NEWDECIMAL, tm.T_DATE, tm.T_NEWDATE, tm.T_DATETIME2, tm.T_TIME2, tm.T_DATETIME, tm.T_TIME,
                     tm.T_BIT, tm.T_ENUM, tm.T_SET, tm.T_GEOMETRY, tm.T_NULL})  # fmt: skip

# text kinds of the kernel's layout
BYTES, UTF8, LATIN1, CALLBACK = 0, 1, 2, 3

KernelLayout = tuple[list[tuple[int, int, int, bool, int, int]], list[int], list[Callable[[bytes], str]]]


class Layout:
    """One table map's decoder and the position of each table column in it (``None``: they line up)."""

    __slots__ = ("_kernel", "decoder", "remap")

    def __init__(self, decoder: RowDecoder, remap: tuple[int, ...] | None) -> None:
        self.decoder = decoder
        self.remap = remap
        self._kernel: KernelLayout | bool | None = False  # False: not computed yet

    def rows(self, event: RowsEvent) -> list[RowChange]:
        """The row changes of ``event``, exactly as ``decode_chunk`` yields them; raises CorruptDataError."""
        info, tid, cts, op, remap = event.table, event.physical_table_id, event.commit_ts, event.op, self.remap
        decoded = self.decoder.decode_rows(event.data, event.start, event.end, op is RowOp.UPDATE)
        if op is RowOp.UPDATE:
            if remap is not None:
                decoded = [(tuple(b[k] if k >= 0 else None for k in remap), tuple(a[k] if k >= 0 else None
                            for k in remap)) for b, a in decoded]  # fmt: skip
            return [RowChange(cts, info, op, before, after, tid) for before, after in decoded]
        images: list[Any] = decoded
        if remap is not None:
            images = [tuple(row[k] if k >= 0 else None for k in remap) for row in images]
        if op is RowOp.INSERT:
            return [RowChange(cts, info, op, None, row, tid) for row in images]
        return [RowChange(cts, info, op, row, None, tid) for row in images]

    def kernel_layout(self) -> KernelLayout | None:
        """(table-map columns, each table column's table-map position, callbacks), or None when a column has a
        type the kernel does not read (the Python decoder handles those events)."""
        if self._kernel is False:
            self._kernel = self._describe()
        return self._kernel  # type: ignore[return-value]

    def _describe(self) -> KernelLayout | None:
        dec = self.decoder
        t = dec.table
        columns: list[tuple[int, int, int, bool, int, int]] = []
        callbacks: list[Callable[[bytes], str]] = []

        def callback(fn: Callable[[bytes], str]) -> int:
            callbacks.append(fn)
            return len(callbacks) - 1

        for i, typ in enumerate(t.types):
            meta = t.meta[i]
            m0, m1 = meta if isinstance(meta, tuple) else (meta, 0)
            unsigned = bool(t.unsigned and t.unsigned[i])
            kind, cb = BYTES, -1
            if typ in _CHARACTER:
                charset = dec._text_or_bytes(i)
                if charset is None:
                    kind = BYTES
                elif charset in _UTF8:
                    kind = UTF8
                elif charset == "latin1":
                    kind = LATIN1
                else:
                    kind, cb = CALLBACK, callback(text_decoder(charset))
            elif typ == tm.T_JSON:
                kind, cb = CALLBACK, callback(decode_json_binary)
            elif typ in (tm.T_TIMESTAMP2, tm.T_TIMESTAMP):
                if dec.tz is not UTC:
                    kind, cb = CALLBACK, callback(_timestamp_reader(typ, int(m0), dec.tz))
            elif typ not in _NATIVE:
                return None
            columns.append((typ, int(m0), int(m1), unsigned, kind, cb))
        positions = list(self.remap) if self.remap is not None else list(range(len(columns)))
        return columns, positions, callbacks


def _timestamp_reader(typ: int, fsp: int, tz: Any) -> Callable[[bytes], str]:
    if typ == tm.T_TIMESTAMP2:
        return lambda raw: read_timestamp2(raw, 0, fsp, tz)
    return lambda raw: read_old_timestamp(raw, 0, tz)
