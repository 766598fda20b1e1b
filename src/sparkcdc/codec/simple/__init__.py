"""TiCDC's ``simple`` protocol (JSON and Avro): one event per Kafka message, schemas travel in-band.

Entry points: ``encoder.SimpleEncoder`` / ``encoder.from_options`` (registry ``message_encoder("simple", …)``),
``decoder.SimpleDecoder`` / ``decoder.from_options`` (``message_decoder("simple", …)``), ``config.SimpleConfig``
and ``bootstrap.BootstrapTracker`` (when a sink sends BOOTSTRAP messages).
"""

from sparkcdc.codec.simple.config import SimpleConfig

__all__ = ["SimpleConfig"]
