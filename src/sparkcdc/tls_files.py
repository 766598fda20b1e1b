"""The TLS files a sink URI names (MySQL ``ssl-ca``/``ssl-cert``/``ssl-key``, Kafka ``ca``/``cert``/``key``), checked
when a changefeed is created, as TiCDC loads them then (``security.Credential.ToTLSConfig``).

Without this a missing file, a directory or a file that is not PEM surfaced only when a connection was made: as a
stack trace naming neither the key nor the file. The files are loaded the way the clients load them (Python's ssl
for pymysql; the same PEM rules for librdkafka), and their contents never appear in an error.
"""

from __future__ import annotations

import os
from pathlib import Path


class TlsFileError(Exception):
    """``which`` ("ca", "cert" or "key") names a file that cannot be used, for ``reason`` (which names no path:
    the caller names the setting and its value)."""

    def __init__(self, which: str, reason: str) -> None:
        super().__init__(f"{which}: {reason}")
        self.which = which
        self.reason = reason


def check_tls_files(ca: str = "", cert: str = "", key: str = "") -> None:
    """Load the given files as a TLS client would: ``ca`` a PEM bundle of certificates, ``cert`` a PEM certificate
    and ``key`` its unencrypted PEM private key (or ``cert`` alone holding both). Raises TlsFileError."""
    import ssl

    for which, path in (("ca", ca), ("cert", cert), ("key", key)):
        if path:
            _readable(which, Path(path))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if ca:
        try:
            context.load_verify_locations(cafile=ca)
        except (ssl.SSLError, ValueError):
            raise TlsFileError("ca", "the file holds no PEM certificate") from None
    if cert:
        try:
            # an encrypted key would make OpenSSL prompt on the terminal: an empty password refuses it instead
            context.load_cert_chain(cert, key or None, password=lambda: b"")
        except (ssl.SSLError, ValueError):
            raise TlsFileError("cert", "the certificate and key files are not a PEM certificate and its unencrypted "
                               "private key") from None  # fmt: skip


def _readable(which: str, path: Path) -> None:
    if not path.exists():
        raise TlsFileError(which, "no such file")
    if path.is_dir():
        raise TlsFileError(which, "it is a directory; give the file")
    if not os.access(path, os.R_OK):
        raise TlsFileError(which, "the file is not readable by this user")
