"""``cdc cli changefeed create`` on tables without a handle key: TiCDC's warning names them always; the question
whether to go on without them is asked only of a user at a terminal and without ``--no-confirm`` (scripts, whose
stdin is no terminal, go on). Nothing here reaches a server."""

from __future__ import annotations

import io
from typing import Any

import pytest

from sparkcdc.cli.client import APIClient
from sparkcdc.cli.main import main

WARNING = ("[WARN] some tables are not eligible to replicate (no primary key or not-null unique key), they are left "
           "out: shop.log, shop.audit")  # fmt: skip
Result = tuple[int, list[str], list[dict[str, Any]]]  # exit code, stderr then stdout lines, the bodies created
QUESTION = "Could you agree to ignore those tables, and continue to replicate [Y/N]"


class Stdin(io.StringIO):
    def __init__(self, text: str, tty: bool) -> None:
        super().__init__(text)
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def create(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    stdin: Stdin,
    *args: str,
    ineligible: tuple[str, ...] = ("shop.log", "shop.audit"),
) -> Result:
    created: list[dict[str, Any]] = []

    def fake_create(_: APIClient, body: dict[str, Any]) -> dict[str, Any]:
        created.append(body)
        return {"id": "cf"}

    monkeypatch.setattr(APIClient, "tso", lambda _: 450000000000000000)
    monkeypatch.setattr(APIClient, "verify_table", lambda _, body: list(ineligible))
    monkeypatch.setattr(APIClient, "create", fake_create)
    monkeypatch.setattr("sys.stdin", stdin)
    monkeypatch.setattr("sys.argv", ["cdc", "cli", "changefeed", "create", "--sink-uri", "blackhole://", *args])
    code = 0
    try:
        main()
    except SystemExit as e:
        code = int(e.code or 0)
    out = capsys.readouterr()
    return code, (out.err + out.out).splitlines(), created


def test_without_a_terminal_tables_are_named_and_create_goes_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines, created = create(monkeypatch, capsys, Stdin("n\n", tty=False))
    assert code == 0 and len(created) == 1
    assert lines[0] == WARNING and QUESTION not in lines
    assert lines[1] == "Create changefeed successfully!"


def test_at_a_terminal_no_abandons_the_create(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines, created = create(monkeypatch, capsys, Stdin("n\n", tty=True))
    assert code == 1 and created == []
    assert lines == [WARNING, "Error: [CDC:ErrCliAborted] command 'cli changefeed create' is aborted by user",
                     QUESTION, "No changefeed is created because you don't want to ignore some tables."]  # fmt: skip


def test_at_a_terminal_yes_or_no_confirm_creates(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines, created = create(monkeypatch, capsys, Stdin("y\n", tty=True))
    assert code == 0 and len(created) == 1 and lines[:2] == [WARNING, QUESTION]
    code, lines, created = create(monkeypatch, capsys, Stdin("", tty=True), "--no-confirm")
    assert code == 0 and len(created) == 1 and lines[0] == WARNING and QUESTION not in lines


def test_nothing_is_said_when_every_table_has_a_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines, created = create(monkeypatch, capsys, Stdin("", tty=True), ineligible=())
    assert code == 0 and len(created) == 1 and lines[0] == "Create changefeed successfully!"


def test_without_start_ts_the_server_takes_its_current_tso_at_create(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A TSO the cli took before its verify_table call could fall behind the relay GC by the time the create checks
    it is retained (a cluster with gc-life-time 0 refused such a create with ErrStartTsBeforeGC); start_ts 0 lets
    the server take it at create, as TiCDC's API v2 does. A given --start-ts is sent as given."""
    code, _, created = create(monkeypatch, capsys, Stdin("", tty=False), ineligible=())
    assert code == 0 and created[0]["start_ts"] == 0
    code, _, created = create(monkeypatch, capsys, Stdin("", tty=False), "--start-ts", "449999999999999999",
                              ineligible=())  # fmt: skip
    assert code == 0 and created[0]["start_ts"] == 449999999999999999
