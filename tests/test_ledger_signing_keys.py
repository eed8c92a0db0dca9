"""The signing key given as text (how CI and Kubernetes pass a secret) in a long-lived process.

The SkyPilot policy server, the Kueue controller and a launch script that calls
``gate.require_approval`` in a loop set up their signer once per launch. With the key
given inline, each set-up wrote another copy of the private key to a temporary file, kept
until the process ended (never, if it was killed), and registered one more exit handler.
Each test makes a key of its own (ssh-keygen), so no other test's copy is in play.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import tempfile
from pathlib import Path

import pytest

from gate.integrations.signing import KEY_ENV, SIGNER_ENV, signer_from
from gate.ledger.signing import SIGNERS_FILE, Signers, record_message


def _new_key(folder: Path) -> tuple[str, str]:
    """A fresh ed25519 key: its private text and its signers-file line for ``fresh``."""
    path = folder / "fresh"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "fresh", "-f", str(path)],
        check=True,
    )
    public = " ".join(path.with_suffix(".pub").read_text().split()[:2])
    return path.read_text(), f"fresh {public}\n"


def test_an_inline_key_is_written_once_per_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    text, line = _new_key(tmp_path)
    copies_at = tmp_path / "tmp"
    copies_at.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(copies_at))
    environ = {KEY_ENV: text, SIGNER_ENV: "fresh"}
    signers = [signer_from(environ, principal=None) for _ in range(50)]
    copies = list(copies_at.glob("budget-gate-key-*"))
    assert len(copies) == 1, copies
    assert copies[0].stat().st_mode & 0o077 == 0  # only this user reads it
    listed = Signers.parse(line.encode(), SIGNERS_FILE)
    now = dt.datetime.now(dt.timezone.utc)
    for signer in (signers[0], signers[-1]):
        assert signer is not None
        signature = signer.sign(record_message("{}"))
        assert listed.check(record_message("{}"), signature, "fresh", now) is None


def test_an_inline_key_whose_file_was_removed_is_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A temporary-file cleaner removed the copy while the server ran: it signs again."""
    text, _ = _new_key(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    environ = {KEY_ENV: text, SIGNER_ENV: "fresh"}
    first = signer_from(environ, principal=None)
    assert first is not None
    Path(first.key).unlink()
    again = signer_from(environ, principal=None)
    assert again is not None and Path(again.key).is_file()
    assert again.sign(record_message("{}")).startswith("-----BEGIN SSH SIGNATURE-----")
