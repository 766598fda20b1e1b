"""TiDB/TiCDC table-filter rules: ``*.*``, ``db.*``, ``db.t?``, ``!db.t``, ``db.[a-c]*``, quoted names, ``/regex/``.

Semantics (as TiDB's ``util/table-filter``, which TiCDC's ``[filter] rules`` use):

* each rule is ``<schema-pattern>.<table-pattern>``; a leading ``!`` makes it an exclusion rule;
* a pattern is a wildcard (``*`` any run of characters, ``?`` one character, ``[a-z]`` / ``[!a-z]`` classes,
  ``\\`` escapes one non-alphanumeric character), a ``"double"`` or ```backquoted``` literal name (doubled
  quote = one quote), or a ``/regular expression/`` matched anywhere in the name;
* blank lines and lines starting with ``#`` are ignored; ``@file`` imports are refused (no file access here);
* the **last** rule that matches a table decides; a table no rule matches is filtered out, so ``!db.t`` alone
  filters out everything;
* an empty rule list means ``*.*`` (TiCDC's default);
* matching is case-insensitive unless the changefeed sets ``case-sensitive = true``.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sparkcdc.errors import ConfigError
from sparkcdc.filter.system_schemas import is_system_schema

ERR_FILTER_RULE_INVALID = "CDC:ErrFilterRuleInvalid"

_REGEX_PATTERN = re.compile(r"/(?:\\.|[^/])+/")
_DOUBLE_QUOTED = re.compile(r'"(?:""|[^"])+"')
_BACKQUOTED = re.compile(r"`(?:``|[^`])+`")
_CHAR_CLASS = re.compile(r"\[!?(?:\\[^0-9a-zA-Z]|[^\\\]])+\]")


@dataclass(frozen=True)
class _Matcher:
    """One schema or table pattern: a literal name, ``*`` (everything) or a compiled regular expression."""

    literal: str | None = None
    regex: re.Pattern[str] | None = None

    @property
    def matches_all(self) -> bool:
        return self.literal is None and self.regex is None

    def match(self, name: str) -> bool:
        if self.literal is not None:
            return name == self.literal
        if self.regex is not None:
            return self.regex.search(name) is not None
        return True

    def lowered(self) -> _Matcher:
        if self.literal is not None:
            return _Matcher(literal=self.literal.lower())
        if self.regex is not None:
            return _Matcher(regex=_compile(self.regex.pattern, re.IGNORECASE, self.regex.pattern))
        return self


@dataclass(frozen=True)
class TableRule:
    schema: _Matcher
    table: _Matcher
    positive: bool
    text: str


def _compile(pattern: str, flags: int, shown: str) -> re.Pattern[str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Python's "possible nested set" FutureWarnings are not errors here
            return re.compile(pattern, flags)
    except re.error as e:
        raise ConfigError(f"invalid pattern {shown!r}: {e}", code=ERR_FILTER_RULE_INVALID) from e


class _RuleParser:
    def __init__(self, rule: str) -> None:
        self.rule = rule

    def fail(self, reason: str) -> ConfigError:
        return ConfigError(f"invalid filter rule {self.rule!r}: {reason}", code=ERR_FILTER_RULE_INVALID)

    def parse(self) -> TableRule | None:
        line = self.rule.strip(" \t")
        if not line or line.startswith("#"):
            return None
        positive = True
        if line[0] == "!":
            positive = False
            line = line[1:]
        elif line[0] == "@":
            raise self.fail("importing filter files with '@' is not supported; list the rules instead")
        schema, rest = self.pattern(line)
        if not rest:
            raise self.fail("wrong table pattern (expected <schema>.<table>, for example db.*)")
        if rest[0] != ".":
            raise self.fail("syntax error: missing '.' between schema and table patterns")
        table, rest = self.pattern(rest[1:])
        if rest:
            raise self.fail("syntax error: stray characters after table pattern")
        return TableRule(schema, table, positive, self.rule)

    def pattern(self, line: str) -> tuple[_Matcher, str]:
        if not line:
            raise self.fail("syntax error: missing pattern")
        head = line[0]
        if head == "/":
            m = _REGEX_PATTERN.match(line)
            if m is None:
                raise self.fail("syntax error: incomplete regexp")
            body = m.group()[1:-1]
            return _Matcher(regex=_compile(body, 0, body)), line[m.end() :]
        if head in '"`':
            m = (_DOUBLE_QUOTED if head == '"' else _BACKQUOTED).match(line)
            if m is None:
                raise self.fail("syntax error: incomplete quoted identifier")
            name = m.group()[1:-1].replace(head * 2, head)
            return _Matcher(literal=name), line[m.end() :]
        return self.wildcard(line)

    def wildcard(self, line: str) -> tuple[_Matcher, str]:
        literal: list[str] = []
        regex: list[str] = []
        is_literal = True
        i = 0
        while i < len(line):
            c = line[i]
            if c == "\\":
                if i == len(line) - 1:
                    raise self.fail("syntax error: cannot place \\ at end of line")
                esc = line[i + 1]
                if esc.isascii() and esc.isalnum():
                    raise self.fail(f"cannot escape a letter or number (\\{esc}), it is reserved for future extension")
                literal.append(esc)
                regex.append(re.escape(esc))
                i += 2
            elif c == ".":
                break  # the schema/table separator
            elif c == "*":
                is_literal = False
                regex.append(".*")
                i += 1
            elif c == "?":
                is_literal = False
                regex.append(".")
                i += 1
            elif c == "[":
                is_literal = False
                m = _CHAR_CLASS.match(line, i)
                if m is None:
                    raise self.fail("syntax error: failed to parse character class")
                regex.append(_char_class(m.group()))
                i = m.end()
            elif c in "$_" or (c.isascii() and c.isalnum()) or not c.isascii():
                literal.append(c)
                regex.append(re.escape(c))
                i += 1
            else:
                raise self.fail(f"unexpected special character {c!r}")
        rest = line[i:]
        if is_literal:
            return _Matcher(literal="".join(literal)), rest
        body = "".join(regex)
        if body == ".*":
            return _Matcher(), rest
        # \Z, not $: Python's $ also matches before a trailing newline, Go's does not.
        return _Matcher(regex=_compile(f"(?s)^(?:{body})\\Z", 0, line[:i])), rest


def _char_class(text: str) -> str:
    """Translate a glob class (``[a-z]``, ``[!0-9]``, ``[^x]`` = literal ``^``) into a Python class."""
    inner = text[1:-1]
    out = ["["]
    if inner.startswith("!"):
        out.append("^")
        inner = inner[1:]
    elif inner.startswith("^"):
        out.append("\\^")
        inner = inner[1:]
    i = 0
    while i < len(inner):
        c = inner[i]
        if c == "\\":
            out.append("\\" + inner[i + 1])
            i += 2
            continue
        if c == "-" and 0 < i < len(inner) - 1 and inner[i - 1] != "-" and inner[i + 1] != "-":
            out.append("-")  # a range operator
        elif c.isascii() and not c.isalnum():
            out.append("\\" + c)  # [, &, ~, |, - at an edge: literal characters
        else:
            out.append(c)
        i += 1
    out.append("]")
    return "".join(out)


class TableFilter:
    """An ordered list of table rules. Build with :meth:`parse`; pure and picklable."""

    def __init__(self, rules: Sequence[TableRule], case_sensitive: bool, texts: Sequence[str] = ()) -> None:
        self.case_sensitive = case_sensitive
        self._texts = tuple(texts) if texts else tuple(r.text for r in rules)
        self._rules = tuple(rules)
        # evaluate from the last rule to the first: the last match decides
        lowered = [TableRule(r.schema.lowered(), r.table.lowered(), r.positive, r.text) for r in rules]
        self._reversed = tuple(reversed(self._rules if case_sensitive else lowered))

    @classmethod
    def parse(cls, rules: Iterable[str], *, case_sensitive: bool = False) -> TableFilter:
        """Parse rule strings; an empty list means ``*.*``. Raises ConfigError naming the bad rule."""
        texts = list(rules)
        if not texts:
            texts = ["*.*"]
        parsed: list[TableRule] = []
        for text in texts:
            if not isinstance(text, str):
                raise ConfigError(f"invalid filter rule {text!r}: must be a string", code=ERR_FILTER_RULE_INVALID)
            rule = _RuleParser(text).parse()
            if rule is not None:
                parsed.append(rule)
        return cls(parsed, case_sensitive, texts)

    @property
    def rules(self) -> tuple[str, ...]:
        """The rule strings as given (comments included; ``("*.*",)`` for an empty list)."""
        return self._texts

    def match_table(self, schema: str, table: str) -> bool:
        """True when the rules select ``schema.table`` (system schemas are not special here)."""
        if not self.case_sensitive:
            schema, table = schema.lower(), table.lower()
        for rule in self._reversed:
            if rule.schema.match(schema) and rule.table.match(table):
                return rule.positive
        return False

    def match_schema(self, schema: str) -> bool:
        """True when some table of ``schema`` may be selected (schema-level DDLs are then replicated)."""
        if not self.case_sensitive:
            schema = schema.lower()
        for rule in self._reversed:
            if rule.schema.match(schema) and (rule.positive or rule.table.matches_all):
                return rule.positive
        return False

    def should_ignore_table(self, schema: str, table: str) -> bool:
        """TiCDC's changefeed check: system schemas are always ignored, then the rules decide."""
        return is_system_schema(schema) or not self.match_table(schema, table)

    def should_ignore_schema(self, schema: str) -> bool:
        return is_system_schema(schema) or not self.match_schema(schema)

    def __repr__(self) -> str:
        return f"TableFilter(rules={list(self.rules)!r}, case_sensitive={self.case_sensitive})"

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (self.rules, self.case_sensitive))


def _rebuild(rules: tuple[str, ...], case_sensitive: bool) -> TableFilter:
    return TableFilter.parse(rules, case_sensitive=case_sensitive)
