"""TiCDC's ``avro`` protocol: Confluent's wire format (magic byte, schema id) with key and value schemas that live
in a Confluent-compatible schema registry.

Entry points: ``encoder.AvroEncoder`` / ``encoder.from_options`` (registry ``message_encoder("avro", …)``),
``decoder.AvroDecoder`` / ``decoder.from_options`` (``message_decoder("avro", …)``), ``config.AvroConfig``. The
registry is reached through the ``registry.SchemaRegistry`` protocol: the codec itself does no I/O, the caller
passes a client in (``sparkcdc.schema_registry`` for a real one).
"""

from sparkcdc.codec.avro.config import AvroConfig

__all__ = ["AvroConfig"]
