"""The Iceberg MERGE's copy-on-write overwrite: rows of untouched keys survive every rewrite, also when the remains
are written out in several parts and when the key has two columns (matched by a semi-join)."""

from __future__ import annotations

from pathlib import Path

import pytest

import sparkcdc.lake.iceberg_rewrite as rewrite
from sparkcdc.lake.as_of import read_as_of
from sparkcdc.lake.changes import net_change
from sparkcdc.lake.location import LakeLocation
from sparkcdc.lake.target import open_tables
from sparkcdc.model import RowChange
from sparkcdc.model.table import ColumnInfo
from tests.unit.lake.support import dele, ins, key_col, table, upd

TWO = table(key_col("a"), key_col("b", "varchar"), ColumnInfo("v", "varchar"))


@pytest.mark.parametrize("flush_bytes", [1, rewrite.FLUSH_BYTES])
def test_a_two_column_key_rewritten_in_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flush_bytes: int) -> None:
    monkeypatch.setattr(rewrite, "FLUSH_BYTES", flush_bytes)
    uri = f"iceberg://{tmp_path}/lake"
    tables = open_tables(LakeLocation.from_uri(uri)[0], "cf")
    tables.ensure(TWO)
    batches: list[list[RowChange]] = [[ins(10 + i, i, "x", f"v{i}", t=TWO), ins(10 + i, i, "y", f"w{i}", t=TWO)]
                                      for i in range(4)]  # fmt: skip
    batches.append([upd(20, (0, "x", "v0"), (0, "x", "new"), t=TWO), dele(20, 1, "y", "w1", t=TWO),
                    upd(20, (2, "x", "v2"), (9, "x", "v2"), t=TWO)])  # fmt: skip
    for batch in batches:
        applied = tables.applied_ts("db", "t")
        tables.merge(TWO, net_change(batch, TWO.handle_key_positions, applied), applied)
    assert sorted(tuple(r.values()) for r in read_as_of(uri, "db.t", 20).to_pylist()) == [
        (0, "x", "new"), (0, "y", "w0"), (1, "x", "v1"), (2, "y", "w2"), (3, "x", "v3"), (3, "y", "w3"),
        (9, "x", "v2")]  # fmt: skip
    assert sorted(tuple(r.values()) for r in read_as_of(uri, "db.t", 13).to_pylist())[:2] == [(0, "x", "v0"),
                                                                                             (0, "y", "w0")]
