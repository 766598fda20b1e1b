"""Masking of secrets in sink URIs and the protocol taken from the URI."""

from __future__ import annotations

import pytest

from sparkcdc.changefeed.config import ReplicaConfig
from sparkcdc.masking import mask_uri


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
    ],
)
def test_mask(uri: str, expected: str) -> None:
    assert mask_uri(uri) == expected


def test_protocol_from_uri_wins() -> None:
    cfg = ReplicaConfig.from_toml({"sink": {"protocol": "csv", "terminator": "\n"}})
    out = cfg.with_uri_protocol("file:///x?protocol=canal-json")
    assert out.sink["protocol"] == "canal-json" and out.sink["terminator"] == "\n"
    assert cfg.with_uri_protocol("file:///x") is cfg
