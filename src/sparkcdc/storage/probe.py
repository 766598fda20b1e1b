"""Control plane: can a storage be written? Checked once at changefeed create and update, as TiCDC checks its
external storage there (the sink's ``GetExternalStorage`` reaches the bucket; the redo log's ``ValidateStorage``),
so a missing bucket, a wrong endpoint or refused credentials is one line then, not a changefeed in ``warning``.
"""

from __future__ import annotations

import threading
import uuid
from typing import Final

from sparkcdc.errors import ConfigError, SparkcdcError
from sparkcdc.storage.external import ExternalStorage

CHECK_SECONDS: Final = 10.0
ERR_STORAGE_INITIALIZE: Final = "CDC:ErrStorageInitialize"


def check_writable(storage: ExternalStorage, where: str) -> None:
    """Write and delete a probe file at the storage's root within 10 s; ``where`` names the storage for the
    message (its URI masked, and the setting it comes from). Raises ConfigError (``CDC:ErrStorageInitialize``)
    saying why, secrets masked.

    The probe is named as a temporary file (``.sparkcdc-probe.tmp.<uuid hex>``, ``external.is_temporary``): a
    consumer listing the tree meanwhile skips it instead of stopping on a foreign file, and one a killed process
    left is deleted by the next writer's ``remove_temporary``."""
    probe = f".sparkcdc-probe.tmp.{uuid.uuid4().hex}"
    failed: list[BaseException] = []

    def attempt() -> None:
        try:
            storage.write(probe, b"")
            storage.delete(probe)
        except BaseException as e:  # reported by the caller's thread
            failed.append(e)

    worker = threading.Thread(target=attempt, name="storage-check", daemon=True)
    worker.start()
    worker.join(CHECK_SECONDS)
    if worker.is_alive():
        raise ConfigError(f"{where} did not answer within {CHECK_SECONDS:g} s; check that it is reachable",
                          code=ERR_STORAGE_INITIALIZE)  # fmt: skip
    if failed:
        e = failed[0]
        reason = e.message if isinstance(e, SparkcdcError) else f"{type(e).__name__}: {e}"
        raise ConfigError(f"cannot write {where}: {reason}", code=ERR_STORAGE_INITIALIZE) from None
