"""The query string of a sink URI (storage and Kafka alike): one value per key, and shown with secrets masked."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import parse_qsl, quote

from sparkcdc.errors import ConfigError
from sparkcdc.masking import mask_uri, mask_value


def parse_query(query: str, uri: str, code: str) -> tuple[tuple[str, str], ...]:
    """``key=value`` pairs in URI order. Raises ConfigError (``code``, the URI masked) for a malformed query, an
    empty name or a key given twice (TiCDC would silently keep one of them)."""
    if not query:
        return ()
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        raise ConfigError(
            f"sink URI {mask_uri(uri)!r} has a malformed query; use key=value pairs joined by &", code=code
        ) from None
    seen: set[str] = set()
    for k, _ in pairs:
        if not k:
            raise ConfigError(f"sink URI {mask_uri(uri)!r} has a parameter with an empty name", code=code)
        if k in seen:
            raise ConfigError(f"sink URI parameter {k!r} is given more than once; keep one", code=code)
        seen.add(k)
    return tuple(pairs)


def query_param(params: Iterable[tuple[str, str]], key: str) -> str | None:
    """The value of ``key`` among a URI's parameters (the first, where a parser let it repeat), or None."""
    return next((v for k, v in params if k == key), None)


def masked_query(params: Iterable[tuple[str, str]], safe: str = "-_./:") -> str:
    """``?k=v&...`` with every secret value replaced by ``xxxxx`` (``""`` without parameters)."""
    query = "&".join(f"{quote(k, safe='-_.')}={quote(mask_value(k, v), safe=safe)}" for k, v in params)
    return f"?{query}" if query else ""
