"""The registry URL (checked, masked, split into the client's settings) and how the client's failures become the
project's errors: unreachable or 5xx retryable, an incompatible schema one non-retryable line, nothing secret."""

from __future__ import annotations

from typing import Any

import pytest

from sparkcdc.errors import ConfigError, RegistryError
from sparkcdc.schema_registry.client import RegistryClient
from sparkcdc.schema_registry.url import RegistryURL


def test_credentials_are_decoded_for_the_client_and_masked_when_shown() -> None:
    url = RegistryURL.parse("https://c%40dc:p%3Ahunter2@reg.example.com:8081/apis/ccompat/v7/")
    assert url.client_config() == {"url": "https://reg.example.com:8081/apis/ccompat/v7",
                                   "basic.auth.user.info": "c@dc:p:hunter2"}  # fmt: skip
    assert str(url) == "https://c%40dc:xxxxx@reg.example.com:8081/apis/ccompat/v7"
    assert "hunter2" not in repr(url)
    assert RegistryURL.parse("http://127.0.0.1:8081").client_config() == {"url": "http://127.0.0.1:8081"}


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("", "is empty"),
        ("127.0.0.1:8081", "must start with http:// or https://"),
        ("http://", "names no host"),
        (" http://h:1", "whitespace"),
        ("http://h:1?x=1", "?query"),
        ("http://h:0", "port 0"),
        ("http://h:70000", "not a valid URL"),
        ("http://:hunter2@h:1", "user:password@"),
        ("http://u:hunter2/x@h:1", "must be URL-encoded"),  # the port would be 'hunter2'
    ],
)
def test_bad_urls_are_one_line_without_the_password(url: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match="--schema-registry") as e:
        RegistryURL.parse(url)
    assert fragment in e.value.message and "hunter2" not in e.value.message and "\n" not in e.value.message
    assert e.value.code == "CDC:ErrAvroSchemaAPIError"


class Refusal(Exception):
    def __init__(self, status: int | None, text: str) -> None:
        super().__init__(text)
        self.http_status_code = status
        self.error_message = text


class FailingHTTP:
    def __init__(self, error: Exception) -> None:
        self.error = error
        self.calls = 0

    def register_schema(self, *_: Any) -> int:
        self.calls += 1
        raise self.error

    def get_schema(self, *_: Any) -> Any:
        raise self.error


@pytest.mark.parametrize(
    ("error", "retryable", "fragment"),
    [
        (Refusal(409, "Schema being registered is incompatible"), False, "set the subject's compatibility to NONE"),
        (Refusal(401, "Unauthorized"), False, "check the user and password"),
        (Refusal(422, "Invalid schema"), False, "HTTP 422"),
        (Refusal(503, "unavailable"), True, "HTTP 503"),
        (ConnectionRefusedError(111, "Connection refused"), True, "check that the registry is running"),
    ],
)
def test_failures_map_to_retryable_or_not(error: Exception, retryable: bool, fragment: str) -> None:
    """Every failure is TiCDC's ``CDC:ErrAvroSchemaAPIError``, and none fails a changefeed (TiCDC does not list it
    among the errors that do): an outage is tried again in the call, a refusal (4xx) is not (the same request gets
    the same answer) but the changefeed retries it."""
    client = RegistryClient(RegistryURL.parse("http://cdc:hunter2@127.0.0.1:1"), retry_s=0.3)
    http = client._client = FailingHTTP(error)
    with pytest.raises(RegistryError) as e:
        client.register("db_t-value", '{"type":"record","name":"t","fields":[]}')
    assert e.value.retryable is retryable and fragment in e.value.message
    assert e.value.code == "CDC:ErrAvroSchemaAPIError" and not e.value.permanent
    assert (http.calls > 1) is retryable
    # what the runner reads back from an executor's traceback: the class in sparkcdc.errors and the code
    assert type(e.value).__module__ == "sparkcdc.errors"
    assert "db_t-value" in e.value.message and "hunter2" not in e.value.message and "xxxxx" in e.value.message
    with pytest.raises(RegistryError, match="cannot read schema 7"):
        client.schema(7)
