"""What every ``mysql://`` URI shares, read one way for the upstream (``cdc server --upstream``), the MySQL sink's
``--sink-uri`` and the consumers' ``--downstream-uri``: the scheme, host, port, user and password in the authority,
and the TLS parameters (``ssl-ca``, ``ssl-cert``, ``ssl-key``). Each caller adds its own parameters and words its
errors with its own code; nothing here names the password.

Pure string work but for loading the TLS files (``sparkcdc.tls_files``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote, urlsplit

from sparkcdc.tls_files import TlsFileError, check_tls_files

SCHEMES: Final = ("mysql", "tidb", "mariadb", "mysql+ssl", "tidb+ssl")
TLS_PARAMS: Final = ("ssl-ca", "ssl-cert", "ssl-key")
NEEDS_CA: Final = "ssl-cert and ssl-key need ssl-ca; add ssl-ca, the CA that verifies the server"
UNENCODED: Final = (
    "cannot read its host and port; check the port, and percent-encode any '/', '?' or '#' in the user name or "
    "password (%2F, %3F, %23)"
)


class UriProblem(Exception):
    """Why a URI names no MySQL server. ``kind``: ``"malformed"`` (``reason``: urllib's words), ``"unencoded"`` (an
    unencoded '/', '?' or '#' in the password ended the authority early, so urllib read the rest of the password as
    port, path or query: show nothing it read), ``"scheme"`` (``reason``: the scheme) or ``"host"``."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


@dataclass(frozen=True)
class Authority:
    """The parts of a ``mysql://`` URI every caller reads the same way (the password URL-decoded)."""

    scheme: str
    host: str
    port: int
    user: str
    password: str
    database: str
    query: str

    @property
    def tls(self) -> bool:
        """``mysql+ssl://``, ``tidb+ssl://``: TLS even without ``ssl-ca`` (the server's certificate not verified)."""
        return self.scheme.endswith("+ssl")


def split_uri(uri: str, schemes: tuple[str, ...] = SCHEMES) -> Authority:
    """The authority of ``mysql://user:pass@host:port/db?query``. The port defaults to 4000 for ``tidb`` schemes
    (TiDB's), else 3306; the user to ``root``.

    Raises UriProblem (its reason never holds the password).
    """
    try:
        parts = urlsplit(uri.strip())
    except ValueError as e:
        raise UriProblem("malformed", str(e)) from None
    # an unencoded '/', '?' or '#' in the password ends the authority early: urllib reads the rest of the password
    # as host, port, path or query (``mysql://root:12#secret@h/`` would be host ``root``, port 12)
    early_end = "@" not in parts.netloc and "@" in f"{parts.path}?{parts.query}#{parts.fragment}"
    try:
        port = parts.port
    except ValueError as e:
        raise UriProblem("unencoded", UNENCODED) if early_end else UriProblem("malformed", str(e)) from None
    if early_end and "@" in parts.path + parts.fragment + parts.query.partition("=")[0]:
        raise UriProblem("unencoded", UNENCODED)
    scheme = parts.scheme.lower()
    if scheme not in schemes:
        raise UriProblem("scheme", scheme)
    if not parts.hostname:
        raise UriProblem("host", "no host")
    return Authority(
        scheme=scheme,
        host=parts.hostname,
        port=port or (4000 if scheme.startswith("tidb") else 3306),
        user=unquote(parts.username) if parts.username else "root",
        password=unquote(parts.password) if parts.password else "",
        database=unquote(parts.path.strip("/")),
        query=parts.query,
    )


def tls_problem(files: Mapping[str, str]) -> tuple[str, str] | None:
    """The TLS parameter (``ssl-ca``, ``ssl-cert`` or ``ssl-key``; ``""`` for a client certificate given without the
    CA, ``NEEDS_CA``) a TLS client could not use and why, or None. Loads the files as the client would, as TiCDC
    loads them when a changefeed is created; the reason names no path (the caller names the setting)."""
    ca, cert, key = (files.get(name, "") for name in TLS_PARAMS)
    if (cert or key) and not ca:
        return "", NEEDS_CA
    try:
        check_tls_files(ca, cert, key)
    except TlsFileError as e:
        return f"ssl-{e.which}", e.reason
    return None

