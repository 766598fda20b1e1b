"""A Confluent-compatible schema registry over HTTP (confluent-kafka's ``SchemaRegistryClient``), with the project's
errors, all ``CDC:ErrAvroSchemaAPIError`` as TiCDC's. A registry that does not answer, or answers 5xx, is tried again
with backoff for ``RETRY_S`` seconds (TiCDC's ``httpRetry`` keeps trying), then it is a retryable ``RegistryError``
(the changefeed shows a warning and its query starts again). A request the registry refuses (409 incompatible, 422
invalid, 401/403) is a ``RegistryRefusal``: not tried again here (as ``httpRetry``: the same request gets the same
answer), but not permanent either: TiCDC does not count ``ErrAvroSchemaAPIError`` among the errors that fail a
changefeed, so the changefeed shows a warning and retries, which succeeds once the subject's compatibility or the
credentials are fixed. The error names the subject and what to do.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Final, TypeVar

from sparkcdc.errors import RegistryError, RegistryRefusal
from sparkcdc.schema_registry.url import RegistryURL

log = logging.getLogger(__name__)

_TIMEOUT_S: Final = 10
RETRY_S: Final = 10.0
T = TypeVar("T")


class RegistryClient:
    """Implements ``codec.avro.registry.SchemaRegistry``. The HTTP client is made on first use (no connection is
    opened before), so building one costs nothing; ids and schemas are cached by confluent-kafka's client."""

    def __init__(self, url: RegistryURL, timeout_s: float = _TIMEOUT_S, retry_s: float = RETRY_S) -> None:
        self.url = url
        self.retry_s = retry_s
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

        return self._retry(lambda: int(self._http().register_schema(subject, Schema(schema, "AVRO"))),
                           f"cannot register the schema of subject {subject!r}")  # fmt: skip

    def schema(self, schema_id: int) -> str:
        return self._retry(
            lambda: str(self._http().get_schema(schema_id).schema_str), f"cannot read schema {schema_id}"
        )

    def _retry(self, call: Callable[[], T], what: str) -> T:
        deadline = time.monotonic() + self.retry_s
        wait = 0.25
        while True:
            try:
                return call()
            except Exception as e:  # the client raises its own errors, httpx's and OSErrors
                error = self._error(e, what)
            if not error.retryable or time.monotonic() + wait > deadline:
                raise error
            log.warning("%s; trying again in %.1fs", error.message, wait)
            time.sleep(wait)
            wait = min(wait * 2, 4.0)

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
            return RegistryRefusal(
                f"{where}: the registry refuses it as incompatible with the subject's earlier versions ({text}); "
                "set the subject's compatibility to NONE (PUT /config/<subject>) or use a new topic"
            )
        if status in (401, 403):
            return RegistryRefusal(f"{where}: HTTP {status} ({text}); check the user and password in --schema-registry")
        if isinstance(status, int) and 400 <= status < 500:
            return RegistryRefusal(f"{where}: HTTP {status} ({text})")
        if isinstance(status, int):
            return RegistryError(f"{where}: HTTP {status} ({text}); retrying")
        return RegistryError(f"{where}: {text}; check that the registry is running")


_clients: dict[str, RegistryClient] = {}
_lock = threading.Lock()


def registry_client(url: str) -> RegistryClient:
    """This process's client of the registry at ``url`` (its caches of ids and schemas are shared by every task).
    Raises ConfigError for a malformed URL."""
    with _lock:
        client = _clients.get(url)
        if client is None:
            client = _clients[url] = RegistryClient(RegistryURL.parse(url))
        return client
