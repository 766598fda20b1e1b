"""Claim-check files read back by name from the changefeed's claim-check storage."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.errors import DecodeError
from sparkcdc.storage.claim_check import claim_check_reader


def test_reads_files_by_name_and_names_a_missing_one(tmp_path: Path) -> None:
    (tmp_path / "a1.json").write_bytes(b'{"key":null,"value":"eA=="}')
    read = claim_check_reader(tmp_path.as_uri() + "/")
    assert read is not None
    assert read("a1.json") == b'{"key":null,"value":"eA=="}'
    with pytest.raises(DecodeError, match=r"claim-check file b2\.json is missing from file://"):
        read("b2.json")
    assert claim_check_reader("") is None
