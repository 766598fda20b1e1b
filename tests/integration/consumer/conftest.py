"""Helpers of the consumer integration tests (see servers.py); the servers are the session fixtures."""

from tests.integration.consumer.servers import run_sql, target_of

__all__ = ["run_sql", "target_of"]
