"""The schema registry devtool against the real registry: confluent-kafka's own client, serializer and
deserializer work with it as with Confluent's (ids, versions, lookups, the compatibility rule and its 409), the
project's client maps its answers to the project's errors, a durable registry keeps subjects and ids across a
restart while a stopped one is a retryable error, and the command line prints the URL and stops by pid."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from sparkcdc.devtools.schema_registry import SchemaRegistry, registry_binary
from sparkcdc.errors import ConfigError, RegistryError
from sparkcdc.schema_registry.client import RegistryClient
from sparkcdc.schema_registry.url import RegistryURL

pytestmark = pytest.mark.integration


def record(name: str, *fields: tuple[str, object], nullable: str = "") -> str:
    """An Avro record; ``nullable`` names one more field, a union with null defaulting to null."""
    extra = [{"name": nullable, "type": ["null", "string"], "default": None}] if nullable else []
    return json.dumps({"type": "record", "name": name, "namespace": "default.devtool",
                       "fields": [{"name": n, "type": t} for n, t in fields] + extra})  # fmt: skip


DECIMAL = {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}


def test_confluent_client_serializer_and_compatibility(schema_registry: SchemaRegistry) -> None:
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.schema_registry.error import SchemaRegistryError
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient({"url": schema_registry.url})
    v1 = record("t", ("id", "long"), ("d", DECIMAL))
    first = client.register_schema("devtool_t-value", Schema(v1, "AVRO"))
    assert client.register_schema("devtool_t-value", Schema(v1, "AVRO")) == first  # the same schema, the same id
    assert json.loads(client.get_schema(first).schema_str) == json.loads(v1)
    assert client.lookup_schema("devtool_t-value", Schema(v1, "AVRO")).schema_id == first
    assert client.get_compatibility() == "BACKWARD"  # Confluent's default
    v2 = record("t", ("id", "long"), ("d", DECIMAL), nullable="c")
    assert client.register_schema("devtool_t-value", Schema(v2, "AVRO")) != first  # a new field with a default is fine
    assert client.get_versions("devtool_t-value") == [1, 2]
    breaking = record("t", ("id", "string"))
    assert not client.test_compatibility("devtool_t-value", Schema(breaking, "AVRO"))
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema("devtool_t-value", Schema(breaking, "AVRO"))
    assert refused.value.http_status_code == 409
    with pytest.raises(SchemaRegistryError) as missing:
        client.get_schema(987654)
    assert missing.value.http_status_code == 404

    ours = RegistryClient(RegistryURL.parse(schema_registry.url), retry_s=0)
    ours.check()
    assert ours.register("devtool_t-value", v1) == first
    with pytest.raises(RegistryError) as e:
        ours.register("devtool_t-value", breaking)
    assert e.value.code == "CDC:ErrAvroSchemaAPIError" and not e.value.retryable and not e.value.permanent
    assert "'devtool_t-value'" in e.value.message and "incompatible" in e.value.message

    ser = AvroSerializer(client, v1)
    ctx = SerializationContext("devtool_u", MessageField.VALUE)
    data = ser({"id": 7, "d": Decimal("-12.34")}, ctx)
    assert data[0] == 0 and int.from_bytes(data[1:5], "big") == first  # Confluent's envelope, the subject's id
    assert AvroDeserializer(client)(data, ctx) == {"id": 7, "d": Decimal("-12.34")}


def test_durable_registry_keeps_ids_across_a_restart_and_a_stopped_one_is_retryable(
    durable_schema_registry: SchemaRegistry,
) -> None:
    registry = durable_schema_registry
    ours = RegistryClient(RegistryURL.parse(registry.url), timeout_s=2, retry_s=0)
    ids = [ours.register(f"durable_{i}-value", record(f"t{i}", ("id", "long"))) for i in range(3)]
    registry.stop()
    with pytest.raises(RegistryError) as down:
        RegistryClient(RegistryURL.parse(registry.url), timeout_s=2, retry_s=0).register("x-value", record("x"))
    assert down.value.retryable and "check that the registry is running" in down.value.message
    registry.start()
    fresh = RegistryClient(RegistryURL.parse(registry.url), retry_s=0)  # no cached ids
    assert [fresh.register(f"durable_{i}-value", record(f"t{i}", ("id", "long"))) for i in range(3)] == ids
    assert json.loads(fresh.schema(ids[1]))["name"] == "t1"


def test_cli_prints_the_url_and_stops(tmp_path: Path) -> None:
    import httpx

    cli = [sys.executable, "-m", "sparkcdc.devtools.schema_registry"]
    started = subprocess.run([*cli, "start", "--dir", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert started.returncode == 0, started.stderr
    url = json.loads(started.stdout)["url"]
    try:
        assert url.startswith("http://127.0.0.1:")
        assert httpx.get(f"{url}/subjects", timeout=5).status_code == 200
        status = subprocess.run([*cli, "status", "--dir", str(tmp_path)], capture_output=True, text=True, timeout=30)
        assert status.returncode == 0 and json.loads(status.stdout)["url"] == url
    finally:
        assert subprocess.run([*cli, "stop", "--dir", str(tmp_path)], timeout=60).returncode == 0
    assert subprocess.run([*cli, "status", "--dir", str(tmp_path)], capture_output=True, timeout=30).returncode == 1


def test_a_registry_setup_has_not_built_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARKCDC_CACHE", str(tmp_path))
    with pytest.raises(ConfigError, match=r"is not in .*; run scripts/setup.sh"):
        registry_binary()
    cli = [sys.executable, "-m", "sparkcdc.devtools.schema_registry", "start", "--dir", str(tmp_path / "r")]
    done = subprocess.run(cli, capture_output=True, text=True, timeout=60)  # SPARKCDC_CACHE is inherited
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "run scripts/setup.sh" in done.stderr
