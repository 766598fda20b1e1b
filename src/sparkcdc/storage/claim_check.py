"""Reading TiCDC claim-check files (large messages the Kafka sink stored under ``claim-check-storage-uri``).

The codecs do no I/O: their decoders take a ``claim_check_reader`` that maps a file name (the base name of a
message's ``claimCheckLocation``) to the file's bytes. This builds one over external storage.
"""

from __future__ import annotations

from collections.abc import Callable

from sparkcdc.errors import DecodeError


def claim_check_reader(uri: str) -> Callable[[str], bytes] | None:
    """A reader of the claim-check files under ``uri`` (any storage-sink URI: file, s3, gcs, azure), or None when
    ``uri`` is empty. Raises ConfigError for a malformed URI; the reader raises DecodeError naming a missing
    file and StorageError when the storage fails."""
    if not uri:
        return None
    from sparkcdc.storage.external import ExternalStorage

    storage = ExternalStorage.from_uri(uri)

    def read(name: str) -> bytes:
        data = storage.read(name)
        if data is None:
            raise DecodeError(f"claim-check file {name} is missing from {storage.uri.masked()}")
        return data

    return read
