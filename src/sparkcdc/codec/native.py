"""The switch between the native kernels (``sparkcdc._native``, built from ``native/``) and the Python reference
path, and the per-encoder cache of compiled kernels.

The native path is on when the extension imports and ``SPARKCDC_NATIVE`` is not ``0`` (or ``false``/``off``/
``no``); the Python codecs stay the reference either way. A kernel is built per (table-map layout, table version)
from the spec its codec derives from its own per-table plan; a table the kernel cannot encode (a value type its
protocol does not take natively) gets none, and its events take the Python path, as does any transaction a kernel
returns None for.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from sparkcdc.model import RowsEvent, TableInfo

try:
    from sparkcdc import _native  # type: ignore[attr-defined]
except ImportError:  # a source tree without the built extension: the Python path only
    _native = None

ENV: Final = "SPARKCDC_NATIVE"
_CACHE_LIMIT: Final = 512

Spec = Mapping[str, Any]


def available() -> bool:
    """Whether the extension is built and importable."""
    return _native is not None


def enabled() -> bool:
    """The switch: the native path runs when the extension imports and ``SPARKCDC_NATIVE`` does not turn it off."""
    return _native is not None and os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "off", "no")


def split_key_positions(table: TableInfo) -> list[int]:
    """Columns whose change makes an UPDATE one the storage and MQ sinks split (``RowChange.handle_key_changed``)."""
    return [i for i, c in enumerate(table.columns) if c.handle_key or c.unique_key]


class Kernels:
    """One encoder's kernels for ``protocol``; ``spec(event)`` gives a table's kernel spec or None (no kernel)."""

    def __init__(self, protocol: str, spec: Callable[[RowsEvent], Spec | None], split_updates: bool) -> None:
        self.protocol = protocol
        self._spec = spec
        self._split = split_updates
        self._cache: dict[tuple[int, int, int], tuple[object, TableInfo, Any]] = {}

    def kernel(self, event: RowsEvent) -> Any:
        key = (id(event.layout), id(event.table), event.physical_table_id)
        hit = self._cache.get(key)
        if hit is not None and hit[0] is event.layout and hit[1] is event.table:
            return hit[2]
        kernel = self._build(event)
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[key] = (event.layout, event.table, kernel)  # holds both: their ids stay unique
        return kernel

    def _build(self, event: RowsEvent) -> Any:
        if _native is None:
            return None
        layout = event.layout.kernel_layout()
        spec = self._spec(event) if layout is not None else None
        if layout is None or spec is None:
            return None
        columns, positions, callbacks = layout
        full = dict(spec)
        full["split_keys"] = split_key_positions(event.table) if self._split else []
        try:
            return _native.Kernel(self.protocol, columns, positions, callbacks, full)
        except NotImplementedError:  # a value type this protocol does not take natively
            return None

    def encode(self, events: Sequence[RowsEvent], clock_ms: int) -> Any:
        """The kernel's result for one table's events of one transaction, or None: take the Python path."""
        if not events:
            return None
        first = events[0]
        kernel = self.kernel(first)
        if kernel is None:
            return None
        if any(e.layout is not first.layout or e.table is not first.table
               or e.physical_table_id != first.physical_table_id for e in events):  # fmt: skip
            return None  # a second table map in one transaction: rare, left to Python
        return kernel.encode(list(events), clock_ms)
