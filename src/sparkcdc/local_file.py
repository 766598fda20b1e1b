"""Small local state files: durable replacement (checkpoints, specs, plans: the one way we write them) and the
private directories and files that hold secrets.

A crash at any point leaves either the old file or the new one, never a torn one: the bytes go to a unique
temporary file in the same directory, are fsync'd, and are renamed over the target. Directories holding sink URIs
with their passwords are 0700 and such files 0600 (``private_dir``, ``private_file``), as other local users must
not read them.
"""

from __future__ import annotations

import logging
import os
import stat
import uuid
from pathlib import Path

from sparkcdc.errors import StorageError

log = logging.getLogger(__name__)


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


PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def private_dir(path: str | os.PathLike[str]) -> Path:
    """``path`` as a directory only this user can enter (0700), for state that holds secrets (sink URIs with their
    passwords in the metadata store and the changefeeds' specs). Missing directories on the way are created 0700
    too; an existing ``path`` that others can enter (created before this rule) is tightened, with a warning,
    unless it is a shared directory such as /tmp (sticky bit), which is left alone. Raises OSError."""
    target = Path(path)
    missing = [p for p in (target, *target.parents) if not p.exists()]
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:
            pass  # made by another thread or process meanwhile
        os.chmod(directory, PRIVATE_DIR_MODE)  # mkdir's mode is reduced by the umask, never widened
    if not missing:
        _tighten(target, PRIVATE_DIR_MODE, shared_ok=True)
    return target


def private_file(path: str | os.PathLike[str]) -> None:
    """Tighten an existing file that holds secrets to 0600 (one created before this rule); nothing when absent.
    Raises OSError."""
    target = Path(path)
    if target.exists():
        _tighten(target, PRIVATE_FILE_MODE, shared_ok=False)


def _tighten(path: Path, mode: int, *, shared_ok: bool) -> None:
    st = path.stat()
    current = stat.S_IMODE(st.st_mode)
    if not current & 0o077 or (shared_ok and current & stat.S_ISVTX):
        return
    os.chmod(path, mode)
    log.warning("%s was readable by other users (mode %s); now %s", path, oct(current), oct(mode))
