"""The Kafka readers' rule on the TiDB extension (``check_extension``, issue 26 item 2): real TiCDC canal-json
messages without ``_tidb`` decode with commit-ts 0 when the reader expects no extension, and are refused in one line
when it expects one; a message with ``_tidb`` is refused when the reader expects none. Unchecked decoding (storage
files, the codec's own tests) stays lenient."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest

from sparkcdc.codec.base import Message
from sparkcdc.codec.canal_json.config import CanalJsonConfig
from sparkcdc.codec.canal_json.decoder import CanalJsonMessageDecoder
from sparkcdc.errors import DecodeError
from sparkcdc.model import DDLEvent, ResolvedEvent, RowChange
from tests import vectors
from tests.fixtures.ticdc_canal_json import WITHOUT_EXTENSION


def _spec_messages() -> list[tuple[str, bytes]]:
    """Every message or DML line of the spec's canal-json vectors, with its id."""
    out = []
    for v in vectors.load("canal_json"):
        text = v["expected"].get("line") or v["expected"].get("message")
        if text:
            out.append((v["id"], text.encode()))
    return out


SPEC_PLAIN = [pytest.param(value, id=name) for name, value in _spec_messages() if b'"_tidb"' not in value]
SPEC_EXTENDED = [pytest.param(value, id=name) for name, value in _spec_messages() if b'"_tidb"' in value]
REAL = [pytest.param(m.value, id=f"{m.source.split(':')[0]}-{i}") for i, m in enumerate(WITHOUT_EXTENSION)]


def checked(extension: bool) -> CanalJsonMessageDecoder:
    return CanalJsonMessageDecoder(CanalJsonConfig(enable_tidb_extension=extension), check_extension=True)


def decode(decoder: CanalJsonMessageDecoder, value: bytes) -> list[Any]:
    return list(decoder.decode(Message(None, value)))


def test_the_corpus_is_what_the_issue_speaks_of() -> None:
    """17 real messages from 7 public sources, DML and DDL, none with ``_tidb``; 5 spec vectors on top."""
    assert len(WITHOUT_EXTENSION) == 17 and len({m.source for m in WITHOUT_EXTENSION}) == 7
    docs = [json.loads(m.value) for m in WITHOUT_EXTENSION]
    assert all("_tidb" not in d for d in docs)
    assert sum(d["isDdl"] for d in docs) == 5 and {d["type"] for d in docs} >= {"INSERT", "UPDATE", "DELETE"}
    assert len(SPEC_PLAIN) == 5 and len(SPEC_EXTENDED) == 4


@pytest.mark.parametrize("value", [*REAL, *SPEC_PLAIN])
def test_without_the_extension_every_message_decodes_with_no_commit_ts(value: bytes) -> None:
    events = decode(checked(False), value)
    assert events and all(isinstance(e, RowChange | DDLEvent) and e.commit_ts == 0 for e in events)
    assert decode(CanalJsonMessageDecoder(), value) == events  # the same as unchecked


@pytest.mark.parametrize("value", [*REAL, *SPEC_PLAIN])
def test_read_with_the_extension_a_message_without_tidb_is_refused_saying_what_to_change(value: bytes) -> None:
    with pytest.raises(DecodeError) as e:
        decode(checked(True), value)
    text = e.value.message
    assert "carries no commit-ts ('_tidb.commitTs') although enable-tidb-extension=true is set" in text
    assert "remove it here too" in text and "\n" not in text
    doc = json.loads(value)
    assert f"of {doc['database']}" in text  # names the table (or database) it is about


@pytest.mark.parametrize("value", SPEC_EXTENDED)
def test_read_without_the_extension_a_message_with_tidb_is_refused(value: bytes) -> None:
    with pytest.raises(DecodeError, match=r"carries the TiDB extension \('_tidb'\): the changefeed sets "
                                          r"enable-tidb-extension=true; set enable-tidb-extension=true here too"):
        decode(checked(False), value)
    events = decode(checked(True), value)  # and read as what it is, it decodes with its commit-ts or watermark
    assert events and all(e.commit_ts if isinstance(e, RowChange | DDLEvent) else e.ts for e in events)
    assert any(isinstance(e, ResolvedEvent) for e in events) == (b"TIDB_WATERMARK" in value)


def test_the_check_survives_pickling() -> None:
    decoder = pickle.loads(pickle.dumps(checked(True)))
    with pytest.raises(DecodeError, match="carries no commit-ts"):
        decode(decoder, WITHOUT_EXTENSION[0].value)
