"""canal-json protocol (``spec/canal-json.md``): storage-sink lines and Kafka/Pulsar messages."""

from sparkcdc.codec.canal_json.config import CanalJsonConfig

__all__ = ["CanalJsonConfig"]
