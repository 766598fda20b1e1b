"""Exact hand-over from a table's snapshot copy to its binlog stream, key by key.

MariaDB tells where each chunk's consistent snapshot sits in the binlog (``Binlog_snapshot_file``/``_position``):
every transaction up to that position is in the rows the chunk read, none after it. A chunk's read records that
position, mapped to the commit-ts of the last transaction before it (``until``), and the keys it read. A streamed
change of a copied table at commit-ts ``t`` then goes to the sink when:

- ``t <= low`` (the table's low watermark: before every chunk's read): never, the copy holds it;
- ``t > high`` (after every chunk's read): always;
- in between, by its key ``k``: when a chunk read ``k``, the change is in the copy exactly when
  ``t <= until`` of that chunk, so it is left out then and sent otherwise. When no chunk read ``k``, the key
  was absent when its chunk was read, so its changes up to that read end with ``k`` gone; sending them onto a
  copy without ``k`` ends without ``k`` too, and sends no row twice.

A table copied in one read (a small one, or one without a key, copied whole with ``force-replicate``) needs no
keys: its changes at or before that read are all left out, the rest all sent.

So no change is applied twice, which also holds for a downstream without a key (a table the storage consumer
created from schema files, which flag only primary keys). A key-changing UPDATE is two halves (the old key
goes, the new one comes), each decided by its own key: the half the copy holds is left out, and an UPDATE left
with one half is sent as that DELETE or INSERT.

Keys are compared as 64-bit hashes of their values (the reader produces exactly the decoder's values), after
folding what the key's collation at start-ts treats as equal: trailing spaces (PAD SPACE collations), case
(``_ci``) and accents (``_ci`` without ``_as``). Chunks without a position (servers other than MariaDB) record no
keys: their changes after the low watermark are all sent, which repeats changes the copy already holds (harmless
with a key downstream: upserts and deletes by key).

A DDL between start-ts and a chunk's read (``changed``: the first one that changed the table's columns or rows)
breaks "the copy holds it": the copy carries the columns of start-ts, so it cannot hold what the DDL changed (a
new column's values, a column's new type, the rows a TRUNCATE removed), while the downstream applies the DDL
after the copy. So every change after it that the copy would hold is sent again, which a primary key downstream
makes harmless (upserts and deletes by key: a re-sent change ends where the copy plus the DDL would have, and
later ones continue from there). A table without a primary key would apply it twice: its changefeed fails
instead (``CDC:ErrSnapshotTableChanged``), as it does when the table was dropped, renamed or replaced while it
was being copied.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from sparkcdc.capture.schema_history import SchemaHistory
from sparkcdc.capture.snapshot_reader import TABLE_CHANGED
from sparkcdc.errors import UpstreamError, with_code
from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.model.events import Row, RowChange, RowOp
from sparkcdc.model.table import TableInfo

Hasher = Callable[[Row], int]
_KEY_DTYPE = np.dtype("<u8")
NEVER = 2**63 - 1  # a commit-ts no change reaches


def _fold(collation: str) -> Callable[[Any], Any] | None:
    """What makes two string values equal keys under ``collation``; None: bytes-exact."""
    collation = collation.lower()
    if collation == "binary":
        return None
    pad = "nopad" not in collation
    case = "_ci" in collation
    accents = case and "_as" not in collation

    def fold(v: Any) -> Any:
        if not isinstance(v, str):
            return v
        if pad:
            v = v.rstrip(" ")
        if case:
            v = v.casefold()
        if accents:
            v = "".join(ch for ch in unicodedata.normalize("NFKD", v) if not unicodedata.combining(ch))
        return v

    return fold


def key_collations(table: TableInfo, key: Sequence[str]) -> tuple[str, ...]:
    """The collations the ``key`` columns of ``table`` compare under. Raises KeyError when a column is gone."""
    return tuple(table.column(name).effective_collation for name in key)


def key_hasher(table: TableInfo, key: Sequence[str], collations: Sequence[str] = ()) -> Hasher:
    """The hash of the ``key`` columns' values of a row of ``table``, folded as ``collations`` compare (default:
    the columns' own). Raises KeyError when a column is gone."""
    positions = [table.column_position(name) for name in key]
    folds = [_fold(c) for c in (collations or key_collations(table, key))]

    def hash_of(row: Row) -> int:
        values = tuple(v if f is None else f(v) for v, f in zip((row[p] for p in positions), folds, strict=True))
        return int.from_bytes(hashlib.blake2b(repr(values).encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                              "little")  # fmt: skip

    return hash_of


def pack_keys(hashes: Iterable[int]) -> bytes:
    """The keys a chunk read, sorted, as stored and sent to the driver."""
    return np.sort(np.fromiter(hashes, dtype=_KEY_DTYPE)).tobytes()


def unpack_keys(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=_KEY_DTYPE)


@dataclass(frozen=True)
class TableHandover:
    """What the stream leaves out of one copied table. ``chunks``: (keys file, until) of the chunks that know
    where they read; the keys are loaded where the filter runs (executors), once per process. ``changed``: the
    commit-ts of the first DDL before a read that changed what the copy reads (``NEVER``: none did);
    ``collations``: those of the key columns at start-ts, which the chunks hashed their keys under."""

    key: tuple[str, ...]
    low: int
    high: int
    chunks: tuple[tuple[str, int], ...]
    changed: int = NEVER
    collations: tuple[str, ...] = ()
    _lookup: tuple[np.ndarray, np.ndarray] | None = field(default=None, init=False, repr=False, compare=False)
    _hashers: dict[int, Hasher | None] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        return {"key": self.key, "low": self.low, "high": self.high, "chunks": self.chunks, "changed": self.changed,
                "collations": self.collations}  # fmt: skip

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            object.__setattr__(self, k, v)
        object.__setattr__(self, "_lookup", None)
        object.__setattr__(self, "_hashers", {})

    def keep(self, ev: RowChange) -> RowChange | None:
        """``ev`` as it goes to the sink: whole, one half of a key-changing UPDATE, or None (the copy holds it).
        Raises UpstreamError (CDC:ErrSnapshotTableChanged) for a change after ``changed`` that the copy would hold,
        of a table without a primary key: sending it again would apply it twice."""
        t = ev.commit_ts
        if t > self.high:
            return ev
        out = None if t <= self.low else self._decide(ev)
        if out is ev or t <= self.changed:
            return out
        if ev.table.primary_key_names:  # the copy cannot hold what the DDL changed: send it again
            return ev
        raise with_code(UpstreamError(
            f"snapshot of {ev.table.qualified_name}: a DDL at ts={self.changed} changed the table while it was being "
            f"copied, and the change at ts={t} after it is in the copy with the columns of start-ts; sending it again "
            "would apply it twice downstream, as the table has no primary key. Remove and re-create the changefeed "
            "to copy the table as it is now", code=TABLE_CHANGED, retryable=False))  # fmt: skip

    def _decide(self, ev: RowChange) -> RowChange | None:
        """``keep`` for a change between the low watermark and the last read: by the chunk that read its key."""
        t = ev.commit_ts
        hash_of = self._hasher(ev.table)
        if hash_of is None:  # a key column is gone (DDL): nothing to compare, send it
            return ev
        if ev.op is RowOp.INSERT:
            assert ev.after is not None
            return None if self._held(hash_of(ev.after), t) else ev
        assert ev.before is not None
        old_key = hash_of(ev.before)
        old = self._held(old_key, t)
        if ev.op is RowOp.DELETE:
            return None if old else ev
        assert ev.after is not None
        new_key = hash_of(ev.after)
        new = old if new_key == old_key else self._held(new_key, t)
        if old and new:
            return None
        if old:
            return replace(ev, op=RowOp.INSERT, before=None)
        if new:
            return replace(ev, op=RowOp.DELETE, after=None)
        return ev

    def _hasher(self, table: TableInfo) -> Hasher | None:
        got = self._hashers.get(table.version, False)
        if got is False:
            try:
                got = key_hasher(table, self.key, self.collations)
            except KeyError:
                got = None
            self._hashers[table.version] = got
        return got  # type: ignore[return-value]

    def _held(self, key: int, t: int) -> bool:
        keys, until = self._keys()
        i = int(np.searchsorted(keys, key))
        return i < len(keys) and int(keys[i]) == key and t <= int(until[i])

    def _keys(self) -> tuple[np.ndarray, np.ndarray]:
        if self._lookup is None:
            object.__setattr__(self, "_lookup", _load_lookup(self.chunks))
        assert self._lookup is not None
        return self._lookup


_LOADED_TABLES = 64
_LOADED: dict[tuple[tuple[str, int], ...], tuple[np.ndarray, np.ndarray]] = {}


def _load_lookup(chunks: tuple[tuple[str, int], ...]) -> tuple[np.ndarray, np.ndarray]:
    """Every key the chunks read, sorted, with its chunk's ``until``; kept per process (a Python worker serves
    many tasks, and the keys do not change once the copy is complete)."""
    got = _LOADED.get(chunks)
    if got is None:
        from sparkcdc.pipeline.snapshot_state import read_chunk_keys

        parts = [read_chunk_keys(path) for path, _ in chunks]
        keys = np.concatenate(parts) if parts else np.empty(0, dtype=_KEY_DTYPE)
        until = np.concatenate([np.full(len(p), u, dtype=np.int64) for p, (_, u) in zip(parts, chunks, strict=True)]
                               ) if parts else np.empty(0, dtype=np.int64)  # fmt: skip
        order = np.argsort(keys, kind="stable")
        got = (keys[order], until[order])
        if len(_LOADED) >= _LOADED_TABLES:
            del _LOADED[next(iter(_LOADED))]
        _LOADED[chunks] = got
    return got


# DDL that removes or brings rows without row events (the downstream does the same when it applies the DDL, after
# the copy), and DDL the schema tracker could not reproduce (NONE: what it did is unknown).
_ROWS_CHANGED = frozenset({DDLAction.TRUNCATE_TABLE, DDLAction.TRUNCATE_TABLE_PARTITION, DDLAction.DROP_TABLE_PARTITION,
                           DDLAction.EXCHANGE_TABLE_PARTITION, DDLAction.NONE})  # fmt: skip


def changed_during_copy(history: SchemaHistory, table: TableInfo, start_ts: int, last_read: int) -> int:
    """The commit-ts of the first DDL after ``start_ts`` and up to ``last_read`` (the table's last read) that
    changed what the copy of ``table`` (as it was at ``start_ts``) reads: its columns (not only defaults, keys or
    comments), or its rows (TRUNCATE, a partition truncated, dropped or exchanged). ``NEVER`` when none did.

    Raises UpstreamError (CDC:ErrSnapshotTableChanged) when the table was dropped, renamed or replaced by another
    in that span: a later read copied another table under its name, or the downstream's RENAME takes the rows
    copied after it along."""
    first = NEVER
    before = table
    name = (table.schema, table.table)
    for ts, now in history.versions_between(*name, start_ts, last_read):
        actions = {ev.action for ev in history.ddl_events_at(ts) if (ev.schema, ev.table) == name}
        if now is None or (now.table_id != before.table_id and DDLAction.TRUNCATE_TABLE not in actions):
            raise with_code(UpstreamError(
                f"snapshot of {table.qualified_name}: the table was dropped, renamed or replaced at ts={ts} while it "
                "was being copied. Remove and re-create the changefeed to copy the tables as they are now",
                code=TABLE_CHANGED, retryable=False))  # fmt: skip
        if first == NEVER and (actions & _ROWS_CHANGED or _row_shape(now) != _row_shape(before)):
            first = ts
        before = now
    return first


def _row_shape(table: TableInfo) -> tuple[Any, ...]:
    """What of a table decides the values its rows hold: each column's name, type, attributes and charset, but
    not its default, key flags or comment (a DDL changing only those changes no stored value)."""
    return tuple((c.name.lower(), c.type, c.unsigned, c.zerofill, c.nullable, c.generated, c.charset, c.collation,
                  c.length, c.decimal, c.elements) for c in table.columns)  # fmt: skip
