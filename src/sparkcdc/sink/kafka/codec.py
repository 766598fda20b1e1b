"""The protocol codec of a Kafka changefeed: the config's codec options, and for avro the changefeed's namespace (the
first part of every record's Avro namespace) and this process's client of the schema registry."""

from __future__ import annotations

from typing import Any

from sparkcdc.codec.base import message_encoder
from sparkcdc.sink.kafka.config import KafkaSinkConfig


def message_codec(config: KafkaSinkConfig, changefeed: str) -> Any:
    """The encoder for ``config.protocol``; ``changefeed`` is ``namespace/id``. Building it opens no connection."""
    options = config.codec_options()
    if config.protocol == "avro":
        from sparkcdc.schema_registry.client import registry_client

        namespace = changefeed.rpartition("/")[0] or "default"
        options = {**options, "namespace": namespace, "registry": registry_client(config.schema_registry)}
    return message_encoder(config.protocol, options)
