"""Helpers of the avro e2e tests: a workload over every MySQL type that the avro protocol carries, and the way a
Confluent consumer reads TiCDC's avro topics back: confluent-kafka's own ``AvroDeserializer`` with the registry
(the latest value schema as the reader schema, so older rows take the defaults of columns added since), one row
per key (a tombstone deletes it), rebuilt into a table of its own and compared with upstream by the database."""

from __future__ import annotations

import json
import random
import string
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sparkcdc.devtools.kafka import Partitions
from tests.fixtures.mariadb import FreshDatabase

# every MySQL type the avro protocol carries (GEOMETRY it cannot; MariaDB 10.11 has no VECTOR)
TYPES_COLUMNS = (
    "ti TINYINT", "tiu TINYINT UNSIGNED", "si SMALLINT", "siu SMALLINT UNSIGNED", "mi MEDIUMINT",
    "miu MEDIUMINT UNSIGNED", "i INT", "iu INT UNSIGNED", "bi BIGINT", "biu BIGINT UNSIGNED", "f FLOAT", "dbl DOUBLE",
    "dc DECIMAL(10,2)", "dcw DECIMAL(65,30)", "dcu DECIMAL(20,0) UNSIGNED", "b1 BIT(1)", "b64 BIT(64)", "c CHAR(10)",
    "vc VARCHAR(100)", "bn BINARY(4)", "vb VARBINARY(20)", "tt TINYTEXT", "tx TEXT", "mt MEDIUMTEXT", "lt LONGTEXT",
    "tb TINYBLOB", "bl BLOB", "mb MEDIUMBLOB", "lb LONGBLOB", "e ENUM('a','b','c')", "s SET('x','y','z')", "j JSON",
    "d DATE", "dt DATETIME", "dt6 DATETIME(6)", "ts TIMESTAMP(3) NULL DEFAULT NULL", "tm TIME", "tm6 TIME(6)",
    "y YEAR", "l1 VARCHAR(20) CHARACTER SET latin1", "nn INT NOT NULL DEFAULT 5",
)  # fmt: skip
TYPES_TABLE = f"CREATE TABLE types (id INT PRIMARY KEY, {', '.join(TYPES_COLUMNS)})"
# a table whose handle key is a composite NOT NULL unique key (no primary key)
PAIRS_TABLE = "CREATE TABLE pairs (a INT NOT NULL, b VARCHAR(10) NOT NULL, v INT, UNIQUE KEY ab (a, b))"
# DDL mid-stream on ``types``, each compatible under the registry's BACKWARD rule: a new column with a default, a
# dropped column, INT widened to BIGINT (Avro promotes int to long)
TYPES_DDL = {
    50: "ALTER TABLE types ADD COLUMN added VARCHAR(10) DEFAULT 'dflt'",
    90: "ALTER TABLE types DROP COLUMN mt",
    120: "ALTER TABLE types MODIFY i BIGINT",
}
_TEXT = string.ascii_letters + string.digits + " '\"\\\n\té€😀"


@dataclass
class TypesWorkload:
    """Seeded inserts (NULLs and each type's extremes), updates, key-changing updates and deletes of ``types`` and
    ``pairs``, with ``TYPES_DDL`` at its steps."""

    db: FreshDatabase
    rng: random.Random = field(default_factory=lambda: random.Random(29))
    ids: list[int] = field(default_factory=list)
    pairs: list[tuple[int, str]] = field(default_factory=list)
    next_id: int = 1
    columns: list[str] = field(default_factory=lambda: [c.split()[0] for c in TYPES_COLUMNS])

    def create(self) -> None:
        self.db.execute(TYPES_TABLE, PAIRS_TABLE)

    def _lit(self, v: Any) -> str:
        return str(self.db.conn.escape(v))

    def value(self, col: str) -> str:
        """An SQL literal for a column of ``types``: NULL one time in seven, else a random value or an extreme."""
        r = self.rng
        if col != "nn" and r.random() < 1 / 7:
            return "NULL"
        ints = {"ti": (-128, 127), "tiu": (0, 255), "si": (-32768, 32767), "siu": (0, 65535),
                "mi": (-8388608, 8388607), "miu": (0, 16777215), "i": (-(2**31), 2**31 - 1), "iu": (0, 2**32 - 1),
                "bi": (-(2**63), 2**63 - 1), "biu": (0, 2**64 - 1), "nn": (-5, 5)}  # fmt: skip
        if col in ints:
            lo, hi = ints[col]
            return str(r.choice([lo, hi, r.randint(lo, hi), 2**63 if col == "biu" else 0]))
        if col == "f":
            return repr(r.choice([0.0, -1.5, 3.4e38, 1.17549435e-38, r.uniform(-1e6, 1e6)]))
        if col == "dbl":
            return repr(r.choice([1.7976931348623157e308, -2.2250738585072014e-308, 0.1, r.uniform(-1e12, 1e12)]))
        if col == "dc":
            return str(Decimal(r.randint(-(10**10) + 1, 10**10 - 1)).scaleb(-2))
        if col == "dcw":
            return f"{r.choice('-+')}{r.randint(0, 10**35 - 1)}.{r.randint(0, 10**30 - 1):030d}"
        if col == "dcu":
            return str(r.choice([0, 10**20 - 1, r.randint(0, 10**20 - 1)]))
        if col in ("b1", "b64"):
            return f"b'{r.randint(0, 1 if col == 'b1' else 2**64 - 1):b}'"
        if col in ("c", "vc", "tt", "tx", "mt", "lt", "added"):
            size = {"c": 10, "vc": 100, "tt": 60, "added": 10}.get(col, 300)
            return self._lit("".join(r.choice(_TEXT) for _ in range(r.randint(0, size))))
        if col in ("bn", "vb", "tb", "bl", "mb", "lb"):
            size = {"bn": 4, "vb": 20, "tb": 60}.get(col, 300)
            return self._lit(bytes(r.randint(0, 255) for _ in range(r.randint(0, size))))
        if col == "e":
            return self._lit(r.choice("abc"))
        if col == "s":
            return self._lit(",".join(x for x in "xyz" if r.random() < 0.5))
        if col == "j":
            return self._lit(json.dumps({"k": r.randint(-9, 9), "s": r.choice(_TEXT), "a": [None, True, 1.5]}))
        if col == "d":
            day = f"{r.randint(1001, 9998)}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}"
            return self._lit(r.choice(["1000-01-01", "9999-12-31", "0000-00-00", day]))
        if col in ("dt", "dt6"):
            frac = f".{r.randint(0, 999999):06d}" if col == "dt6" else ""
            return self._lit(f"{r.randint(1000, 9999)}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d} "
                             f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}{frac}")  # fmt: skip
        if col == "ts":
            return self._lit(f"{r.randint(1971, 2037)}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d} "
                             f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}."
                             f"{r.randint(0, 999):03d}")  # fmt: skip
        if col in ("tm", "tm6"):
            frac = f".{r.randint(0, 999999):06d}" if col == "tm6" else ""
            return self._lit(r.choice(["-838:59:59", "838:59:59", f"{r.randint(-838, 838)}:{r.randint(0, 59):02d}:"
                                                                  f"{r.randint(0, 59):02d}{frac}"]))  # fmt: skip
        if col == "y":
            return str(r.randint(1901, 2155))
        if col == "l1":
            return self._lit("".join(r.choice("abcéüß ") for _ in range(r.randint(0, 20))))
        raise AssertionError(f"no values for column {col}")

    def step(self, i: int) -> None:
        r = self.rng
        if i in TYPES_DDL:
            self.db.execute(TYPES_DDL[i])
            words = TYPES_DDL[i].split()
            if words[3] == "ADD":
                self.columns.append(words[5])
            elif words[3] == "DROP":
                self.columns.remove(words[5])
        kind = r.random()
        cols = self.columns
        if kind < 0.45 or len(self.ids) < 4:
            rows = []
            for _ in range(r.randint(1, 4)):
                self.ids.append(self.next_id)
                rows.append(f"({self.next_id}, {', '.join(self.value(c) for c in cols)})")
                self.next_id += 1
            self.db.execute(f"INSERT INTO types (id, {', '.join(cols)}) VALUES {', '.join(rows)}")
        elif kind < 0.7:
            changed = r.sample(cols, r.randint(1, 6))
            sets = ", ".join(f"{c} = {self.value(c)}" for c in changed)
            self.db.execute(f"UPDATE types SET {sets} WHERE id = {r.choice(self.ids)}")
        elif kind < 0.8:  # the handle key changes: TiCDC's avro sends a DELETE of the old key, then an INSERT
            old = r.choice(self.ids)
            self.ids.remove(old)
            self.ids.append(self.next_id)
            self.db.execute(f"UPDATE types SET id = {self.next_id}, vc = 'moved' WHERE id = {old}")
            self.next_id += 1
        elif kind < 0.9:
            gone = r.choice(self.ids)
            self.ids.remove(gone)
            self.db.execute(f"DELETE FROM types WHERE id = {gone}")
        else:
            self._pairs_step(i)

    def _pairs_step(self, i: int) -> None:
        r = self.rng
        if len(self.pairs) < 3 or r.random() < 0.4:
            pair = (r.randint(0, 10**6), f"b{i}")
            self.pairs.append(pair)
            self.db.execute(f"INSERT INTO pairs VALUES ({pair[0]}, '{pair[1]}', {r.randint(0, 99)})")
            return
        a, b = r.choice(self.pairs)
        if r.random() < 0.5:  # a key change of the composite key
            self.pairs.remove((a, b))
            self.pairs.append((a, f"{b}x"))
            self.db.execute(f"UPDATE pairs SET b = '{b}x' WHERE a = {a} AND b = '{b}'")
        else:
            self.db.execute(f"UPDATE pairs SET v = {r.randint(0, 99)} WHERE a = {a} AND b = '{b}'")


@dataclass
class ReadBack:
    """A topic as a Confluent consumer sees it: the rows by key, and every value read (in partition order)."""

    rows: dict[tuple[Any, ...], dict[str, Any]]
    values: list[dict[str, Any]]
    tombstones: int
    key_fields: list[str]


def read_back(registry_url: str, topic: str, partitions: Partitions) -> ReadBack:
    """Decodes ``partitions`` of ``topic`` with confluent-kafka's ``AvroDeserializer`` and the registry: keys with
    their writer schema, values projected onto the subject's latest schema; a key's newest value is its row, a
    tombstone (the key and no value) removes it. A key lives on one partition (the index-value dispatcher)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient({"url": registry_url})
    keys = AvroDeserializer(client)
    values = AvroDeserializer(client, schema_str=client.get_latest_version(f"{topic}-value").schema)
    key_ctx, value_ctx = SerializationContext(topic, MessageField.KEY), SerializationContext(topic, MessageField.VALUE)
    out = ReadBack({}, [], 0, [])
    for messages in partitions.values():
        for m in messages:
            assert m.key, f"{topic}: a message without a key"
            key = keys(m.key, key_ctx)
            out.key_fields = sorted(key)
            k = tuple(sorted(key.items()))
            if not m.value:
                out.rows.pop(k, None)
                out.tombstones += 1
                continue
            value = values(m.value, value_ctx)
            out.values.append(value)
            out.rows[k] = value
    return out


def rebuild(db: FreshDatabase, target: str, table: str, rows: list[dict[str, Any]], unsigned: set[str]) -> None:
    """``rows`` (Avro records without TiCDC's ``_tidb_*`` fields) into ``target``.``table``, made like the upstream
    table. A BIGINT UNSIGNED carried as a long wraps below zero above 2^63-1 (TiCDC's ``long`` mode): it is unwrapped,
    as a consumer of that mode must."""
    db.execute(f"CREATE TABLE `{target}`.`{table}` LIKE `{db.name}`.`{table}`")
    for row in rows:
        cols = [c for c in row if not c.startswith("_tidb_")]
        vals = [row[c] + 2**64 if c in unsigned and isinstance(row[c], int) and row[c] < 0 else row[c] for c in cols]
        names = ", ".join(f"`{c}`" for c in cols)
        with db.conn.cursor() as cur:
            cur.execute(f"INSERT INTO `{target}`.`{table}` ({names}) VALUES ({', '.join(['%s'] * len(cols))})", vals)


def differences(db: FreshDatabase, target: str, table: str) -> list[tuple[Any, ...]]:
    """Rows of upstream's ``table`` missing from ``target``'s copy and the other way round (the database compares
    every value: FLOAT bits, DECIMAL digits, BIT, binary bytes, temporal values)."""
    up, down = f"`{db.name}`.`{table}`", f"`{target}`.`{table}`"
    missing = db.query(f"SELECT 'upstream only', t.* FROM (SELECT * FROM {up} EXCEPT SELECT * FROM {down}) t LIMIT 5")
    extra = db.query(f"SELECT 'rebuilt only', t.* FROM (SELECT * FROM {down} EXCEPT SELECT * FROM {up}) t LIMIT 5")
    return missing + extra


def unsigned_bigints(db: FreshDatabase, table: str) -> set[str]:
    sql = (
        "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s AND "
        "COLUMN_TYPE LIKE 'bigint%%unsigned'"
    )
    return {r[0] for r in db.query(sql, (db.name, table))}
