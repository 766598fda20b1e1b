"""Storage sink URIs: ``scheme://bucket/prefix?key=value`` split into parts, with secrets masked.

Pure: no I/O. The scheme registry maps TiCDC's aliases (``gs`` → ``gcs``, ``azblob`` → ``azure``) to one
canonical backend name. A URI never prints its secrets: ``__str__``/``__repr__`` and every error built from a
URI go through :meth:`SinkURI.masked`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from sparkcdc.errors import ConfigError
from sparkcdc.masking import mask_uri
from sparkcdc.uri_query import masked_query, parse_query, query_param

# scheme as written -> canonical backend
SCHEMES: dict[str, str] = {
    "file": "file",
    "s3": "s3",
    "gcs": "gcs",
    "gs": "gcs",
    "azure": "azure",
    "azblob": "azure",
    "noop": "noop",
}

_URI_CODE = "CDC:ErrSinkURIInvalid"

_S3_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_GCS_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")
_AZURE_CONTAINER = re.compile(r"^(?!.*--)[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$")


@dataclass(frozen=True, slots=True)
class SinkURI:
    """A parsed sink URI.

    ``scheme`` is canonical (``file``, ``s3``, ``gcs``, ``azure``, ``noop``); ``raw_scheme`` as written.
    ``bucket`` is the bucket/container (empty for ``file``/``noop``); ``prefix`` is the key prefix without
    leading/trailing ``/`` (object stores) or the absolute directory (``file``). ``params`` keep the URI order.
    """

    scheme: str
    raw_scheme: str
    bucket: str
    prefix: str
    params: tuple[tuple[str, str], ...]

    @classmethod
    def parse(cls, uri: str) -> SinkURI:
        """Parse and check the shape of a sink URI.

        Raises ConfigError (code ``CDC:ErrSinkURIInvalid``) naming what is wrong; the message shows the URI
        masked.
        """
        if not isinstance(uri, str) or not uri.strip():
            raise ConfigError("sink URI is empty; use e.g. s3://bucket/prefix?protocol=canal-json", code=_URI_CODE)
        if uri != uri.strip():
            raise ConfigError("sink URI has leading or trailing whitespace", code=_URI_CODE)
        if "://" not in uri:
            raise ConfigError(f"sink URI {mask_uri(uri)!r} has no scheme; use scheme://host/path", code=_URI_CODE)
        try:
            parts = urlsplit(uri)
        except ValueError as e:
            raise ConfigError(f"sink URI {mask_uri(uri)!r} is malformed: {e}", code=_URI_CODE) from None
        raw_scheme = uri.split("://", 1)[0]
        scheme = SCHEMES.get(raw_scheme.lower())
        if scheme is None:
            raise ConfigError(
                f"unsupported scheme {raw_scheme!r} in sink URI; use one of: {', '.join(sorted(SCHEMES))}",
                code=_URI_CODE,
            )
        if parts.fragment:
            raise ConfigError(f"sink URI {mask_uri(uri)!r} must not have a #fragment", code=_URI_CODE)
        if "@" in parts.netloc:
            raise ConfigError(
                f"sink URI {mask_uri(uri)!r} must not carry user:password@; pass credentials as parameters "
                "(access-key, secret-access-key, account-key, sas-token, credentials-file)",
                code=_URI_CODE,
            )
        params = parse_query(parts.query, uri, _URI_CODE)
        host = parts.netloc
        path = parts.path
        if scheme == "file":
            if host not in ("", "localhost"):
                raise ConfigError(
                    f"file sink URI {mask_uri(uri)!r} has host {host!r}; use file:///absolute/path", code=_URI_CODE
                )
            if not path.startswith("/") or path.strip("/") == "":
                raise ConfigError(
                    f"file sink URI {mask_uri(uri)!r} needs an absolute directory other than /", code=_URI_CODE
                )
            if "\x00" in path:
                raise ConfigError("file sink URI path contains a NUL byte", code=_URI_CODE)
            return cls(scheme, raw_scheme, "", path.rstrip("/"), params)
        if scheme == "noop":
            return cls(scheme, raw_scheme, host, path.strip("/"), params)
        if not host:
            raise ConfigError(
                f"sink URI {mask_uri(uri)!r} has no bucket; use {raw_scheme}://bucket/prefix", code=_URI_CODE
            )
        _check_bucket(scheme, host)
        prefix = path.strip("/")
        if "//" in prefix or any(seg in (".", "..") for seg in prefix.split("/")):
            raise ConfigError(
                f"sink URI prefix {prefix!r} contains empty, '.' or '..' segments; use a plain key prefix",
                code=_URI_CODE,
            )
        return cls(scheme, raw_scheme, host, prefix, params)

    def param(self, key: str) -> str | None:
        return query_param(self.params, key)

    @property
    def root(self) -> str:
        """The sink root as the filesystem sees it: ``bucket/prefix`` or the local directory."""
        if self.scheme in ("file", "noop"):
            return self.prefix
        return f"{self.bucket}/{self.prefix}" if self.prefix else self.bucket

    def masked(self) -> str:
        """The URI with every secret parameter value replaced by ``xxxxx``."""
        host = self.bucket
        path = self.prefix if self.scheme in ("file", "noop") else ("/" + self.prefix if self.prefix else "")
        return f"{self.raw_scheme}://{host}{path}" + masked_query(self.params)

    def __str__(self) -> str:
        return self.masked()

    def __repr__(self) -> str:
        return f"SinkURI({self.masked()!r})"


def _check_bucket(scheme: str, bucket: str) -> None:
    pattern, what, rule = {
        "s3": (_S3_BUCKET, "S3 bucket", "3-63 lower-case letters, digits, '.' or '-'"),
        "gcs": (_GCS_BUCKET, "GCS bucket", "3-222 lower-case letters, digits, '.', '_' or '-'"),
        "azure": (_AZURE_CONTAINER, "Azure container", "3-63 lower-case letters, digits or single '-'"),
    }[scheme]
    if not pattern.match(bucket):
        raise ConfigError(f"invalid {what} name {bucket!r}: use {rule}", code=_URI_CODE)
