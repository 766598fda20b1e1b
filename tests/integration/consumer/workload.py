"""A replayable upstream workload: applied to a real upstream with plain pymysql statements, and written as a
TiCDC storage-sink tree with the project's real encoders and schema files (standing in for the changefeed).

It covers inserts, updates (also of the primary key), deletes, ADD COLUMN, TRUNCATE, RENAME TABLE, DROP +
re-CREATE TABLE, a hash-partitioned table written in partition directories, and a producer restart that
writes duplicated transactions into a later file.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sparkcdc.codec.base import txn_encoder
from sparkcdc.model import ColumnInfo, DDLAction, RowChange, RowOp, TableInfo
from sparkcdc.model.events import split_key_updates
from sparkcdc.model.tso import compose
from sparkcdc.mysql.target import MysqlTarget
from sparkcdc.storage.external import ExternalStorage
from sparkcdc.storage.layout import TableDir, data_file_name
from sparkcdc.storage.metadata import encode_checkpoint
from sparkcdc.storage.schema_file import TableDefinition

DB = "app"
COLS_SQL = "id INT PRIMARY KEY, v VARCHAR(40), n BIGINT, d DECIMAL(12,3), dt DATETIME(3), b VARBINARY(16), f DOUBLE"
BASE_COLS = (
    ColumnInfo("id", "int", primary_key=True, handle_key=True, nullable=False),
    ColumnInfo("v", "varchar", length=40),
    ColumnInfo("n", "bigint"),
    ColumnInfo("d", "decimal", length=12, decimal=3),
    ColumnInfo("dt", "datetime", decimal=3),
    ColumnInfo("b", "varbinary", length=16),
    ColumnInfo("f", "double"),
)
PARTITION_IDS = (1001, 1002)


@dataclass
class _Table:
    info: TableInfo
    version: int
    rows: dict[int, tuple[Any, ...]] = field(default_factory=dict)


class Workload:
    def __init__(self, upstream: MysqlTarget, storage: ExternalStorage, protocol: str, *, seed: int = 7,
                 width: int = 20, txns_per_file: int = 8) -> None:  # fmt: skip
        self.up = upstream.connect(database="", autocommit=False)
        self.storage = storage
        self.protocol = protocol
        self.ext = ".csv" if protocol == "csv" else ".json"
        opts = {"include-commit-ts": True} if protocol == "csv" else {"enable-tidb-extension": True}
        self.encoder = txn_encoder(protocol, opts)
        self.rng = random.Random(seed)
        self.width = width
        self.txns_per_file = txns_per_file
        self.ts = compose(1_700_000_000_000)
        self.tables: dict[str, _Table] = {}
        self.buffers: dict[tuple[str, int, int], list[bytes]] = {}
        self.counters: dict[tuple[str, int, int], int] = {}
        self.history: dict[tuple[str, int, int], list[bytes]] = {}
        self.next_id = 1
        self.rows_written = 0

    def close(self) -> None:
        self.up.close()

    # -- plumbing
    def _tick(self) -> int:
        self.ts += 1 << 18
        return self.ts

    def _sql(self, sql: str, args: Any = None) -> None:
        with self.up.cursor() as cur:
            cur.execute(sql, args)

    def _flush(self) -> None:
        for key, chunks in self.buffers.items():
            if not chunks:
                continue
            name, version, part = key
            n = self.counters.get(key, 0) + 1
            self.counters[key] = n
            d = TableDir(DB, name, version, part or None, "2024-05-01")
            self.storage.write(f"{d.format()}/{data_file_name(n, self.width, self.ext)}", b"".join(chunks))
            self.history.setdefault(key, []).extend(chunks)
            chunks.clear()

    def _schema_file(self, info: TableInfo, version: int, query: str, action: int) -> None:
        defn = TableDefinition.from_table(info, version, query=query, ddl_type=action)
        self.storage.write(defn.path(), defn.to_json())

    def _ddl(self, table: str | None, query_up: str, query_file: str, action: int, info: TableInfo | None) -> int:
        self._flush()
        v = self._tick()
        self._sql(query_up)
        self.up.commit()
        if info is None:
            defn = TableDefinition.for_database(DB, v, query=query_file, ddl_type=action)
            self.storage.write(defn.path(), defn.to_json())
        else:
            self._schema_file(info, v, query_file, action)
        return v

    # -- DDL
    def create_database(self) -> None:
        self._ddl(None, f"CREATE DATABASE `{DB}`", f"CREATE DATABASE `{DB}`", DDLAction.CREATE_SCHEMA, None)

    def create_table(self, name: str, partitioned: bool = False) -> None:
        info = TableInfo(DB, name, 0, BASE_COLS)
        extra = " PARTITION BY HASH(id) PARTITIONS 2" if partitioned else ""
        q = f"CREATE TABLE `{DB}`.`{name}` ({COLS_SQL}){extra}"
        v = self._ddl(name, q, q, DDLAction.CREATE_TABLE, info)
        self.tables[name] = _Table(info, v)

    def add_column(self, name: str) -> None:
        t = self.tables[name]
        info = TableInfo(DB, name, 0, (*t.info.columns, ColumnInfo("extra", "int")))
        v = self._ddl(name, f"ALTER TABLE `{DB}`.`{name}` ADD COLUMN extra INT",
                      "ALTER TABLE `" + name + "` ADD COLUMN extra INT", DDLAction.ADD_COLUMN, info)  # fmt: skip
        t.rows = {k: (*r, None) for k, r in t.rows.items()}
        t.info, t.version = info, v

    def truncate(self, name: str) -> None:
        t = self.tables[name]
        q = f"TRUNCATE TABLE `{DB}`.`{name}`"
        t.version = self._ddl(name, q, q, DDLAction.TRUNCATE_TABLE, t.info)
        t.rows.clear()

    def rename(self, old: str, new: str) -> None:
        t = self.tables.pop(old)
        info = TableInfo(DB, new, 0, t.info.columns)
        q = f"RENAME TABLE `{DB}`.`{old}` TO `{DB}`.`{new}`"
        t.version = self._ddl(new, q, q, DDLAction.RENAME_TABLE, info)
        t.info = info
        self.tables[new] = t

    def drop_and_recreate(self, name: str) -> None:
        t = self.tables.pop(name)
        q = f"DROP TABLE `{DB}`.`{name}`"
        self._ddl(name, q, q, DDLAction.DROP_TABLE, t.info)
        self.create_table(name)

    # -- DML
    def _values(self, rid: int, ncols: int) -> tuple[Any, ...]:
        r = self.rng
        base = (
            rid,
            r.choice(["", "x", "héllo", "it's", "a\\b", "line\nbreak", None]) if r.random() < 0.3 else f"v{r.random()}",
            r.randint(-(2**63), 2**63 - 1),
            Decimal(r.randint(-10**8, 10**8)) / 1000,
            f"20{r.randint(10, 30)}-0{r.randint(1, 9)}-1{r.randint(0, 9)} "
            f"1{r.randint(0, 9)}:3{r.randint(0, 9)}:00.{r.randint(0, 999):03d}",
            r.choice([None, b"", b"\x00\xff", bytes(r.getrandbits(8) for _ in range(r.randint(1, 16)))]),
            r.choice([0.0, -1.5, r.uniform(-1e6, 1e6), 1e-7]),
        )  # fmt: skip
        base = (*base[:3], base[3].quantize(Decimal("0.001")), *base[4:])
        return base + (None,) * (ncols - len(base)) if ncols > len(base) else base

    def txn(self, name: str) -> None:
        t = self.tables[name]
        ts = self._tick()
        cols = [c.name for c in t.info.columns]
        changes: list[RowChange] = []
        touched: set[int] = set()  # TiDB transactions change each key at most once (TiKV merges per key)
        for _ in range(self.rng.randint(1, 4)):
            op = self.rng.random()
            free = sorted(set(t.rows) - touched)
            if op < 0.5 or not free:
                rid = self.next_id
                self.next_id += 1
                vals = self._values(rid, len(cols))
                self._sql(
                    f"INSERT INTO `{DB}`.`{name}` ({','.join(cols)}) VALUES ({','.join(['%s'] * len(cols))})", vals
                )
                changes.append(RowChange(ts, t.info, RowOp.INSERT, None, vals))
                t.rows[rid] = vals
                touched.add(rid)
            elif op < 0.85:
                rid = self.rng.choice(free)
                new_id = rid
                if self.rng.random() < 0.1:
                    new_id = self.next_id
                    self.next_id += 1
                vals = self._values(new_id, len(cols))
                sets = ",".join(f"{c}=%s" for c in cols)
                self._sql(f"UPDATE `{DB}`.`{name}` SET {sets} WHERE id=%s", (*vals, rid))
                changes.append(RowChange(ts, t.info, RowOp.UPDATE, t.rows.pop(rid), vals))
                t.rows[new_id] = vals
                touched.update((rid, new_id))
            else:
                rid = self.rng.choice(free)
                touched.add(rid)
                self._sql(f"DELETE FROM `{DB}`.`{name}` WHERE id=%s", (rid,))
                changes.append(RowChange(ts, t.info, RowOp.DELETE, t.rows.pop(rid), None))
        self.up.commit()
        # split key-changing updates first: the DELETE of the old key belongs to the old key's partition
        split = split_key_updates(changes)
        for part in sorted({self._part(name, c) for c in split}):
            rows = [c for c in split if self._part(name, c) == part]
            key = (name, t.version, part)
            self.buffers.setdefault(key, []).append(self.encoder.encode_txn(rows))
            self.rows_written += len(rows)
            if len(self.buffers[key]) >= self.txns_per_file:
                chunks = self.buffers[key]
                n = self.counters.get(key, 0) + 1
                self.counters[key] = n
                d = TableDir(DB, name, t.version, part or None, "2024-05-01")
                self.storage.write(f"{d.format()}/{data_file_name(n, self.width, self.ext)}", b"".join(chunks))
                self.history.setdefault(key, []).extend(chunks)
                chunks.clear()

    def _part(self, name: str, c: RowChange) -> int:
        if name != "p":
            return 0
        return PARTITION_IDS[int(c.values[0]) % 2]

    def replay_duplicates(self, name: str, txns: int = 5) -> None:
        """A producer restart: the last ``txns`` transactions of a table are written again in a new file."""
        self._flush()
        t = self.tables[name]
        key = (name, t.version, 0)
        old = self.history.get(key, [])[-txns:]
        if old:
            self.buffers[key] = list(old)
            self._flush()

    def finish(self) -> int:
        self._flush()
        self.storage.write("metadata", encode_checkpoint(self.ts))
        return self.ts


def run(upstream: MysqlTarget, storage: ExternalStorage, protocol: str, *, txns: int = 300, seed: int = 7,
        width: int = 20) -> Workload:  # fmt: skip
    """The standard scenario; returns the finished workload (its tree carries a final ``metadata``)."""
    w = Workload(upstream, storage, protocol, seed=seed, width=width)
    try:
        w.create_database()
        for name in ("t0", "t1", "t2"):
            w.create_table(name)
        w.create_table("p", partitioned=True)
        names = lambda: sorted(w.tables)  # noqa: E731
        for i in range(txns):
            w.txn(w.rng.choice(names()))
            if i == txns // 5:
                w.add_column("t1")
            elif i == txns // 3:
                w.replay_duplicates("t2")
                w.truncate("t2")
            elif i == txns // 2:
                w.rename("t0", "t0r")
            elif i == (2 * txns) // 3:
                w.drop_and_recreate("t2")
        w.finish()
    finally:
        w.close()
    return w
