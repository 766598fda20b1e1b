"""One error hierarchy for the whole project.

Errors cross process boundaries (Spark executors send them back to the driver, the server returns them
over HTTP), so every error keeps only primitives and pickles through ``__reduce__``. ``code`` follows
TiCDC's ``CDC:Err…`` names where TiCDC has one, so users can search for them.
"""

from __future__ import annotations

from typing import Any


class SparkcdcError(Exception):
    """Base of every error raised on purpose by sparkcdc.

    ``retryable`` tells callers (the changefeed state machine, storage retries) whether trying the same
    operation again may succeed.
    """

    default_code = "CDC:ErrInternal"
    default_retryable = False

    def __init__(self, message: str, *, code: str | None = None, retryable: bool | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code if code is not None else self.default_code
        self.retryable = self.default_retryable if retryable is None else retryable

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.message, self.code, self.retryable))

    def __str__(self) -> str:
        return self.message


def _rebuild(cls: type[SparkcdcError], message: str, code: str, retryable: bool) -> SparkcdcError:
    return cls(message, code=code, retryable=retryable)


class ConfigError(SparkcdcError):
    """A user-supplied URI, flag or configuration value is invalid."""

    default_code = "CDC:ErrInvalidConfig"


class CorruptDataError(SparkcdcError):
    """Input read from storage, Kafka or the binlog is malformed."""

    default_code = "CDC:ErrCorruptData"


class DecodeError(CorruptDataError):
    """A codec could not decode a message; the message names the input and the field."""

    default_code = "CDC:ErrDecodeFailed"


class EncodeError(SparkcdcError):
    """A value cannot be represented in the chosen protocol (for example an ENUM index out of range)."""

    default_code = "CDC:ErrEncodeFailed"


class StorageError(SparkcdcError):
    """An external storage operation failed."""

    default_code = "CDC:ErrExternalStorageAPI"


class UpstreamError(SparkcdcError):
    """The upstream database or its binlog cannot be read."""

    default_code = "CDC:ErrUpstream"


class KafkaError(SparkcdcError):
    """The Kafka cluster refused or did not acknowledge what the sink sent; trying again may succeed."""

    default_code = "CDC:ErrKafkaAsyncSendMessage"
    default_retryable = True


class RegistryError(SparkcdcError):
    """A schema registry refused a request or did not answer (retryable unless it refused)."""

    default_code = "CDC:ErrAvroSchemaAPIError"
    default_retryable = True


def with_code(error: SparkcdcError) -> SparkcdcError:
    """``error`` with its code in front of its message (``[CDC:ErrMessageTooLarge] ...``) when the code is not its
    class's own: an error that crosses Spark arrives as its class name and text only, and the text is where the
    changefeed's error code is read back from."""
    if error.code == type(error).default_code or error.message.startswith("["):
        return error
    return type(error)(f"[{error.code}] {error.message}", code=error.code, retryable=error.retryable)
