"""Both paths on the same rows: encode them with a Python codec, and their binlog rows events with the codec's
native kernel, and require the same bytes.

``compare_*`` return False when the rows cannot be written as binlog rows events (a value the model type does not
carry, a type without a binlog form), so callers can count what was compared.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from typing import Any

from sparkcdc.codec import native
from sparkcdc.model import RowChange, RowsEvent
from sparkcdc.model.events import split_key_updates
from sparkcdc.sink.mysql.config import MysqlSinkConfig
from sparkcdc.sink.mysql.encoder import MysqlEncoder, render_rows
from sparkcdc.sink.row_payload import unpack
from tests.unit.native.binlog_rows import fit_table, rows_events


def as_events(rows: Sequence[RowChange], **kw: Any) -> list[RowsEvent] | None:
    """The rows as binlog rows events of one transaction, or None when they have no faithful binlog form."""
    if not rows or any(r.table is not rows[0].table or r.commit_ts != rows[0].commit_ts for r in rows):
        return None
    try:
        events = rows_events(rows[0].table, rows, **kw)
    except (ValueError, TypeError, OverflowError, KeyError, UnicodeError, AttributeError):
        return None
    decoded = [r for e in events for r in e.rows()]
    if not kw.get("json_binary") and [(r.op, r.before, r.after) for r in decoded] != [
        (r.op, r.before, r.after) for r in rows
    ]:
        return None  # the model values do not survive the binlog (e.g. a float in a DECIMAL column)
    return events


def txn_native(encoder: Any, rows: Sequence[RowChange], split: bool = True, **kw: Any) -> bytes | bool | None:
    """The storage encoder's native bytes for ``rows`` (False: no binlog form, None: the kernel declined)."""
    events = as_events(rows, **kw)
    if events is None:
        return False
    out = encoder.encode_events(events, split)
    return None if out is None else out[0]


def check_txn(encoder: Any, rows: Sequence[RowChange], expected: bytes, split: bool = True,
              python: Callable[[Any, Sequence[RowChange]], bytes] | None = None, **kw: Any) -> bool:  # fmt: skip
    """Assert the kernel writes ``expected`` for ``rows`` (when they have a binlog form and it takes them).
    ``python`` (the encoder's Python ``encode_txn``) lets a table whose scales are missing be fitted first."""
    if python is not None and rows:
        fitted = fit_table(rows)
        if fitted[0].table is not rows[0].table:
            if python(encoder, fitted) != expected:
                return False
            rows = fitted
    got = txn_native(encoder, rows, split, **kw)
    if got is False:
        return False
    if got is None:
        return False
    assert got == expected
    return True


def check_messages(encoder: Any, rows: Sequence[RowChange], expected: list[bytes], split: bool = True,
                   python: Callable[[Any, RowChange], Any] | None = None, **kw: Any) -> bool:  # fmt: skip
    if python is not None and rows:
        fitted = fit_table(rows)
        if fitted[0].table is not rows[0].table:
            if [python(encoder, r).value for r in fitted] != expected:
                return False
            rows = fitted
    events = as_events(rows, **kw)
    if events is None:
        return False
    got = encoder.encode_events(events, split)
    if got is None:
        return False
    assert got == expected
    return True


def mysql_native(rows: Sequence[RowChange], **kw: Any) -> list[Any] | None:
    """The MySQL sink's native rendered rows (None: no binlog form or the kernel declined)."""
    events = as_events(rows, **kw)
    if events is None:
        return None
    [payload] = MysqlEncoder(MysqlSinkConfig.from_uri("mysql://root@127.0.0.1:3306/")).encode_events(events)
    if not isinstance(pickle.loads(payload.data), tuple):
        return None  # the Python path took it
    return list(unpack(payload.data, rows[0].table))


def check_mysql(rows: Sequence[RowChange], **kw: Any) -> bool:
    got = mysql_native(rows, **kw)
    if got is None:
        return False
    assert got == render_rows(rows)
    return True


def storage_rows(rows: Sequence[RowChange], raw: bool) -> Sequence[RowChange]:
    return rows if raw else split_key_updates(rows)


Clock = Callable[[], int]

assert native.available(), "the native extension is not built: pip install -e . builds it"
