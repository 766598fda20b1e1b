"""Masking of secrets in URIs: the one rule every log line, error, ``repr`` and API response uses.

Pure string work (no I/O), so the codecs may use it too. A secret is the password of the userinfo and the
value of every query parameter whose name contains a credential word (``sasl-password``, ``access-key``,
``secret-access-key``, ``sas-token``, ``account-key``, ...), as TiCDC masks sink URIs; they become ``xxxxx``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

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
# a password with an unencoded '/', '?' or '#' (a URI given as a parameter comes URL-decoded) ends the netloc early:
# ``http://u:pa/ss@h`` parses as host ``u``, port ``pa``; the userinfo is everything up to the first '@'
_LOOSE_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^/@:?#]*):[^@]*@")


def is_secret_param(key: str) -> bool:
    """True for a parameter whose value is a credential (masked whenever printed); a config's snake_case key
    (``sasl_password``) counts as its kebab-case form."""
    k = key.lower().replace("_", "-")
    return k not in _NOT_SECRET and any(word in k for word in _SECRET_WORDS)


def mask_value(key: str, value: str) -> str:
    """``value`` as it may be shown for parameter ``key``: a credential masked whole, a URI given as a parameter
    (``schema-registry=https://user:password@host``) with its own secrets masked."""
    if value and is_secret_param(key):
        return MASK
    return mask_uri(value) if "://" in value else value


def mask_uri(uri: str) -> str:
    """``uri`` with its password and secret parameter values replaced by ``xxxxx``. Never raises: a URI too
    malformed to parse is masked by pattern, so an error message can still show what the user gave."""
    try:
        parts = urlsplit(uri)
        if "@" not in parts.netloc and _LOOSE_USERINFO.match(uri):
            return mask_uri(_LOOSE_USERINFO.sub(r"\1:" + MASK + "@", uri, count=1))
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, host = netloc.rsplit("@", 1)
            if ":" in userinfo:
                netloc = f"{userinfo.split(':', 1)[0]}:{MASK}@{host}"
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            query = "&".join(f"{quote(k, safe='-_.~')}={quote(mask_value(k, v), safe='-_.~/:,')}" for k, v in pairs)
        text = f"{parts.scheme}:" if parts.scheme else ""
        if netloc or uri[len(text) :].startswith("//"):  # urlunsplit drops an empty authority for most schemes
            text += "//" + netloc
        text += parts.path
        if query:
            text += "?" + query
        return text + ("#" + parts.fragment if parts.fragment else "")
    except ValueError:
        masked = _RAW_USERINFO.sub(r"\1:" + MASK + "@", uri)
        return _RAW_PARAM.sub(lambda m: f"{m.group(1)}{m.group(2)}={mask_value(m.group(2), m.group(3))}", masked)


def mask_setting(key: str, value: str) -> str:
    """A config value as it may be shown: a credential masked, a URI (a claim-check storage URI, a schema
    registry) with its secrets masked."""
    if is_secret_param(key):
        return mask_value(key, value)
    return mask_uri(value) if "://" in value else value


def mask_config(doc: Any) -> Any:
    """A changefeed config document (TOML or Open API shape) with every secret masked, as TiCDC masks the replica
    config it returns (the SASL passwords and client secret of ``[sink.kafka-config]``, URIs' credentials)."""
    if isinstance(doc, Mapping):
        return {k: mask_setting(k, v) if isinstance(v, str) else mask_config(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [mask_config(v) for v in doc]
    return doc


def unmask_config(new: Any, old: Any) -> Any:
    """``new`` with every value that is the masked form of ``old``'s value at the same place replaced by the old
    value: a config a GET returned, sent back, keeps the stored secrets instead of storing ``xxxxx``."""
    if isinstance(new, Mapping) and isinstance(old, Mapping):
        return {k: _unmask_value(k, v, old.get(k)) for k, v in new.items()}
    if isinstance(new, list) and isinstance(old, list) and len(new) == len(old):
        return [unmask_config(n, o) for n, o in zip(new, old, strict=True)]
    return new


def _unmask_value(key: str, new: Any, old: Any) -> Any:
    if isinstance(new, str) and isinstance(old, str):
        return old if new == mask_setting(key, old) else new
    return unmask_config(new, old)
