"""TLS files named by sink URIs are loaded when a changefeed is created: a missing file, a directory or a file that
is no PEM certificate (or key) is named by which setting it is, never by its contents (issue 26, item 5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.tls_files import TlsFileError, check_tls_files
from tests.fixtures.tls import PemFiles


def test_real_files_load(pem: PemFiles) -> None:
    check_tls_files()
    check_tls_files(pem.ca)
    check_tls_files(pem.ca, pem.cert, pem.key)


@pytest.mark.parametrize(
    ("files", "which", "reason"),
    [
        ({"ca": "/nonexistent/ca.pem"}, "ca", "no such file"),
        ({"ca": "{dir}"}, "ca", "it is a directory; give the file"),
        ({"ca": "{not_pem}"}, "ca", "the file holds no PEM certificate"),
        ({"ca": "{key}"}, "ca", "the file holds no PEM certificate"),
        ({"ca": "{ca}", "cert": "{not_pem}", "key": "{key}"}, "cert", "not a PEM certificate and its unencrypted"),
        ({"ca": "{ca}", "cert": "{cert}", "key": "{not_pem}"}, "cert", "not a PEM certificate and its unencrypted"),
        ({"ca": "{ca}", "cert": "{cert}", "key": "/nonexistent/k.pem"}, "key", "no such file"),
        ({"ca": "{ca}", "cert": "{ca}", "key": "{key}"}, "cert", "not a PEM certificate and its unencrypted"),
    ],
)
def test_unusable_files_are_named(
    pem: PemFiles, tmp_path: Path, files: dict[str, str], which: str, reason: str
) -> None:
    paths = {"dir": str(tmp_path), "not_pem": pem.not_pem, "key": pem.key, "ca": pem.ca, "cert": pem.cert}
    with pytest.raises(TlsFileError) as e:
        check_tls_files(**{k: v.format(**paths) for k, v in files.items()})
    assert (e.value.which, reason in e.value.reason) == (which, True), e.value
    assert "PRIVATE KEY" not in str(e.value) and "no certificate here" not in str(e.value)
