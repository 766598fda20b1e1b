"""One lookup of a URI parameter (``uri_query.query_param``) behind the storage, Kafka and MySQL URIs' ``param``."""

from __future__ import annotations

from sparkcdc.mysql.target import MysqlTarget
from sparkcdc.sink.kafka.uri import KafkaURI
from sparkcdc.storage.sink_uri import SinkURI
from sparkcdc.uri_query import query_param


def test_the_first_value_or_none() -> None:
    params = (("a", "1"), ("b", ""), ("a", "2"))
    assert (query_param(params, "a"), query_param(params, "b"), query_param(params, "c")) == ("1", "", None)


def test_every_uri_reads_its_parameters_alike() -> None:
    assert SinkURI.parse("file:///tmp/x?protocol=csv&date-separator=").param("date-separator") == ""
    assert SinkURI.parse("file:///tmp/x?protocol=csv").param("date-separator") is None
    assert KafkaURI.parse("kafka://h:9092/t?protocol=simple").param("protocol") == "simple"
    assert KafkaURI.parse("kafka://h:9092/t?protocol=simple").param("max-message-bytes") is None
    t = MysqlTarget.parse("mysql://h/?time-zone=&bulk-load=false")
    assert (t.param("time-zone", "x"), t.param("bulk-load"), t.param("ssl-ca", "none")) == ("", "false", "none")
