"""A lake root on an object store, as each library takes it: the table URI and the storage options of delta-rs
(``object_store``'s keys), the warehouse and FileIO properties of pyiceberg. The parameters are the storage
sink's (``endpoint``, ``access-key``, ``account-key``, ...; :data:`~sparkcdc.lake.location.STORE_PARAMS`), so one
bucket is configured the same way for every sink.

What each maps to, and why where it is not one to one:

- S3: both libraries take endpoint, region, keys and session token; ``force-path-style`` (the storage sink's
  default: true, as TiCDC's) picks path-style requests, which S3-compatible servers (MinIO, moto) need.
- GCS: delta-rs takes ``credentials-file`` as its service account file. pyiceberg's GCS filesystem (pyarrow's)
  takes no credentials file: it reads ``GOOGLE_APPLICATION_CREDENTIALS``, so ``credentials-file`` is refused for
  Iceberg with a line saying so. With an ``endpoint`` (an emulator) and no credentials both go anonymous, as the
  storage sink does: delta-rs skips signing; pyarrow has no anonymous switch reachable through pyiceberg, so it is
  given a placeholder bearer token that an emulator ignores.
- Azure: delta-rs takes the account, key or SAS token and an endpoint; pyiceberg (adlfs) takes the same as a
  connection string, as the storage sink builds it. An Iceberg location names the account
  (``abfs://container@account.dfs.core.windows.net/...``), so it needs ``account-name`` (or
  ``AZURE_STORAGE_ACCOUNT``).
"""

from __future__ import annotations

import os
from typing import Final

from sparkcdc.errors import ConfigError
from sparkcdc.lake.location import ERR_SINK_URI_INVALID, LakeLocation
from sparkcdc.storage.sink_uri import SinkURI

_DELTA_SCHEME: Final = {"s3": "s3", "gcs": "gs", "azure": "az"}
_FAR_FUTURE_MS: Final = "4102444800000"  # 2100-01-01: the placeholder token of an anonymous emulator never expires


def _params(store: SinkURI) -> dict[str, str]:
    return {k: v for k, v in store.params if v}


def _path_style(p: dict[str, str]) -> bool:
    return p.get("force-path-style", "true").lower() in ("1", "t", "true")


def delta_root(where: LakeLocation) -> str:
    """The URI delta-rs opens the root at: a local path, or ``s3://``, ``gs://``, ``az://bucket/prefix``."""
    store = where.store
    if store is None:
        return where.root
    return f"{_DELTA_SCHEME[store.scheme]}://{store.root}"


def delta_options(where: LakeLocation) -> dict[str, str] | None:
    """delta-rs ``storage_options`` for the root (None for a local one)."""
    store = where.store
    if store is None:
        return None
    p = _params(store)
    out: dict[str, str] = {}
    endpoint = p.get("endpoint")
    if endpoint and endpoint.startswith("http://"):
        out["allow_http"] = "true"
    if store.scheme == "s3":
        for key, option in (("endpoint", "aws_endpoint"), ("region", "aws_region"),
                            ("access-key", "aws_access_key_id"), ("secret-access-key", "aws_secret_access_key"),
                            ("session-token", "aws_session_token")):  # fmt: skip
            if key in p:
                out[option] = p[key]
        out["aws_virtual_hosted_style_request"] = "false" if _path_style(p) else "true"
    elif store.scheme == "gcs":
        if endpoint:
            out["google_base_url"] = endpoint
        if "credentials-file" in p:
            out["google_service_account"] = p["credentials-file"]
        elif endpoint:
            out["google_skip_signature"] = "true"
    else:
        for key, option in (("endpoint", "azure_storage_endpoint"), ("account-name", "azure_storage_account_name"),
                            ("account-key", "azure_storage_account_key"),
                            ("sas-token", "azure_storage_sas_token")):  # fmt: skip
            if key in p:
                out[option] = p[key].lstrip("?") if key == "sas-token" else p[key]
    return out


def iceberg_warehouse(where: LakeLocation) -> str:
    """The warehouse location pyiceberg writes under. Raises ConfigError (Azure without an account name)."""
    store = where.store
    if store is None:
        return f"file://{where.root}"
    if store.scheme == "s3":
        return f"s3://{store.root}"
    if store.scheme == "gcs":
        return f"gs://{store.root}"
    account = _params(store).get("account-name") or os.environ.get("AZURE_STORAGE_ACCOUNT")
    if not account:
        raise ConfigError(f"{where}: an Iceberg warehouse on Azure needs account-name= (or AZURE_STORAGE_ACCOUNT)",
                          code=ERR_SINK_URI_INVALID)  # fmt: skip
    path = f"/{store.prefix}" if store.prefix else ""
    return f"abfs://{store.bucket}@{account}.dfs.core.windows.net{path}"


def iceberg_properties(where: LakeLocation) -> dict[str, str]:
    """pyiceberg FileIO properties for the warehouse (none for a local one). Raises ConfigError for a setting
    pyiceberg cannot take (a GCS credentials file)."""
    store = where.store
    if store is None:
        return {}
    p = _params(store)
    out: dict[str, str] = {}
    endpoint = p.get("endpoint")
    if store.scheme == "s3":
        for key, prop in (("endpoint", "s3.endpoint"), ("region", "s3.region"), ("access-key", "s3.access-key-id"),
                          ("secret-access-key", "s3.secret-access-key"),
                          ("session-token", "s3.session-token")):  # fmt: skip
            if key in p:
                out[prop] = p[key]
        out["s3.force-virtual-addressing"] = "false" if _path_style(p) else "true"
    elif store.scheme == "gcs":
        if "credentials-file" in p:
            raise ConfigError(f"{where}: pyiceberg takes no GCS credentials file; set GOOGLE_APPLICATION_CREDENTIALS "
                              "for the cdc process instead", code=ERR_SINK_URI_INVALID)  # fmt: skip
        if "project" in p:
            out["gcs.project-id"] = p["project"]
        if endpoint:
            out["gcs.service.host"] = endpoint
            out["gcs.oauth2.token"] = "anonymous"
            out["gcs.oauth2.token-expires-at"] = _FAR_FUTURE_MS
    else:
        account = p.get("account-name") or os.environ.get("AZURE_STORAGE_ACCOUNT", "")
        if account:
            out["adls.account-name"] = account
        if endpoint:  # adlfs reaches a non-Azure endpoint (azurite, a private cloud) only by a connection string
            conn = f"AccountName={account};BlobEndpoint={endpoint.rstrip('/')};" if account else \
                f"BlobEndpoint={endpoint.rstrip('/')};"  # fmt: skip
            if "account-key" in p:
                conn += f"AccountKey={p['account-key']};"
            if "sas-token" in p:
                conn += f"SharedAccessSignature={p['sas-token'].lstrip('?')};"
            out["adls.connection-string"] = conn
        else:
            if "account-key" in p:
                out["adls.account-key"] = p["account-key"]
            if "sas-token" in p:
                out["adls.sas-token"] = p["sas-token"].lstrip("?")
    return out
