"""Durable replacement of small local state files (checkpoints, specs, plans): the one way we write them.

A crash at any point leaves either the old file or the new one, never a torn one: the bytes go to a unique
temporary file in the same directory, are fsync'd, and are renamed over the target.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from sparkcdc.errors import StorageError


def write_atomic(path: str | os.PathLike[str], data: bytes, *, what: str, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` (parent directories created). Raises StorageError naming ``what`` the
    file holds, e.g. "the checkpoint"."""
    target = Path(path)
    tmp = target.with_name(f"{target.name}.tmp.{uuid.uuid4().hex}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise StorageError(f"{target}: cannot record {what}: {e.strerror or e}") from e
