"""``protocol=avro`` for the Kafka consumers (``cdc kafka-consumer``, ``format("ticdc-kafka")``): where the schema
registry comes from, what an applied topic must carry, and the decoder.

The registry's URL comes from the consumer's own flag (``--schema-registry-uri``, TiCDC's consumer flag), the URI's
``schema-registry`` or ``[sink] schema-registry``, in that order. Schemas are fetched by the id in each message, once
per id (a registry that does not answer is retried: a retryable ``RegistryError``).

``cdc kafka-consumer`` applies rows in commit-ts order up to the watermarks and each DDL at its place, so the topic
must carry commit-ts, watermarks and DDL messages: the changefeed must set ``enable-tidb-extension=true`` and
``avro-enable-watermark=true`` (TiCDC's own avro consumer test sets both). Without them an avro topic has none of
the three, and nothing would tell the consumer when a row may be applied or what its table looks like downstream.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sparkcdc.errors import ConfigError
from sparkcdc.schema_registry.url import ERR_REGISTRY, RegistryURL
from sparkcdc.sink.kafka.uri import KafkaURI

if TYPE_CHECKING:
    from sparkcdc.codec.avro.decoder import AvroDecoder
    from sparkcdc.sink.kafka.config import KafkaSinkConfig


def with_registry(uri: str, toml: Mapping[str, Any], registry: str, flag: str) -> Mapping[str, Any]:
    """``toml`` with ``[sink] schema-registry`` set to ``registry`` when one is given (checked first, errors naming
    ``flag``). Raises ConfigError: a malformed registry URL, or protocol=avro with no registry anywhere."""
    sink = toml.get("sink")
    sink = sink if isinstance(sink, Mapping) else {}
    if registry:
        RegistryURL.parse(registry, flag)
        return {**toml, "sink": {**sink, "schema-registry": registry}}
    parsed = KafkaURI.parse(uri)
    protocol = parsed.param("protocol") or sink.get("protocol")
    if protocol == "avro" and not parsed.param("schema-registry") and not sink.get("schema-registry"):
        raise ConfigError(
            f"protocol=avro is read through the changefeed's schema registry: pass {flag} http://host:8081 (what "
            "the changefeed's --schema-registry names)",
            code=ERR_REGISTRY,
        )
    return toml


def check_applicable(source: KafkaSinkConfig, who: str) -> None:
    """Raises ConfigError unless an avro topic carries commit-ts, watermarks and DDL (see the module docstring)."""
    if source.protocol == "avro" and not source.avro_enable_watermark:
        raise ConfigError(
            f"{who} applies protocol=avro only from a changefeed with enable-tidb-extension=true and "
            "avro-enable-watermark=true (set both on the changefeed and in --upstream-uri): without them the topic "
            "has no commit-ts, watermarks or DDL messages to apply it in order",
            code="CDC:ErrKafkaInvalidConfig",
        )


def avro_decoder(source: KafkaSinkConfig) -> AvroDecoder:
    """A decoder of ``source``'s avro topic with this process's client of its registry (no connection yet)."""
    from sparkcdc.codec.avro.config import AvroConfig
    from sparkcdc.codec.avro.decoder import AvroDecoder
    from sparkcdc.schema_registry.client import registry_client

    return AvroDecoder(AvroConfig.from_options(source.codec_options()), registry_client(source.schema_registry))
