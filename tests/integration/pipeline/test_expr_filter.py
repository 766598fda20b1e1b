"""TiCDC's expression filters on a real changefeed: MariaDB upstream, the Spark runner's own capture and query
(the session's Spark), created through the changefeed manager as ``cdc cli changefeed create`` does, into a
file:// canal-json sink read back with our decoder.

Each ``ignore-*-value-expr`` is set; exactly the row changes the expressions match are missing downstream,
identified by operation and key against an independent Python computation of the same workload. Create refuses an
expression naming a column the table lacks (checked against the captured schema), and a DROP COLUMN that makes an
expression name a missing column fails the changefeed with TiCDC's unretryable CDC:ErrExpressionColumnNotFound.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.changefeed.config import ReplicaConfig
from sparkcdc.changefeed.info import FeedState
from sparkcdc.changefeed.runner import RunnerContext
from sparkcdc.errors import ConfigError
from sparkcdc.model.events import RowOp
from sparkcdc.pipeline.runner import SparkRunner
from sparkcdc.server.changefeed import ChangefeedManager, CreateRequest
from sparkcdc.server.store import MetaStore
from tests.fixtures.mariadb import FreshDatabase
from tests.integration.pipeline.conftest import wait_for, wait_relay_caught_up
from tests.integration.pipeline.replay import row_changes
from tests.integration.pipeline.server import now_tso

pytestmark = pytest.mark.integration

REGIONS = ("eu", "us", "apac", "eu")
STATUSES = ("new", "paid", "void")
N = 60


def order(i: int) -> dict[str, Any]:
    """Row ``i`` of the workload: NULL amounts and notes on purpose (an expression on NULL does not match)."""
    return {
        "id": i,
        "region": REGIONS[i % 4],
        "amount": None if i % 10 == 0 else Decimal(i * 37 % 1000).quantize(Decimal("0.01")),
        "status": STATUSES[i % 3],
        "created": f"20{17 + i % 6}-0{1 + i % 9}-1{i % 10} 10:0{i % 6}:00",
        "note": None if i % 7 == 0 else f"{'Keep' if i % 11 == 0 else 'keep' if i % 2 else 'drop'}-{i}",
    }


# The expressions, and the same decisions computed here in plain Python (MySQL semantics, binary strings).
FILTERS = [
    {
        "matcher": ["{db}.orders"],
        "ignore-insert-value-expr": "amount > 500 or region = 'apac'",
        "ignore-delete-value-expr": "status = 'void' and year(created) >= 2020",
    },
    {
        "matcher": ["{db}.*"],
        "ignore-update-old-value-expr": "note LIKE 'keep%'",
        "ignore-update-new-value-expr": "amount * 2 >= 1000",
    },
]


def insert_dropped(r: dict[str, Any]) -> bool:
    return (r["amount"] is not None and r["amount"] > 500) or r["region"] == "apac"


def update_dropped(old: dict[str, Any], new: dict[str, Any]) -> bool:
    # LIKE is case-sensitive in TiCDC's filters: 'Keep-…' does not match 'keep%'
    return (old["note"] is not None and old["note"].startswith("keep")) or (
        new["amount"] is not None and new["amount"] * 2 >= 1000
    )


def delete_dropped(r: dict[str, Any]) -> bool:
    return r["status"] == "void" and int(r["created"][:4]) >= 2020


def upstream_uri(db: FreshDatabase) -> str:
    kw = db.puller_kwargs()
    return f"mysql://{kw['user']}:{kw['password']}@{kw['host']}:{kw['port']}"


@pytest.fixture
def manager(spark: Any, fresh_db: FreshDatabase, tmp_path: Path) -> Iterator[ChangefeedManager]:
    fresh_db.execute(
        "CREATE TABLE orders (id INT PRIMARY KEY, region VARCHAR(8), amount DECIMAL(10,2), "
        "status ENUM('new','paid','void'), created DATETIME, note VARCHAR(20))",
        "CREATE TABLE audit (id INT PRIMARY KEY, region VARCHAR(8), amount DECIMAL(10,2), note VARCHAR(20))",
    )
    runner = SparkRunner(RunnerContext(data_dir=tmp_path / "data", upstream_uri=upstream_uri(fresh_db)),
                         spark=spark, trigger_seconds=0.5)  # fmt: skip
    mgr = ChangefeedManager(MetaStore(tmp_path), runner, addr="127.0.0.1:1")
    mgr.start(poll=False)
    try:
        yield mgr
    finally:
        mgr.close()


def _config(db: str, filters: list[dict[str, Any]]) -> ReplicaConfig:
    rules = [{k: ([m.format(db=db) for m in v] if k == "matcher" else v) for k, v in f.items()} for f in filters]
    return ReplicaConfig.from_toml({"filter": {"rules": [f"{db}.*"], "event-filters": rules}})


def _caught_up(db: FreshDatabase, mgr: ChangefeedManager) -> None:
    runner = mgr.runner
    assert isinstance(runner, SparkRunner)

    def healthy() -> None:
        assert runner.capture is not None and runner.capture.error is None

    wait_relay_caught_up(db, runner.capture_dir, healthy, 60)


def test_expression_filters_leave_out_exactly_the_matching_rows(
    manager: ChangefeedManager, fresh_db: FreshDatabase, tmp_path: Path
) -> None:
    db = fresh_db
    _caught_up(db, manager)
    sink = f"file://{tmp_path / 'sink'}?protocol=canal-json&flush-interval=2s"

    # create: an expression naming a column a replicated table lacks is refused against the captured schema
    bad = [{"matcher": [f"{db.name}.audit"], "ignore-insert-value-expr": "status = 'void'"}]
    with pytest.raises(ConfigError) as e:
        manager.create(CreateRequest(changefeed_id="bad", sink_uri=sink, config=_config(db.name, bad)))
    assert e.value.code == "CDC:ErrExpressionColumnNotFound"
    assert f"Cannot find column 'status' from table '{db.name}.audit'" in e.value.message

    manager.create(CreateRequest(changefeed_id="cf", sink_uri=sink, config=_config(db.name, FILTERS)))
    rows = {i: order(i) for i in range(1, N + 1)}
    for r in rows.values():
        values = ", ".join("NULL" if v is None else f"'{v}'" for v in r.values())
        db.execute(f"INSERT INTO orders VALUES ({values})")
    db.execute(*(f"INSERT INTO audit VALUES ({i}, 'apac', 900.00, 'keep-{i}')" for i in range(1, 6)))
    updated = {}
    for i in range(1, N + 1, 3):  # one UPDATE per row, each its own transaction
        old = rows[i]
        new = {**old, "amount": (old["amount"] or Decimal(0)) + 300, "note": f"u-{i}"}
        db.execute(f"UPDATE orders SET amount = IFNULL(amount, 0) + 300, note = 'u-{i}' WHERE id = {i}")
        updated[i] = (old, new)
        rows[i] = new
    db.execute("UPDATE audit SET amount = 1000 WHERE id = 1")  # matched by rule 2: new amount*2 >= 1000
    deleted = [i for i in range(1, N + 1) if i % 5 == 0]
    db.execute(*(f"DELETE FROM orders WHERE id = {i}" for i in deleted))
    end = now_tso(db)
    _caught_up(db, manager)

    def checkpoint() -> bool:
        manager.poll_once()
        info, status = manager.get("default", "cf")
        assert info.state == FeedState.NORMAL, info.error
        return status.checkpoint_ts >= end

    wait_for(checkpoint, 180, "the checkpoint to pass the workload")

    got: dict[tuple[str, RowOp], list[int]] = {}
    for name, op, before, after in row_changes(sink):
        image = after if after is not None else before
        assert image is not None
        got.setdefault((name.split(".")[1], op), []).append(int(image["id"]))
    want_inserts = [i for i in range(1, N + 1) if not insert_dropped(order(i))]
    want_updates = [i for i, (old, new) in updated.items() if not update_dropped(old, new)]
    want_deletes = [i for i in deleted if not delete_dropped(rows[i])]
    assert sorted(got.get(("orders", RowOp.INSERT), [])) == want_inserts
    assert sorted(got.get(("orders", RowOp.UPDATE), [])) == want_updates
    assert sorted(got.get(("orders", RowOp.DELETE), [])) == want_deletes
    assert sorted(got.get(("audit", RowOp.INSERT), [])) == [1, 2, 3, 4, 5]  # rule 1 does not match audit
    assert ("audit", RowOp.UPDATE) not in got
    # the workload exercises both outcomes of every expression
    assert 0 < len(want_inserts) < N and 0 < len(want_updates) < len(updated) and 0 < len(want_deletes) < len(deleted)

    # a DDL that leaves an expression naming a missing column fails the changefeed, unretryable, as TiCDC
    db.execute("ALTER TABLE orders DROP COLUMN region", "INSERT INTO orders (id, amount) VALUES (1000, 1.00)")

    states = []

    def failed() -> Any:
        manager.poll_once()
        info, _ = manager.get("default", "cf")
        states.append(info.state)
        return info if info.state == FeedState.FAILED else None

    info = wait_for(failed, 120, "the changefeed to fail")
    assert info.error is not None and info.error.code == "CDC:ErrExpressionColumnNotFound", info.error
    assert FeedState.WARNING not in states  # unretryable: failed at once, no restarts (TiCDC's ShouldFailChangefeed)
    assert f"Cannot find column 'region' from table '{db.name}.orders'" in info.error.message
