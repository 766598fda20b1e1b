"""Where a changefeed's lake tables live, parsed from a ``delta://`` or ``iceberg://`` sink URI.

``delta:///abs/root``                      one Delta table per upstream table at ``<root>/<schema>/<table>``
``iceberg:///abs/warehouse``               Iceberg SQL catalog in ``<warehouse>/catalog.db`` (SQLite)
``iceberg:///abs/warehouse?catalog-uri=mysql+pymysql://user:pw@host:3306/db``
                                           the same catalog on a MySQL/MariaDB (or any SQLAlchemy URL): the
                                           catalog several readers share; namespace = upstream schema

Only local roots for now (object-store roots are a later step): the URI must have no host and an absolute path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from urllib.parse import parse_qsl, unquote, urlsplit

from sparkcdc.errors import ConfigError
from sparkcdc.masking import mask_uri

ERR_SINK_URI_INVALID: Final = "CDC:ErrSinkURIInvalid"
FORMATS: Final = ("delta", "iceberg")
SINK_PARAMS: Final = frozenset({"flush-interval", "worker-count"})  # read by the sink's config
_FORMAT_PARAMS: Final = {"delta": frozenset(), "iceberg": frozenset({"catalog-uri"})}


@dataclass(frozen=True, slots=True)
class LakeLocation:
    """``fmt``: ``delta`` or ``iceberg``; ``root``: the Delta root or the Iceberg warehouse (a local path);
    ``catalog_uri``: the Iceberg SQL catalog's SQLAlchemy URL (None: SQLite in the warehouse)."""

    fmt: str
    root: str
    catalog_uri: str | None = None

    def __str__(self) -> str:
        catalog = f" catalog {mask_uri(self.catalog_uri)}" if self.catalog_uri else ""
        return f"{self.fmt} {self.root}{catalog}"

    __repr__ = __str__

    @classmethod
    def from_uri(cls, uri: str) -> tuple[LakeLocation, dict[str, str]]:
        """The location and the URI's remaining (sink) parameters. Raises ConfigError, one line, secrets masked."""
        shown = mask_uri(uri)
        try:
            parts = urlsplit(uri)
            params = dict(parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query)))
        except ValueError as e:
            raise ConfigError(f"sink uri invalid '{shown}': {e}", code=ERR_SINK_URI_INVALID) from e
        fmt = parts.scheme.lower()
        if fmt not in FORMATS:
            raise ConfigError(f"sink uri invalid '{shown}': not a lake sink (use delta:// or iceberg://)",
                              code=ERR_SINK_URI_INVALID)  # fmt: skip
        unknown = sorted(set(params) - SINK_PARAMS - _FORMAT_PARAMS[fmt])
        if unknown:
            allowed = ", ".join(sorted(SINK_PARAMS | _FORMAT_PARAMS[fmt]))
            raise ConfigError(f"sink uri invalid '{shown}': unknown parameter {unknown[0]!r} for {fmt}://; "
                              f"use one of: {allowed}", code=ERR_SINK_URI_INVALID)  # fmt: skip
        root = unquote(parts.path)
        if parts.netloc or not root.startswith("/") or root.rstrip("/") == "":
            raise ConfigError(f"sink uri invalid '{shown}': {fmt}:// takes a local absolute path and no host, "
                              f"e.g. {fmt}:///data/lake (object-store roots are not supported yet)",
                              code=ERR_SINK_URI_INVALID)  # fmt: skip
        catalog = params.pop("catalog-uri", None)
        if catalog is not None and "://" not in catalog:
            raise ConfigError(f"sink uri invalid '{shown}': catalog-uri must be a SQLAlchemy URL such as "
                              "mysql+pymysql://user:password@host:3306/db or sqlite:////path/catalog.db",
                              code=ERR_SINK_URI_INVALID)  # fmt: skip
        return cls(fmt, root.rstrip("/"), catalog), params
