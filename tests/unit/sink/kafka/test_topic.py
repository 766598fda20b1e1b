"""Topic expressions: the cases of TiCDC's ``topic/expression_test.go`` (tiflow c7b2588e) and Kafka's name rules."""

from __future__ import annotations

import pytest

from sparkcdc.errors import ConfigError
from sparkcdc.sink.kafka.topic import (
    MAX_TOPIC_LENGTH,
    TopicRule,
    check_topic_name,
    is_hard_coded,
    substitute,
    validate_expression,
)

# (expression, schema, table, expected topic) from TestSubstituteTopicExpression's valid cases.
VALID = [
    ("{schema}", "abc", "", "abc"),
    ("abc{schema}", "def", "", "abcdef"),
    ("{schema}def", "hello", "", "hellodef"),
    ("abc{schema}def", "hello", "", "abchellodef"),
    ("abc{schema}", "DEF", "", "abcDEF"),
    ("abc._-def{schema}abc", "HELLO", "", "abc._-defHELLOabc"),
    ("abc_def{schema}", "!@#$%^&*()_+.{}", "", "abc_def____________.__"),
    ("abc{schema}def", "你好", "", "abc__def"),
    ("{schema}_{table}", "hello", "world", "hello_world"),
    ("{schema}_{table}", "HELLO", "WORLD", "HELLO_WORLD"),
    ("{schema}_{table}", "hello", "!@#$%^&*", "hello_________"),
    ("{schema}_{table}", "()_+.{}", "world", "____.___world"),
    ("ab.-c_{schema}_{table}_de.-f", "hello", "WORLD", "ab.-c_hello_WORLD_de.-f"),
    ("abc_{schema}de._-{table}_fhi", "hello", "world", "abc_hellode._-world_fhi"),
    ("{schema}_{table}", "你好", "世界", "_____"),
    ("{schema}", ".", "", "_"),
    ("{schema}", "..", "", "__"),
    # TestSchemaOptional / TestTableOptional
    ("prefix_{table}", "test", "table1", "prefix_table1"),
    ("prefix_{schema}", "test", "abc", "prefix_test"),
]

INVALID = [
    "{{{{schema}",
    "你好{schema}",
    "{schema}}}}}",
    "{xxx}",
    "abc{sch}",
    "{sch}_{tab}",
    "{schema}!@#$%^&*()+{}你好{table}",
    "%invalid{schema}",
    "{table}_{schema}",
    "{schema}{schema}",
]


@pytest.mark.parametrize(("expression", "schema", "table", "expected"), VALID)
def test_ticdc_substitution_vectors(expression: str, schema: str, table: str, expected: str) -> None:
    validate_expression(expression)
    assert substitute(expression, schema, table) == expected


@pytest.mark.parametrize("expression", INVALID)
def test_ticdc_invalid_expressions(expression: str) -> None:
    with pytest.raises(ConfigError, match="invalid topic expression") as err:
        TopicRule.parse(expression, "default")
    assert err.value.code == "CDC:ErrKafkaTopicExprInvalid"
    assert "\n" not in str(err.value)


def test_long_names_are_truncated_to_kafkas_limit() -> None:
    topic = substitute("{schema}_{table}", "s" * 200, "t" * 200)
    assert len(topic) == MAX_TOPIC_LENGTH
    assert topic == ("s" * 200 + "_" + "t" * 200)[:MAX_TOPIC_LENGTH]


def test_an_expression_does_not_end_before_a_newline() -> None:
    # Go's `$` is end of text; Python's `$` would also match before a trailing newline.
    assert not is_hard_coded("topic\n")
    with pytest.raises(ConfigError):
        validate_expression("{schema}\n")


def test_rules() -> None:
    assert TopicRule.parse("", "dflt").topic("db", "t") == "dflt"
    assert TopicRule.parse("hard_code_topic", "dflt").topic("db", "t") == "hard_code_topic"
    rule = TopicRule.parse("{schema}_{table}", "dflt")
    assert not rule.static
    assert rule.topic("db", "t") == "db_t"


@pytest.mark.parametrize(("name", "message"), [("", "empty"), (".", "not a legal"), ("..", "not a legal"),
                                               ("a" * 250, "at most 249"), ("a/b", "contains '/'")])  # fmt: skip
def test_kafka_topic_names(name: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        check_topic_name(name, "topic")
    assert check_topic_name("a" * 249, "topic") == "a" * 249


def test_hard_coded_topic_is_checked_against_kafkas_rules() -> None:
    with pytest.raises(ConfigError, match="at most 249"):
        TopicRule.parse("x" * 300, "dflt")
