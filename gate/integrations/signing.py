"""Signing ledger records with an SSH key, through ``ssh-keygen -Y sign`` (ssh-agent works).

The key comes from ``BUDGET_GATE_SIGNING_KEY`` (or ``--signing-key``): a private key file,
a public key file whose private half is in ssh-agent, or the private key itself (how CI
passes a repository secret; it goes to a file only this user can read, deleted after use).
The principal it signs as is ``BUDGET_GATE_SIGNER`` when set, else what the command names
(``--by`` for an approval, ``budget-gate-ci`` in CI). The key never appears in a message.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gate.errors import InputError
from gate.ledger.signing import NAMESPACE

KEY_ENV = "BUDGET_GATE_SIGNING_KEY"
SIGNER_ENV = "BUDGET_GATE_SIGNER"
_INLINE = "-----BEGIN OPENSSH PRIVATE KEY-----"
_TIMEOUT = 30.0  # a key with a passphrase and no agent would wait forever at a prompt


@dataclass(frozen=True, slots=True)
class SshSigner:
    """Signs as ``principal`` with the SSH key at ``key`` (or its ``.pub`` and ssh-agent)."""

    principal: str
    key: str
    inline: bool = False
    """``key`` is a file written from the key's text (never named: it is temporary)."""

    def sign(self, message: bytes) -> str:
        """The armored SSHSIG of ``message`` in the ``budget-gate`` namespace."""
        try:
            done = subprocess.run(
                ["ssh-keygen", "-q", "-Y", "sign", "-n", NAMESPACE, "-f", self.key],
                input=message,
                capture_output=True,
                timeout=_TIMEOUT,
                check=False,
            )
        except FileNotFoundError:
            raise InputError(
                "signing a ledger record needs ssh-keygen (OpenSSH 8.1 or later)",
                hint="install the OpenSSH client",
            ) from None
        except subprocess.TimeoutExpired:
            raise InputError(
                f"ssh-keygen did not sign within {_TIMEOUT:.0f} s (a key with a passphrase?)",
                hint="add the key to ssh-agent and point the signing key at its .pub file",
            ) from None
        if done.returncode != 0 or not done.stdout.startswith(b"-----BEGIN SSH SIGNATURE-----"):
            first = done.stderr.decode("utf-8", "replace").strip().splitlines()
            why = first[-1] if first else f"exit {done.returncode}"
            if self.inline:
                raise InputError(
                    f"ssh-keygen could not sign with the key text in {KEY_ENV}: "
                    + why.replace(self.key, "the key given"),
                    hint="give the whole OpenSSH private key, from its -----BEGIN line to its "
                    "-----END line, with its line breaks (cat ~/.ssh/id_ed25519)",
                )
            raise InputError(
                f"ssh-keygen could not sign with the key in {KEY_ENV}: {why}",
                hint="check the key file (or that ssh-agent holds the key of the .pub given)",
            )
        return done.stdout.decode("ascii")


def signer_from(
    environ: Mapping[str, str], *, principal: str | None, key: str | None = None
) -> SshSigner | None:
    """The signer the environment (or ``key``) sets up, or ``None`` when there is no key.

    ``principal`` is who the command acts as; ``BUDGET_GATE_SIGNER`` overrides it.
    """
    material = key or environ.get(KEY_ENV, "")
    if not material.strip():
        return None
    who = environ.get(SIGNER_ENV) or principal
    if not who:
        raise InputError(
            f"{SIGNER_ENV} is not set: whose key is {KEY_ENV}?",
            hint="set it to your name as the policies' allowed_signers file lists it",
        )
    if material.lstrip().startswith(_INLINE):
        return SshSigner(who, _key_file(material), inline=True)
    path = Path(material).expanduser()
    if not path.is_file():
        raise InputError(
            f"{KEY_ENV} names no file ({len(material)} characters given)",
            hint="give the path of an SSH private key, or of a .pub whose key is in ssh-agent",
        )
    return SshSigner(who, str(path))


_written: dict[str, str] = {}
"""The file each inline key was written to in this process (one per key)."""
_written_lock = threading.Lock()


def _key_file(material: str) -> str:
    """The inline private key in a file only this user can read, deleted when the process ends.

    NOTE: one file per key and process: the SkyPilot policy server and the Kueue controller
    set up their signer for every launch, and each wrote another copy of the private key,
    kept until the process ended (for ever, if it was killed). A copy removed meanwhile (a
    temporary-file cleaner) is written again.
    """
    with _written_lock:
        name = _written.get(material)
        if name is None or not os.path.isfile(name):
            name = _written[material] = _write_key(material)
        return name


def _write_key(material: str) -> str:
    handle, name = tempfile.mkstemp(prefix="budget-gate-key-")  # created 0600
    try:
        text = material.strip().replace("\r\n", "\n")  # a key pasted from Windows
        os.write(handle, text.encode("ascii", "replace") + b"\n")
    finally:
        os.close(handle)
    atexit.register(_forget, name)
    return name


def _forget(name: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(name)
