"""Kafka sink URIs: ``kafka://host1:9092,host2:9092/topic?protocol=canal-json&...`` split into parts.

Pure: no I/O. ``kafka+ssl`` is accepted as TiCDC accepts it, as a second name of the same sink (TLS is switched
on by ``enable-tls`` or the ``ca``/``cert``/``key`` files, not by the scheme). Credentials belong in parameters
(``sasl-user``/``sasl-password``), never in ``user:password@``; a URI never prints its secrets: ``str``/``repr``
and every error show it through :meth:`KafkaURI.masked`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from sparkcdc.errors import ConfigError
from sparkcdc.masking import mask_uri
from sparkcdc.sink.kafka.topic import check_topic_name
from sparkcdc.uri_query import masked_query, parse_query, query_param

SCHEMES = ("kafka", "kafka+ssl")
ERR_URI = "CDC:ErrSinkURIInvalid"
_BROKER = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):([0-9]{1,5})")


@dataclass(frozen=True, slots=True)
class KafkaURI:
    """A parsed Kafka sink URI: ``brokers`` as ``host:port`` strings, the default ``topic``, ``params`` in URI order."""

    scheme: str
    brokers: tuple[str, ...]
    topic: str
    params: tuple[tuple[str, str], ...]

    @classmethod
    def parse(cls, uri: str) -> KafkaURI:
        """Parse and check the shape of a Kafka sink URI.

        Raises ConfigError (``CDC:ErrSinkURIInvalid``; ``CDC:ErrKafkaInvalidConfig`` for a missing or illegal
        topic) naming what is wrong, with the URI masked.
        """
        if not isinstance(uri, str) or not uri.strip():
            raise ConfigError(
                "sink URI is empty; use e.g. kafka://127.0.0.1:9092/topic?protocol=canal-json", code=ERR_URI
            )
        if uri != uri.strip():
            raise ConfigError("sink URI has leading or trailing whitespace", code=ERR_URI)
        if "://" not in uri:
            raise ConfigError(f"sink URI {mask_uri(uri)!r} has no scheme; use kafka://host:port/topic", code=ERR_URI)
        scheme = uri.split("://", 1)[0].lower()
        if scheme not in SCHEMES:
            raise ConfigError(
                f"sink URI {mask_uri(uri)!r} is not a Kafka sink URI; use kafka:// or kafka+ssl://", code=ERR_URI
            )
        try:
            parts = urlsplit(uri)
        except ValueError as e:
            raise ConfigError(f"sink URI {mask_uri(uri)!r} is malformed: {e}", code=ERR_URI) from None
        if parts.fragment:
            raise ConfigError(f"sink URI {mask_uri(uri)!r} must not have a #fragment", code=ERR_URI)
        if "@" in parts.netloc:
            raise ConfigError(
                f"sink URI {mask_uri(uri)!r} must not carry user:password@; use sasl-user, sasl-password and "
                "sasl-mechanism parameters",
                code=ERR_URI,
            )
        if not parts.netloc:
            raise ConfigError(
                f"sink URI {mask_uri(uri)!r} names no broker; use kafka://host1:9092,host2:9092/topic", code=ERR_URI
            )
        brokers = tuple(parts.netloc.split(","))
        for broker in brokers:
            m = _BROKER.fullmatch(broker)
            if m is None or not 1 <= int(m.group(2)) <= 65535:
                raise ConfigError(
                    f"broker address {broker!r} in sink URI {mask_uri(uri)!r} is not host:port; "
                    "use e.g. 127.0.0.1:9092 (several joined by commas)",
                    code=ERR_URI,
                )
        topic = parts.path.strip("/")
        if not topic:
            raise ConfigError(
                f"no topic is specified in sink-uri {mask_uri(uri)!r}; use kafka://host:9092/topic-name",
                code="CDC:ErrKafkaInvalidConfig",
            )
        check_topic_name(topic, "sink URI topic")
        return cls(scheme, brokers, topic, parse_query(parts.query, uri, ERR_URI))

    def param(self, key: str) -> str | None:
        return query_param(self.params, key)

    @property
    def bootstrap_servers(self) -> str:
        """The brokers as librdkafka's ``bootstrap.servers`` wants them."""
        return ",".join(self.brokers)

    def masked(self) -> str:
        """The URI with every secret parameter value replaced by ``xxxxx``."""
        return f"{self.scheme}://{self.bootstrap_servers}/{self.topic}" + masked_query(self.params, safe="-_./:,")

    def __str__(self) -> str:
        return self.masked()

    def __repr__(self) -> str:
        return f"KafkaURI({self.masked()!r})"


