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

from gate.errors import InputError
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


def test_an_inline_key_with_windows_line_ends_signs(tmp_path: Path):
    """A key pasted with CRLF line ends: ssh-keygen could not load it."""
    text, line = _new_key(tmp_path)
    signer = signer_from({KEY_ENV: text.replace("\n", "\r\n"), SIGNER_ENV: "fresh"}, principal=None)
    assert signer is not None
    message = record_message('{"v":2}')
    signers = Signers.parse(line.encode(), SIGNERS_FILE)
    assert signers.check(message, signer.sign(message), "fresh", dt.datetime.now(dt.UTC)) is None


def test_an_inline_key_cut_short_is_said_without_its_temporary_file(tmp_path: Path):
    """ssh-keygen's words named the temporary file the key was written to, and a public key."""
    text, _ = _new_key(tmp_path)
    cut = text[: len(text) // 2]
    signer = signer_from({KEY_ENV: cut, SIGNER_ENV: "fresh"}, principal=None)
    assert signer is not None
    with pytest.raises(InputError) as err:
        signer.sign(record_message('{"v":2}'))
    said = str(err.value)
    assert said.startswith(f"ssh-keygen could not sign with the key text in {KEY_ENV}: ")
    assert signer.key not in said and "budget-gate-key-" not in said
    assert "give the whole OpenSSH private key, from its -----BEGIN line" in said
    assert cut[40:80] not in said  # no part of the secret
