"""Where a changefeed's lake tables live, parsed from a ``delta://`` or ``iceberg://`` sink URI.

``delta:///abs/root``                      one Delta table per upstream table at ``<root>/<schema>/<table>``
``iceberg:///abs/warehouse``               Iceberg SQL catalog in ``<warehouse>/catalog.db`` (SQLite)
``iceberg:///abs/warehouse?catalog-uri=mysql+pymysql://user:pw@host:3306/db``
                                           the same catalog on a MySQL/MariaDB (or any SQLAlchemy URL): the
                                           catalog several readers share; namespace = upstream schema
``delta://s3://bucket/prefix?endpoint=...&access-key=...``
``iceberg://gcs://bucket/prefix?catalog-uri=...``
                                           an object-store root: the format's scheme followed by the storage
                                           sink's URI of the root (s3, gcs/gs, azure/azblob), with the storage
                                           sink's parameter names for endpoint and credentials
                                           (:mod:`sparkcdc.storage.sink_uri` parses it); Iceberg then needs a
                                           ``catalog-uri`` (a SQLite file cannot live in a bucket)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from urllib.parse import parse_qsl, unquote, urlsplit

from sparkcdc.errors import ConfigError
from sparkcdc.masking import mask_uri
from sparkcdc.storage.sink_uri import SinkURI

ERR_SINK_URI_INVALID: Final = "CDC:ErrSinkURIInvalid"
FORMATS: Final = ("delta", "iceberg")
META_DIR: Final = ".sparkcdc"  # files of sparkcdc beside the tables; not a legal MySQL schema name
SINK_PARAMS: Final = frozenset({"flush-interval", "worker-count"})  # read by the sink's config
_FORMAT_PARAMS: Final = {"delta": frozenset(), "iceberg": frozenset({"catalog-uri"})}
# The storage sink's backend parameters the lake libraries can be given (``sparkcdc.lake.stores`` maps them).
STORE_PARAMS: Final = {
    "s3": frozenset({"endpoint", "region", "access-key", "secret-access-key", "session-token", "force-path-style"}),
    "gcs": frozenset({"endpoint", "credentials-file", "project"}),
    "azure": frozenset({"endpoint", "account-name", "account-key", "sas-token"}),
}


@dataclass(frozen=True, slots=True)
class LakeLocation:
    """``fmt``: ``delta`` or ``iceberg``; ``root``: the Delta root or the Iceberg warehouse (a local path, or
    ``scheme://bucket/prefix`` for an object store); ``catalog_uri``: the Iceberg SQL catalog's SQLAlchemy URL
    (None: SQLite in the warehouse); ``store``: the object-store root with its endpoint and credentials (None
    for a local root)."""

    fmt: str
    root: str
    catalog_uri: str | None = None
    store: SinkURI | None = None

    def __str__(self) -> str:
        catalog = f" catalog {mask_uri(self.catalog_uri)}" if self.catalog_uri else ""
        where = self.store.masked() if self.store is not None else self.root
        return f"{self.fmt} {where}{catalog}"

    __repr__ = __str__

    @property
    def storage_uri(self) -> SinkURI:
        """The root as a storage URI (``file:///root`` for a local one): what
        :class:`~sparkcdc.storage.external.ExternalStorage` opens for the files sparkcdc keeps beside the tables."""
        return self.store if self.store is not None else SinkURI.parse(f"file://{self.root}")

    @classmethod
    def from_uri(cls, uri: str) -> tuple[LakeLocation, dict[str, str]]:
        """The location and the URI's remaining (sink) parameters. Raises ConfigError, one line, secrets masked."""
        shown = mask_uri(uri)
        scheme, sep, rest = uri.partition("://")
        fmt = scheme.lower()
        if not sep or fmt not in FORMATS:
            raise ConfigError(f"sink uri invalid '{shown}': not a lake sink (use delta:// or iceberg://)",
                              code=ERR_SINK_URI_INVALID)  # fmt: skip
        if "://" in rest.split("?", 1)[0]:
            return cls._from_store(fmt, rest, shown)
        try:
            parts = urlsplit(uri)
            params = dict(parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query)))
        except ValueError as e:
            raise ConfigError(f"sink uri invalid '{shown}': {e}", code=ERR_SINK_URI_INVALID) from e
        _check_params(fmt, params, frozenset(), shown)
        root = unquote(parts.path)
        if parts.netloc or not root.startswith("/") or root.rstrip("/") == "":
            raise ConfigError(f"sink uri invalid '{shown}': {fmt}:// takes a local absolute path and no host, "
                              f"e.g. {fmt}:///data/lake, or an object-store root, e.g. "
                              f"{fmt}://s3://bucket/prefix?endpoint=...", code=ERR_SINK_URI_INVALID)  # fmt: skip
        return cls(fmt, root.rstrip("/"), _catalog(params, shown)), params

    @classmethod
    def _from_store(cls, fmt: str, rest: str, shown: str) -> tuple[LakeLocation, dict[str, str]]:
        """``fmt://scheme://bucket/prefix?params``: the root parsed as a storage sink URI. Raises ConfigError."""
        try:
            store = SinkURI.parse(rest)
        except ConfigError as e:
            raise ConfigError(f"sink uri invalid '{shown}': {e.message}", code=ERR_SINK_URI_INVALID) from e
        if store.scheme == "file":
            return cls.from_uri(f"{fmt}://{rest.split('://', 1)[1]}")
        if store.scheme not in STORE_PARAMS:
            raise ConfigError(f"sink uri invalid '{shown}': a lake root is a local path or on s3, gcs or azure, not "
                              f"{store.raw_scheme}://", code=ERR_SINK_URI_INVALID)  # fmt: skip
        params = dict(store.params)
        backend = STORE_PARAMS[store.scheme]
        _check_params(fmt, params, backend, shown)
        catalog = _catalog(params, shown)
        if fmt == "iceberg" and catalog is None:
            raise ConfigError(f"sink uri invalid '{shown}': an Iceberg warehouse on {store.raw_scheme}:// needs "
                              "catalog-uri= (the SQL catalog's database, e.g. mysql+pymysql://user:password@host/db)",
                              code=ERR_SINK_URI_INVALID)  # fmt: skip
        kept = tuple((k, v) for k, v in store.params if k in backend)
        store = SinkURI(store.scheme, store.raw_scheme, store.bucket, store.prefix, kept)
        root = f"{store.scheme}://{store.root}"
        return cls(fmt, root, catalog, store), {k: v for k, v in params.items() if k not in backend}


def _check_params(fmt: str, params: dict[str, str], backend: frozenset[str], shown: str) -> None:
    unknown = sorted(set(params) - SINK_PARAMS - _FORMAT_PARAMS[fmt] - backend)
    if unknown:
        allowed = ", ".join(sorted(SINK_PARAMS | _FORMAT_PARAMS[fmt] | backend))
        raise ConfigError(f"sink uri invalid '{shown}': unknown parameter {unknown[0]!r} for {fmt}://; "
                          f"use one of: {allowed}", code=ERR_SINK_URI_INVALID)  # fmt: skip


def _catalog(params: dict[str, str], shown: str) -> str | None:
    """Pops ``catalog-uri`` from ``params``. Raises ConfigError when it is not a SQLAlchemy URL."""
    catalog = params.pop("catalog-uri", None)
    if catalog is not None and "://" not in catalog:
        raise ConfigError(f"sink uri invalid '{shown}': catalog-uri must be a SQLAlchemy URL such as "
                          "mysql+pymysql://user:password@host:3306/db or sqlite:////path/catalog.db",
                          code=ERR_SINK_URI_INVALID)  # fmt: skip
    return catalog
