"""Masking of secrets in URIs: the one rule every log line, error, ``repr`` and API response uses.

Pure string work (no I/O), so the codecs may use it too. A secret is the password of the userinfo and the
value of every query parameter whose name contains a credential word (``sasl-password``, ``access-key``,
``secret-access-key``, ``sas-token``, ``account-key``, ...), as TiCDC masks sink URIs; they become ``xxxxx``.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

MASK = "xxxxx"
_SECRET_WORDS = ("password", "passwd", "pwd", "secret", "key", "token", "credential", "sas", "signature", "private")
# Parameters that contain a secret word but name an identifier, not a credential ("sas" is in every Kafka
# sasl-* name; of those only sasl-password, sasl-gssapi-password and sasl-oauth-client-secret are secrets).
_NOT_SECRET = frozenset(
    {
        "sse-kms-key-id",
        "kafka-client-id",
        "sasl-user",
        "sasl-mechanism",
        "sasl-gssapi-auth-type",
        "sasl-gssapi-service-name",
        "sasl-gssapi-user",
        "sasl-gssapi-realm",
        "sasl-gssapi-disable-pafxfast",
        "sasl-gssapi-kerberos-config-path",
        "sasl-oauth-client-id",
        "sasl-oauth-scopes",
        "sasl-oauth-grant-type",
        "sasl-oauth-audience",
    }
)

_RAW_PARAM = re.compile(r"([?&])([^=&#]+)=([^&#]*)")
_RAW_USERINFO = re.compile(r"(://[^/@:?#]*):[^/@?#]*@")


def is_secret_param(key: str) -> bool:
    """True for a parameter whose value is a credential (masked whenever printed)."""
    k = key.lower()
    return k not in _NOT_SECRET and any(word in k for word in _SECRET_WORDS)


def mask_value(key: str, value: str) -> str:
    """``value`` as it may be shown for parameter ``key``."""
    return MASK if value and is_secret_param(key) else value


def mask_uri(uri: str) -> str:
    """``uri`` with its password and secret parameter values replaced by ``xxxxx``. Never raises: a URI too
    malformed to parse is masked by pattern, so an error message can still show what the user gave."""
    try:
        parts = urlsplit(uri)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, host = netloc.rsplit("@", 1)
            if ":" in userinfo:
                netloc = f"{userinfo.split(':', 1)[0]}:{MASK}@{host}"
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            query = "&".join(f"{quote(k, safe='-_.~')}={quote(mask_value(k, v), safe='-_.~/:,')}" for k, v in pairs)
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        masked = _RAW_USERINFO.sub(r"\1:" + MASK + "@", uri)
        return _RAW_PARAM.sub(lambda m: f"{m.group(1)}{m.group(2)}={mask_value(m.group(2), m.group(3))}", masked)
