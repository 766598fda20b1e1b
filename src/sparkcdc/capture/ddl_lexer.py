"""A small SQL tokenizer and cursor for the DDL subset the schema tracker understands."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NoReturn

from sparkcdc.errors import CorruptDataError

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<exec>/\*[!M]!?\d*)                  # executable comment opener: keep its content
  | (?P<comment>/\*.*?\*/|--[^\n]*|\#[^\n]*)
  | (?P<endexec>\*/)
  | (?P<qid>`(?:[^`]|``)*`)
  | (?P<str>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")
  | (?P<num>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+)
  | (?P<id>[A-Za-z0-9_$\u0080-\uffff]+)
  | (?P<op><=>|>=|<=|!=|<>|\|\||&&|:=|[(),;.=+\-*/<>!~%^&|@?:{}\[\]])
    """,
    re.VERBOSE | re.DOTALL,
)

_UNESCAPE = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "b": "\b", "Z": "\x1a", "\\": "\\", "'": "'", '"': '"'}


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # id | qid | str | num | op
    text: str  # raw text (identifiers unquoted, strings unescaped)
    raw: str

    @property
    def upper(self) -> str:
        return self.text.upper() if self.kind == "id" else ""


def _unquote_string(raw: str) -> str:
    q = raw[0]
    body = raw[1:-1].replace(q + q, q)
    out = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append(_UNESCAPE.get(nxt, nxt if nxt not in "%_" else "\\" + nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def tokenize(sql: str) -> list[Token]:
    """Tokens of ``sql`` (comments dropped, executable comments' content kept). Raises CorruptDataError on a
    character that cannot start a token (an unterminated string, for example)."""
    out: list[Token] = []
    pos = 0
    while pos < len(sql):
        m = _TOKEN.match(sql, pos)
        if m is None:
            raise CorruptDataError(f"cannot tokenize DDL near {sql[pos:pos + 30]!r}")
        pos = m.end()
        kind = m.lastgroup
        raw = m.group()
        if kind in ("ws", "comment", "exec", "endexec"):
            continue
        assert kind is not None
        if kind == "qid":
            out.append(Token("qid", raw[1:-1].replace("``", "`"), raw))
        elif kind == "str":
            out.append(Token("str", _unquote_string(raw), raw))
        else:
            out.append(Token(kind, raw, raw))
    return out


class Cursor:
    """Token cursor with keyword helpers. ``fail`` raises CorruptDataError naming the position."""

    def __init__(self, sql: str) -> None:
        self.sql = sql
        self.toks = tokenize(sql)
        self.i = 0

    def peek(self, k: int = 0) -> Token | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def at_end(self) -> bool:
        t = self.peek()
        return t is None or (t.kind == "op" and t.text == ";")

    def next(self) -> Token:
        t = self.peek()
        if t is None:
            self.fail("unexpected end of statement")
        self.i += 1
        return t

    def is_kw(self, *words: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t is not None and t.kind == "id" and t.text.upper() in words

    def accept(self, *words: str) -> bool:
        """Consume the keyword sequence if it is next."""
        for k, w in enumerate(words):
            if not self.is_kw(w, k=k):
                return False
        self.i += len(words)
        return True

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            self.fail(f"expected {' '.join(words)}")

    def is_op(self, op: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t is not None and t.kind == "op" and t.text == op

    def accept_op(self, op: str) -> bool:
        if self.is_op(op):
            self.i += 1
            return True
        return False

    def expect_op(self, op: str) -> None:
        if not self.accept_op(op):
            self.fail(f"expected {op!r}")

    def ident(self) -> str:
        t = self.next()
        if t.kind not in ("id", "qid", "str"):
            self.fail(f"expected a name, got {t.raw!r}")
        return t.text

    def qualified(self, default_schema: str) -> tuple[str, str]:
        first = self.ident()
        if self.accept_op("."):
            return first, self.ident()
        return default_schema, first

    def skip_parens(self) -> str:
        """Skip a balanced ( ... ) group starting at the cursor; returns its raw text without the outer parens."""
        self.expect_op("(")
        depth = 1
        parts: list[str] = []
        while True:
            t = self.next()
            if t.kind == "op" and t.text == "(":
                depth += 1
            elif t.kind == "op" and t.text == ")":
                depth -= 1
                if depth == 0:
                    return " ".join(parts)
            parts.append(t.raw)

    def skip_until_comma_or_close(self) -> None:
        """Skip tokens up to (not including) a top-level ',' or ')' or the end."""
        while not self.at_end() and not self.is_op(",") and not self.is_op(")"):
            if self.is_op("("):
                self.skip_parens()
            else:
                self.i += 1

    def fail(self, what: str) -> NoReturn:
        near = " ".join(t.raw for t in self.toks[self.i : self.i + 6])
        raise CorruptDataError(f"cannot parse DDL ({what}) near {near!r}: {self.sql[:200]!r}")

