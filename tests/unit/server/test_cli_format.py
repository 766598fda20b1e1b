"""Pure helpers of the `cdc cli` commands: Go-compatible JSON text and the TSO parameter."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from sparkcdc.cli.changefeed import TSO, changefeed, go_json


def test_go_json_escapes_html_like_go() -> None:
    assert go_json({"u": "s3://b/p?protocol=csv&x=<1>"}) == '{"u":"s3://b/p?protocol=csv\\u0026x=\\u003c1\\u003e"}'
    assert go_json({"a": [1, {"b": None}], "ü": "é"}) == '{"a":[1,{"b":null}],"ü":"é"}'
    assert go_json({"a": [1]}, indent=True) == '{\n  "a": [\n    1\n  ]\n}'
    assert go_json([], indent=True) == "[]"


def test_tso_param() -> None:
    assert TSO.convert("433305438660591626", None, None) == 433305438660591626
    with pytest.raises(click.BadParameter, match="decimal integer"):
        TSO.convert("yesterday", None, None)
    with pytest.raises(click.BadParameter):
        TSO.convert(str(1 << 64), None, None)


@pytest.mark.parametrize("command", ["create", "list", "query", "pause", "resume", "update", "remove", "statistics"])
def test_every_option_has_help(command: str) -> None:
    cmd = changefeed.commands[command]
    for param in cmd.params:
        if isinstance(param, click.Option) and not param.hidden:
            assert param.help, f"{command} {param.name} has no help"
    result = CliRunner().invoke(cmd, ["--help"])
    assert result.exit_code == 0 and "--server" in result.output


def test_required_changefeed_id_is_misuse() -> None:
    result = CliRunner().invoke(changefeed, ["query"])
    assert result.exit_code == 2
    assert "--changefeed-id" in result.output
