"""A failed query's error as the changefeed shows it: the code comes from the error's text or its class."""

from __future__ import annotations

from sparkcdc.errors import EncodeError, KafkaError, with_code
from sparkcdc.pipeline.runner import query_error


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


def test_a_registry_outage_is_retried_and_a_refused_schema_is_not() -> None:
    from sparkcdc.errors import RegistryError
    from sparkcdc.pipeline.runner import _PERMANENT

    down = query_error(traceback_of(with_code(RegistryError("cannot reach the schema registry"))))
    assert down.code == "CDC:ErrAvroSchemaAPIError" and down.code not in _PERMANENT
    refused = RegistryError("incompatible with the subject's earlier versions", code="CDC:ErrAvroEncodeFailed",
                            retryable=False)  # fmt: skip
    err = query_error(traceback_of(with_code(refused)))
    assert err.code == "CDC:ErrAvroEncodeFailed" and err.code in _PERMANENT
