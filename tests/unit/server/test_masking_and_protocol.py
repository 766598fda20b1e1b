"""Masking of secrets in sink URIs and the protocol taken from the URI."""

from __future__ import annotations

import pytest

from sparkcdc.changefeed.config import ReplicaConfig
from sparkcdc.masking import mask_config, mask_uri, unmask_config


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("s3://b/p?protocol=csv", "s3://b/p?protocol=csv"),
        (
            "s3://b/p?protocol=csv&access-key=AK&secret-access-key=SK",
            "s3://b/p?protocol=csv&access-key=xxxxx&secret-access-key=xxxxx",
        ),
        (
            "azure://c/p?protocol=csv&account-key=K&sas-token=T",
            "azure://c/p?protocol=csv&account-key=xxxxx&sas-token=xxxxx",
        ),
        ("mysql://root:pw@127.0.0.1:3306/", "mysql://root:xxxxx@127.0.0.1:3306/"),
        ("kafka://h:9092/t?sasl-password=p", "kafka://h:9092/t?sasl-password=xxxxx"),
        ("http://[::1?token=T", "http://[::1?token=xxxxx"),  # too malformed to parse: masked by pattern
        # a password with an unencoded '/', '?' or '#' (a URI parameter's value comes decoded) cuts the netloc short
        ("http://u:s3cr/et@h:8081", "http://u:xxxxx@h:8081"),
        ("http://u:123/45@h", "http://u:xxxxx@h"),
        ("tcp://u:p?w#d@h/x?token=T", "tcp://u:xxxxx@h/x?token=xxxxx"),
        ("file:///tmp/a:b@c", "file:///tmp/a:b@c"),  # no authority: nothing to mask
        # an empty authority stays, whatever the scheme (a URI shown must be the one given, to be sent back)
        ("delta:///data/lake", "delta:///data/lake"),
        ("iceberg:///wh?catalog-uri=mysql%2Bpymysql%3A%2F%2Fc%3Apw%40db%2Fi",
         "iceberg:///wh?catalog-uri=mysql%2Bpymysql://c:xxxxx%40db/i"),
        ("delta://s3://b/lake?secret-access-key=SK", "delta://s3://b/lake?secret-access-key=xxxxx"),
        ("noop://?protocol=csv", "noop://?protocol=csv"),
        ("blackhole://", "blackhole://"),
    ],
)
def test_mask(uri: str, expected: str) -> None:
    assert mask_uri(uri) == expected


def test_protocol_from_uri_wins() -> None:
    cfg = ReplicaConfig.from_toml({"sink": {"protocol": "csv", "terminator": "\n"}})
    out = cfg.with_uri_protocol("file:///x?protocol=canal-json")
    assert out.sink["protocol"] == "canal-json" and out.sink["terminator"] == "\n"
    assert cfg.with_uri_protocol("file:///x") is cfg


def test_a_config_document_is_masked_in_either_key_style_and_unmasked_only_where_it_was() -> None:
    doc = {"sink": {"kafka_config": {"sasl_user": "cdc", "sasl_password": "pw", "sasl-gssapi-password": "k5",
                                     "kafka_client_id": "id-1", "sse-kms-key-id": "kms-1", "compression": "lz4"},
                    "schema_registry": "http://reg:pw@host:8081/?token=t",
                    "dispatchers": [{"matcher": ["a.*"], "topic": "{schema}"}]},
           "enable_sync_point": True}  # fmt: skip
    masked = mask_config(doc)
    assert masked == {"sink": {"kafka_config": {"sasl_user": "cdc", "sasl_password": "xxxxx",
                                                "sasl-gssapi-password": "xxxxx", "kafka_client_id": "id-1",
                                                "sse-kms-key-id": "kms-1", "compression": "lz4"},
                               "schema_registry": "http://reg:xxxxx@host:8081/?token=xxxxx",
                               "dispatchers": [{"matcher": ["a.*"], "topic": "{schema}"}]},
                      "enable_sync_point": True}  # fmt: skip
    assert unmask_config(masked, doc) == doc
    edited = {**masked, "sink": {**masked["sink"], "kafka_config": {**masked["sink"]["kafka_config"],
                                                                    "sasl_password": "new"}}}  # fmt: skip
    back = unmask_config(edited, doc)
    assert back["sink"]["kafka_config"]["sasl_password"] == "new"
    assert back["sink"]["kafka_config"]["sasl-gssapi-password"] == "k5"
    assert unmask_config({"sasl_password": "xxxxx"}, {}) == {"sasl_password": "xxxxx"}  # nothing to restore from
