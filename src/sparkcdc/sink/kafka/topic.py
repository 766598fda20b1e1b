"""Kafka topic names: TiCDC's ``[[sink.dispatchers]] topic`` expressions and Kafka's topic-name rules.

A dispatcher's ``topic`` is one of three things (TiCDC's ``topic.GetTopicGenerator``):

* empty: the default topic, the sink URI's path;
* a hard-coded name (only ``[A-Za-z0-9._-]``): every matched table goes to that one topic;
* an expression ``[prefix]{schema}[middle{table}][suffix]`` whose fixed parts are ``[A-Za-z0-9._-]*``.
  ``{schema}`` is optional, but when both appear ``{schema}`` comes first; anything else is refused with
  ``CDC:ErrKafkaTopicExprInvalid``.

Substitution replaces every character of the schema or table name that Kafka forbids with ``_`` (one per
character: ``你好`` becomes ``__``), then truncates to Kafka's 249 bytes and turns ``.``/``..`` into
``_``/``__``, so a substituted name is always legal. Hard-coded names and the default topic are checked
here against Kafka's rules too (TiCDC leaves that to the broker, which refuses them at the first produce).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from sparkcdc.errors import ConfigError

ERR_TOPIC_EXPR = "CDC:ErrKafkaTopicExprInvalid"
ERR_KAFKA_CONFIG = "CDC:ErrKafkaInvalidConfig"

# Kafka's limit (org.apache.kafka.common.internals.Topic.MAX_NAME_LENGTH).
MAX_TOPIC_LENGTH: Final = 249

# Go's regexp `$` is end of text; fullmatch gives the same anchoring in Python.
_HARD_CODED = re.compile(r"[A-Za-z0-9._\-]+")
_EXPRESSION = re.compile(r"[A-Za-z0-9._\-]*(\{schema\})?([A-Za-z0-9._\-]*\{table\})?[A-Za-z0-9._\-]*")
_FORBIDDEN = re.compile(r"[^a-zA-Z0-9._\-]")
_AVRO_EXPRESSION = re.compile(r"[A-Za-z0-9._\-]*\{schema\}[A-Za-z0-9._\-]*\{table\}[A-Za-z0-9._\-]*")


def is_hard_coded(rule: str) -> bool:
    """True when ``rule`` is a plain topic name (TiCDC's ``IsHardCode``)."""
    return _HARD_CODED.fullmatch(rule) is not None


def check_topic_name(name: str, what: str) -> str:
    """Return ``name`` if Kafka accepts it as a topic name, else raise ConfigError naming ``what``.

    Kafka allows 1-249 characters of ``[a-zA-Z0-9._-]``, but not ``.`` or ``..``.
    """
    if not name:
        raise ConfigError(f"{what} is empty; give a topic name such as cdc-events", code=ERR_KAFKA_CONFIG)
    bad = _FORBIDDEN.search(name)
    if bad is not None:
        raise ConfigError(
            f"{what} {name!r} contains {bad.group()!r}; Kafka topic names use only letters, digits, '.', '_' and '-'",
            code=ERR_KAFKA_CONFIG,
        )
    if len(name) > MAX_TOPIC_LENGTH:
        raise ConfigError(
            f"{what} is {len(name)} characters long; Kafka allows at most {MAX_TOPIC_LENGTH}", code=ERR_KAFKA_CONFIG
        )
    if name in (".", ".."):
        raise ConfigError(f"{what} {name!r} is not a legal Kafka topic name", code=ERR_KAFKA_CONFIG)
    return name


def validate_expression(expression: str) -> None:
    """Raise ConfigError (``CDC:ErrKafkaTopicExprInvalid``) unless ``expression`` is a valid topic expression."""
    if _EXPRESSION.fullmatch(expression) is None:
        raise ConfigError(
            f"invalid topic expression {expression!r}: use [prefix]{{schema}}[middle][{{table}}][suffix] where the "
            "fixed parts are letters, digits, '.', '_' or '-' and {schema} comes before {table}",
            code=ERR_TOPIC_EXPR,
        )


def validate_avro_expression(rule: str) -> None:
    """TiCDC's ``ValidateForAvro``: with protocol avro a topic expression must hold both ``{schema}`` and
    ``{table}`` (one table per topic, as the registry's subjects are per topic). An empty rule or a hard-coded name
    is not an expression and passes, as in TiCDC. Raises ConfigError (``CDC:ErrKafkaTopicExprInvalid``)."""
    if rule == "" or is_hard_coded(rule) or _AVRO_EXPRESSION.fullmatch(rule) is not None:
        return
    raise ConfigError(
        f"invalid topic expression {rule!r}: topic rule for Avro must contain {{schema}} and {{table}}, e.g. "
        "topic = \"tidb_{schema}_{table}\"",
        code=ERR_TOPIC_EXPR,
    )


def substitute(expression: str, schema: str, table: str) -> str:
    """The topic an expression names for ``schema.table`` (TiCDC's ``Expression.Substitute``)."""
    name = expression.replace("{schema}", _FORBIDDEN.sub("_", schema)).replace("{table}", _FORBIDDEN.sub("_", table))
    if len(name) > MAX_TOPIC_LENGTH:
        return name[:MAX_TOPIC_LENGTH]
    if name == ".":
        return "_"
    if name == "..":
        return "__"
    return name


@dataclass(frozen=True, slots=True)
class TopicRule:
    """One dispatcher's topic: a fixed name (``static``) or an expression substituted per table."""

    text: str
    static: bool

    @classmethod
    def parse(cls, rule: str, default_topic: str) -> TopicRule:
        """Build from a dispatcher's ``topic`` value; raises ConfigError for an invalid expression or name."""
        if rule == "":
            return cls(default_topic, True)
        if is_hard_coded(rule):
            return cls(check_topic_name(rule, "dispatcher topic"), True)
        validate_expression(rule)
        return cls(rule, False)

    def topic(self, schema: str, table: str) -> str:
        return self.text if self.static else substitute(self.text, schema, table)
