"""A failed query's error as the changefeed shows it: the code comes from the error's text or its class."""

from __future__ import annotations

from sparkcdc.errors import (
    ConfigError,
    CorruptDataError,
    EncodeError,
    KafkaError,
    SparkcdcError,
    StorageError,
    UpstreamError,
    with_code,
)
from sparkcdc.filter.expr_errors import ExprEvalError
from sparkcdc.pipeline.runner import query_error, query_failure


def traceback_of(e: Exception) -> str:
    return f"Traceback ...\n  File \"x.py\", line 1\n{type(e).__module__}.{type(e).__name__}: {e}\n\tat org.apache..."


def test_the_class_gives_the_code() -> None:
    err = query_error(traceback_of(KafkaError("3 message(s) not acknowledged")))
    assert (err.code, err.message) == ("CDC:ErrKafkaAsyncSendMessage", "3 message(s) not acknowledged")


def test_a_code_other_than_the_class_default_travels_in_the_text() -> None:
    coded = with_code(EncodeError("message too large", code="CDC:ErrMessageTooLarge"))
    assert str(coded) == "[CDC:ErrMessageTooLarge] message too large"
    assert with_code(coded) is coded  # never twice
    err = query_error(traceback_of(coded))
    assert (err.code, err.message) == ("CDC:ErrMessageTooLarge", "message too large")
    plain = EncodeError("bad value")
    assert with_code(plain) is plain


def test_anything_else_is_internal_or_unknown() -> None:
    assert query_error("sparkcdc.errors.NoSuchError: boom").code == "CDC:ErrInternal"
    assert query_error("java.lang.OutOfMemoryError: heap").code == "CDC:ErrProcessorUnknown"


def test_a_registry_outage_and_a_refused_schema_are_both_retried_by_the_changefeed() -> None:
    """As TiCDC, which fails no changefeed for ``CDC:ErrAvroSchemaAPIError``: a refusal crosses Spark as itself (no
    retry inside the call, no failed changefeed) with the text as it was."""
    from sparkcdc.errors import RegistryError, RegistryRefusal

    down = query_failure(traceback_of(with_code(RegistryError("cannot reach the schema registry"))))
    assert down.code == "CDC:ErrAvroSchemaAPIError" and not down.permanent
    err = query_failure(traceback_of(with_code(RegistryRefusal("incompatible with the subject's earlier versions"))))
    assert isinstance(err, RegistryRefusal) and err.code == "CDC:ErrAvroSchemaAPIError"
    assert not err.permanent and not err.retryable
    assert err.message == "incompatible with the subject's earlier versions"


def test_whether_a_retry_can_help_crosses_spark_with_the_error() -> None:
    """The changefeed restarts its query after what is not permanent: the error's type says so, or the instance
    when it says otherwise (its text carries that, as it carries the code)."""
    dispatcher = ConfigError("bad dispatcher", code="CDC:ErrDispatcherFailed")
    assert query_failure(traceback_of(with_code(dispatcher))).permanent
    assert query_failure(traceback_of(with_code(CorruptDataError("cut frame")))).permanent
    assert not query_failure(traceback_of(with_code(StorageError("disk full")))).permanent
    flaky = with_code(UpstreamError("snapshot of db.t: cannot connect", retryable=True))
    assert str(flaky) == "[CDC:ErrUpstream transient] snapshot of db.t: cannot connect"
    back = query_failure(traceback_of(flaky))
    assert (back.code, back.message, back.permanent) == ("CDC:ErrUpstream", "snapshot of db.t: cannot connect", False)
    refused = query_failure(traceback_of(with_code(SparkcdcError("duplicate key", code="CDC:ErrMySQLQueryError",
                                                                 retryable=False))))  # fmt: skip
    assert refused.permanent and refused.code == "CDC:ErrMySQLQueryError"
    expr = query_failure(traceback_of(with_code(ExprEvalError("BIGINT value is out of range"))))
    assert type(expr) is ExprEvalError and expr.code == "CDC:ErrFailedToFilterDML" and not expr.permanent
    assert not query_failure("java.lang.OutOfMemoryError: heap").permanent  # a JVM failure: retried
