"""One error hierarchy for the whole project.

Errors cross process boundaries (Spark executors send them back to the driver, the server returns them
over HTTP), so every error keeps only primitives and pickles through ``__reduce__``. ``code`` follows
TiCDC's ``CDC:Err…`` names where TiCDC has one, so users can search for them.
"""

from __future__ import annotations

import importlib
import re
from typing import Any, ClassVar


class SparkcdcError(Exception):
    """Base of every error raised on purpose by sparkcdc.

    ``retry`` says whether trying the same operation again may succeed: True (a retry may succeed), False (it
    cannot: a changefeed fails at once, as with TiCDC's unretryable errors) or None (unknown). ``retryable`` is
    ``retry is True``: operations' own retry loops (storage, the MySQL sink, the schema registry) retry only what is
    known to be worth it, while a changefeed restarts its query after anything not ``permanent``.
    """

    default_code = "CDC:ErrInternal"
    default_retryable: ClassVar[bool | None] = None

    def __init__(self, message: str, *, code: str | None = None, retryable: bool | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code if code is not None else self.default_code
        self.retry: bool | None = self.default_retryable if retryable is None else retryable

    @property
    def retryable(self) -> bool:
        return self.retry is True

    @property
    def permanent(self) -> bool:
        """No retry can succeed: the changefeed fails with this error."""
        return self.retry is False

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.message, self.code, self.retry))

    def __str__(self) -> str:
        return self.message


def _rebuild(cls: type[SparkcdcError], message: str, code: str, retry: bool | None) -> SparkcdcError:
    return cls(message, code=code, retryable=retry)


class ConfigError(SparkcdcError):
    """A user-supplied URI, flag or configuration value is invalid."""

    default_code = "CDC:ErrInvalidConfig"
    default_retryable = False


class CorruptDataError(SparkcdcError):
    """Input read from storage, Kafka or the binlog is malformed."""

    default_code = "CDC:ErrCorruptData"
    default_retryable = False


class DecodeError(CorruptDataError):
    """A codec could not decode a message; the message names the input and the field."""

    default_code = "CDC:ErrDecodeFailed"


class EncodeError(SparkcdcError):
    """A value cannot be represented in the chosen protocol (for example an ENUM index out of range)."""

    default_code = "CDC:ErrEncodeFailed"
    default_retryable = False


class StorageError(SparkcdcError):
    """An external storage operation failed."""

    default_code = "CDC:ErrExternalStorageAPI"


class UpstreamError(SparkcdcError):
    """The upstream database or its binlog cannot be read."""

    default_code = "CDC:ErrUpstream"
    default_retryable = False


class KafkaError(SparkcdcError):
    """The Kafka cluster refused or did not acknowledge what the sink sent; trying again may succeed."""

    default_code = "CDC:ErrKafkaAsyncSendMessage"
    default_retryable = True


class RegistryError(SparkcdcError):
    """A schema registry did not answer, or answered 5xx: trying again may succeed."""

    default_code = "CDC:ErrAvroSchemaAPIError"
    default_retryable: ClassVar[bool | None] = True


class RegistryRefusal(RegistryError):
    """A schema registry refused a request (HTTP 4xx: an incompatible or invalid schema, wrong credentials). The same
    request gets the same answer, so the call is not tried again at once; but the changefeed is not failed either,
    as TiCDC fails none for ``ErrAvroSchemaAPIError``: it retries its query, which succeeds once the subject's
    compatibility or the credentials are fixed."""

    default_retryable = None


def with_code(error: SparkcdcError) -> SparkcdcError:
    """``error`` as it must cross Spark: an error raised on an executor (or in the commit's worker) reaches the driver
    as its class name and text only, so what its class does not say goes in front of its message, the code when it
    is not the class's own (``[CDC:ErrMessageTooLarge] ...``) and whether a retry can help when the instance says
    otherwise than its class (``[CDC:ErrUpstream transient] ...``, ``[CDC:ErrAvroEncodeFailed permanent] ...``).
    :func:`from_traceback` reads it back."""
    cls = type(error)
    stamp = error.code if error.code != cls.default_code else ""
    if error.permanent != (cls.default_retryable is False):
        stamp = f"{error.code} {_PERMANENT if error.permanent else _TRANSIENT}"
    if not stamp or error.message.startswith("["):
        return error
    return cls(f"[{stamp}] {error.message}", code=error.code, retryable=error.retry)


_PERMANENT = "permanent"
_TRANSIENT = "transient"
# The last line of a Python traceback Spark passes on: "sparkcdc.<module>.<Class>: [<code> <kind>] <message>"
_TRACEBACK = re.compile(rf"(sparkcdc(?:\.\w+)*)\.(\w+): (?:\[(CDC:\w+)(?: ({_PERMANENT}|{_TRANSIENT}))?\] )?(.+)")


def from_traceback(text: str) -> SparkcdcError | None:
    """The last sparkcdc error a Python traceback (the text of a failed Spark job) names, rebuilt with its class,
    code, message and whether a retry can help (what :func:`with_code` put in its text); None when it names none.
    A class that cannot be found is a ``SparkcdcError`` with code ``CDC:ErrInternal``."""
    found = _TRACEBACK.findall(text)
    if not found:
        return None
    module, name, code, kind, message = found[-1]
    cls: Any = None
    try:
        cls = getattr(importlib.import_module(module), name, None)
    except ImportError:
        pass
    if not (isinstance(cls, type) and issubclass(cls, SparkcdcError)):
        return SparkcdcError(message.strip())
    retry = {_PERMANENT: False, _TRANSIENT: True}.get(kind)
    error: SparkcdcError = cls(message.strip(), code=code or None, retryable=retry)
    return error
