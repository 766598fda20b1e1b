"""``cdc lake maintain`` and ``cdc lake read`` on both formats: compaction keeps the rows and the as-of read of the
newest commit-ts; history past --retain fails an as-of read in one line, never with other rows."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from sparkcdc.errors import ConfigError
from sparkcdc.lake.as_of import read_as_of
from sparkcdc.lake.changes import net_change
from sparkcdc.lake.location import LakeLocation
from sparkcdc.lake.maintenance import maintain
from sparkcdc.lake.target import open_tables
from tests.unit.cli.test_input_errors import run_cdc
from tests.unit.lake.support import T, dele, ins, upd


@pytest.fixture(params=["delta", "iceberg"])
def uri(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    uri = f"{request.param}://{tmp_path}/lake"
    where, _ = LakeLocation.from_uri(uri)
    tables = open_tables(where, "cf")
    tables.ensure(T)
    batches = ([ins(10, 1, "a"), ins(10, 2, "b")], [ins(20, 3, "c")], [upd(30, (1, "a"), (1, "x")), dele(30, 2, "b")])
    for batch in batches:
        applied = tables.applied_ts("db", "t")
        tables.merge(T, net_change(batch, T.handle_key_positions, applied), applied)
    return uri


def rows(uri: str, ts: int) -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in read_as_of(uri, "db.t", ts).to_pylist())


def test_compaction_keeps_every_as_of_read_within_retention(uri: str) -> None:
    where, _ = LakeLocation.from_uri(uri)
    done = maintain(where, "db", "t", datetime.timedelta(days=7))
    assert done.files_before > 1 and done.files_after == 1 and done.removed == 0
    assert rows(uri, 30) == rows(uri, 2**63 - 1) == [(1, "x"), (3, "c")]
    assert rows(uri, 20) == [(1, "a"), (2, "b"), (3, "c")]
    assert open_tables(where, "cf").applied_ts("db", "t") == 30  # the next batch skips what the table holds


def test_history_past_retention_fails_an_as_of_read_in_one_line(uri: str) -> None:
    where, _ = LakeLocation.from_uri(uri)
    done = maintain(where, "db", "t", datetime.timedelta(0))
    assert done.files_after == 1 and done.removed > 0
    assert rows(uri, 30) == [(1, "x"), (3, "c")]
    with pytest.raises(ConfigError, match=r"as of commit-ts 20: .*(removed|expired)") as e:
        rows(uri, 20)
    assert "\n" not in e.value.message


def test_cdc_lake_read_prints_the_table_as_of_a_commit_ts(uri: str, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    from sparkcdc.cli.main import cli

    cli.main(["lake", "read", "--sink-uri", uri, "--table", "db.t", "--as-of", "20", "--output", "json"],
             standalone_mode=False)  # fmt: skip
    out = capsys.readouterr().out
    assert sorted(json.loads(line)["id"] for line in out.splitlines()) == [1, 2, 3]
    cli.main(["lake", "read", "--sink-uri", uri, "--table", "db.t", "--output", "csv"], standalone_mode=False)
    assert sorted(capsys.readouterr().out.splitlines()) == sorted(['"id","v"', '1,"x"', '3,"c"'])
    cli.main(["lake", "read", "--sink-uri", uri, "--table", "db.t", "--as-of", "9"], standalone_mode=False)
    assert capsys.readouterr().out.strip() == "(no rows; columns: id, v)"
    cli.main(["lake", "maintain", "--sink-uri", uri, "--table", "db.t"], standalone_mode=False)
    assert capsys.readouterr().out.startswith("db.t: data files ")


@pytest.mark.parametrize(("args", "message"), [
    (["--as-of", "yesterday"], "--as-of 'yesterday': give an upstream commit-ts"),
    (["--table", "t"], "'t': give it as schema.table"),
    (["--table", "db.nope"], "db.nope"),
])  # fmt: skip
def test_cdc_lake_read_bad_input_is_one_line(uri: str, args: list[str], message: str, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    base = {"--sink-uri": uri, "--table": "db.t"}
    for flag, value in zip(args[::2], args[1::2]):
        base[flag] = value
    line = run_cdc(monkeypatch, capsys, "lake", "read", *[x for kv in base.items() for x in kv])
    assert message in line


def test_cdc_lake_maintain_bad_retain_is_one_line(uri: str, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    line = run_cdc(monkeypatch, capsys, "lake", "maintain", "--sink-uri", uri, "--table", "db.t", "--retain", "-1h")
    assert "--retain '-1h'" in line
