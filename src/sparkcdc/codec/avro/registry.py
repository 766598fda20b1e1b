"""What the avro codec needs from a schema registry: register a subject's schema, fetch a schema by id.

The codec stays pure: callers pass an object with these two methods (``sparkcdc.schema_registry.RegistryClient``
talks to a Confluent-compatible registry over HTTP). Implementations raise the project's errors: a registry that
cannot be reached (or answers 5xx) is retryable; a schema it refuses (incompatible, invalid) is not retried by the
call itself, but does not fail a changefeed either (TiCDC retries it).
"""

from __future__ import annotations

from typing import Protocol


class SchemaRegistry(Protocol):
    def register(self, subject: str, schema: str) -> int:
        """Register ``schema`` (Avro JSON text) under ``subject``; the schema's id (the same id again for a schema
        the subject already has)."""
        ...

    def schema(self, schema_id: int) -> str:
        """The Avro JSON text of schema ``schema_id``."""
        ...
