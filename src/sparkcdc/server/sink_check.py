"""Sink URI checks done by the control plane: validation on create/update and masking in every response.

Validation delegates to the storage sink's own constructor (``StorageSinkConfig.from_uri``), so the server
accepts exactly what the pipeline can run. Masking follows TiCDC: the userinfo password and every query
parameter whose name contains a secret-looking word become ``xxxxx``.
"""

from __future__ import annotations

import logging
from urllib.parse import parse_qsl, urlsplit

from sparkcdc.errors import ConfigError
from sparkcdc.masking import mask_uri
from sparkcdc.server.config import ReplicaConfig, thaw

log = logging.getLogger(__name__)

ERR_SINK_URI_INVALID = "CDC:ErrSinkURIInvalid"
def validate_sink(sink_uri: str, config: ReplicaConfig) -> None:
    """Check the sink URI together with the config's ``[sink]`` table; raises ConfigError (secrets masked).

    Uses ``sparkcdc.storage.sink_config.StorageSinkConfig.from_uri`` (the storage sink's validating
    constructor): unknown schemes, protocols, parameters and ``[sink]`` keys are rejected there.
    """
    if not sink_uri:
        raise ConfigError(
            "sink uri invalid '': sink_uri is empty, cannot create a changefeed without sink_uri",
            code=ERR_SINK_URI_INVALID,
        )
    try:
        from sparkcdc.storage.sink_config import StorageSinkConfig
    except ImportError:  # the storage sink is not installed: check the shape only
        _check_shape(sink_uri)
        return
    StorageSinkConfig.from_uri(sink_uri, config.to_toml())


def _check_shape(sink_uri: str) -> None:
    masked = mask_uri(sink_uri)
    try:
        parts = urlsplit(sink_uri)
    except ValueError as e:
        raise ConfigError(f"sink uri invalid '{masked}': {e}", code=ERR_SINK_URI_INVALID) from e
    if not parts.scheme:
        raise ConfigError(f"sink uri invalid '{masked}': missing scheme", code=ERR_SINK_URI_INVALID)
    params = dict(parse_qsl(parts.query))
    if parts.scheme in {"file", "s3", "gcs", "gs", "azure", "azblob", "noop"} and "protocol" not in params:
        raise ConfigError(f"sink uri invalid '{masked}': missing protocol", code=ERR_SINK_URI_INVALID)


def with_uri_protocol(sink_uri: str, config: ReplicaConfig) -> ReplicaConfig:
    """The config with ``[sink] protocol`` set from the URI's ``protocol`` (the URI wins, as in TiCDC)."""
    try:
        protocol = dict(parse_qsl(urlsplit(sink_uri).query)).get("protocol")
    except ValueError:
        return config
    if not protocol or config.sink.get("protocol") == protocol:
        return config
    return config.with_sink({**thaw(config.sink), "protocol": protocol})
