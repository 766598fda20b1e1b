"""TiCDC's ``simple`` protocol (JSON and Avro): one event per Kafka message, schemas travel in-band."""

from sparkcdc.codec.simple.config import SimpleConfig

__all__ = ["SimpleConfig"]
