"""Every spec vector through both paths: the vector tests of the codecs run again here with each Python
encode call (``encode_txn``, ``encode_row``) also made by the native kernel from the binlog rows events of the same
rows, with the same clock, and the bytes must be identical."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sparkcdc.codec.canal_json.encoder import CanalJsonMessageEncoder, CanalJsonTxnEncoder
from sparkcdc.codec.csv.encoder import CsvEncoder
from sparkcdc.codec.simple.encoder import SimpleEncoder
from tests.unit.codec.test_canal_json_vectors import test_dml_line_matches_vector  # noqa: F401
from tests.unit.codec.test_csv_vectors import (  # noqa: F401
    test_column_value,
    test_decoder_input,
    test_derived,
    test_integration_reference_output,
)
from tests.unit.codec.test_simple_vectors import test_vector_bytes, test_vector_decodes_and_reencodes  # noqa: F401
from tests.unit.native.differential import check_messages, check_txn

COMPARED: dict[str, int] = {}


@pytest.fixture(autouse=True)
def both_paths(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Wraps the Python encoders: every call is checked against the native kernel of the same encoder."""

    def txn(cls: Any, name: str) -> None:
        original = cls.encode_txn

        def encode_txn(self: Any, rows: Any) -> bytes:
            out: bytes = original(self, rows)
            if check_txn(self, rows, out, split=False, python=original):
                COMPARED[name] = COMPARED.get(name, 0) + 1
            return out

        monkeypatch.setattr(cls, "encode_txn", encode_txn)

    def message(cls: Any, name: str) -> None:
        original = cls.encode_row

        def encode_row(self: Any, row: Any) -> Any:
            out = original(self, row)
            if check_messages(self, [row], [out.value], split=False, python=original):
                COMPARED[name] = COMPARED.get(name, 0) + 1
            return out

        monkeypatch.setattr(cls, "encode_row", encode_row)

    txn(CanalJsonTxnEncoder, "canal-json")
    txn(CsvEncoder, "csv")
    message(CanalJsonMessageEncoder, "canal-json-mq")
    message(SimpleEncoder, "simple")
    yield


def test_the_vectors_were_compared_on_both_paths() -> None:
    """Runs after the vector tests above (module order): each protocol had its vectors compared."""
    assert COMPARED.get("canal-json", 0) >= 10, COMPARED
    assert COMPARED.get("canal-json-mq", 0) >= 5, COMPARED
    assert COMPARED.get("csv", 0) >= 10, COMPARED
    assert COMPARED.get("simple", 0) >= 2, COMPARED
