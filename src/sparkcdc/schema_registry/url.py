"""The schema registry's URL: checked once, shown masked, split into what the HTTP client needs.

TiCDC takes ``--schema-registry=https://username:password@host`` with the user and password URL-encoded. Pure: no
I/O. Every error names the problem with the URL masked and says what to give instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from sparkcdc.errors import ConfigError
from sparkcdc.masking import mask_uri

ERR_REGISTRY = "CDC:ErrAvroSchemaAPIError"
_EXAMPLE = "use e.g. http://127.0.0.1:8081 or https://user:password@registry.example.com"


@dataclass(frozen=True, repr=False)
class RegistryURL:
    """A registry address: ``base`` without credentials, and the decoded ``user``/``password`` (may be empty)."""

    base: str
    user: str = ""
    password: str = ""

    @classmethod
    def parse(cls, url: str, where: str = "--schema-registry") -> RegistryURL:
        """Raises ConfigError (``CDC:ErrAvroSchemaAPIError``) naming ``where``, the URL masked."""
        if not isinstance(url, str) or not url.strip():
            raise ConfigError(f"{where} is empty; {_EXAMPLE}", code=ERR_REGISTRY)
        shown = mask_uri(url)
        if url != url.strip() or any(c in url for c in " \t\r\n"):
            raise ConfigError(f"{where} {shown!r} contains whitespace; {_EXAMPLE}", code=ERR_REGISTRY)
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:  # its text may quote part of the password: not shown
            raise ConfigError(f"{where} {shown!r} is not a valid URL: its host or port cannot be read (a '/', '?', "
                              f"'#' or '@' in the user or password must be URL-encoded); {_EXAMPLE}",
                              code=ERR_REGISTRY) from None  # fmt: skip
        if parts.scheme.lower() not in ("http", "https"):
            raise ConfigError(f"{where} {shown!r} must start with http:// or https://; {_EXAMPLE}", code=ERR_REGISTRY)
        if not parts.hostname:
            raise ConfigError(f"{where} {shown!r} names no host; {_EXAMPLE}", code=ERR_REGISTRY)
        if port == 0:
            raise ConfigError(f"{where} {shown!r} has port 0; {_EXAMPLE}", code=ERR_REGISTRY)
        if parts.query or parts.fragment:
            raise ConfigError(f"{where} {shown!r} must not have a ?query or #fragment; {_EXAMPLE}", code=ERR_REGISTRY)
        if "@" in parts.netloc and (parts.username is None or parts.password is None or not parts.username):
            raise ConfigError(
                f"{where} {shown!r} must give credentials as user:password@ (URL-encoded); {_EXAMPLE}",
                code=ERR_REGISTRY,
            )
        host = parts.netloc.rsplit("@", 1)[-1]
        base = urlunsplit((parts.scheme.lower(), host, parts.path.rstrip("/"), "", ""))
        return cls(base, unquote(parts.username or ""), unquote(parts.password or ""))

    def client_config(self) -> dict[str, Any]:
        """confluent-kafka ``SchemaRegistryClient`` settings (credentials as basic auth, never in the URL)."""
        conf: dict[str, Any] = {"url": self.base}
        if self.user:
            conf["basic.auth.user.info"] = f"{self.user}:{self.password}"
        return conf

    def masked(self) -> str:
        if not self.user:
            return self.base
        scheme, rest = self.base.split("://", 1)
        return f"{scheme}://{quote(self.user, safe='')}:xxxxx@{rest}"

    def __repr__(self) -> str:
        return f"RegistryURL({self.masked()!r})"

    __str__ = masked
