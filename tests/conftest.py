"""Shared pytest configuration: real-server fixtures live in tests/fixtures/ as plugins."""

pytest_plugins = [
    "tests.fixtures.spark",
    "tests.fixtures.mariadb",
    "tests.fixtures.object_stores",
    "tests.fixtures.apache_kafka",
    "tests.fixtures.schema_registry",
    "tests.fixtures.etcd",
    "tests.fixtures.tls",
    "tests.fixtures.cdc_server",
    "tests.fixtures.scheduling",
]
