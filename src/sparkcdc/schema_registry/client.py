"""A Confluent-compatible schema registry over HTTP (confluent-kafka's ``SchemaRegistryClient``), with the project's
errors: a registry that does not answer, or answers 5xx, is a retryable ``RegistryError`` (the changefeed shows a
warning and tries again, as TiCDC's ``httpRetry`` keeps trying); a schema it refuses (409 incompatible, 422
invalid) is one non-retryable error naming the subject and what to do; 401/403 name the credentials.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from sparkcdc.errors import SparkcdcError
from sparkcdc.schema_registry.url import ERR_REGISTRY, RegistryURL

log = logging.getLogger(__name__)

ERR_INCOMPATIBLE: Final = "CDC:ErrAvroSchemaAPIError"
_TIMEOUT_S: Final = 10


class RegistryError(SparkcdcError):
    """The schema registry refused a request or could not be reached."""

    default_code = ERR_REGISTRY
    default_retryable = True


class RegistryClient:
    """Implements ``codec.avro.registry.SchemaRegistry``. The HTTP client is made on first use (no connection is
    opened before), so building one costs nothing; ids and schemas are cached by confluent-kafka's client."""

    def __init__(self, url: RegistryURL, timeout_s: float = _TIMEOUT_S) -> None:
        self.url = url
        self._timeout = timeout_s
        self._client: Any = None

    def _http(self) -> Any:
        if self._client is None:
            from confluent_kafka.schema_registry import SchemaRegistryClient

            # one try per call: the changefeed's own retry (warning, backoff) decides when to try again
            self._client = SchemaRegistryClient({**self.url.client_config(), "timeout": self._timeout,
                                                 "max.retries": 0})  # fmt: skip
        return self._client

    def register(self, subject: str, schema: str) -> int:
        from confluent_kafka.schema_registry import Schema

        try:
            return int(self._http().register_schema(subject, Schema(schema, "AVRO")))
        except Exception as e:  # the client raises its own errors, httpx's and OSErrors
            raise self._error(e, f"cannot register the schema of subject {subject!r}") from None

    def schema(self, schema_id: int) -> str:
        try:
            return str(self._http().get_schema(schema_id).schema_str)
        except Exception as e:
            raise self._error(e, f"cannot read schema {schema_id}") from None

    def check(self) -> None:
        """The registry answers (TiCDC tests the connection when the encoder is built). Raises RegistryError."""
        try:
            self._http().get_subjects()
        except Exception as e:
            raise self._error(e, "cannot reach the schema registry") from None

    def _error(self, e: Exception, what: str) -> RegistryError:
        status = getattr(e, "http_status_code", None)
        text = getattr(e, "error_message", None) or str(e) or type(e).__name__
        where = f"{what} at {self.url.masked()}"
        if status == 409:
            return RegistryError(
                f"{where}: the registry refuses it as incompatible with the subject's earlier versions ({text}); "
                "set the subject's compatibility to NONE (PUT /config/<subject>) or use a new topic",
                code=ERR_INCOMPATIBLE,
                retryable=False,
            )
        if status in (401, 403):
            return RegistryError(f"{where}: HTTP {status} ({text}); check the user and password in --schema-registry",
                                 retryable=False)  # fmt: skip
        if isinstance(status, int) and 400 <= status < 500:
            return RegistryError(f"{where}: HTTP {status} ({text})", retryable=False)
        if isinstance(status, int):
            return RegistryError(f"{where}: HTTP {status} ({text}); retrying")
        return RegistryError(f"{where}: {text}; check that the registry is running")
