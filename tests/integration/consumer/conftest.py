"""Fixtures of the consumer integration tests (see servers.py)."""

from tests.integration.consumer.servers import downstream_server, run_sql, source, target, target_of

__all__ = ["downstream_server", "run_sql", "source", "target", "target_of"]
