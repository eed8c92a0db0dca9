"""The shared secret that callers of ``serve skypilot-policy`` must prove, with no SkyPilot.

Apart from the endpoint so that ``serve`` checks its options (a missing or short secret)
before it imports SkyPilot (seconds), and an option error is told at once.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Mapping

from gate.errors import InputError
from gate.integrations.whole_files import read_regular

SECRET_ENV = "BUDGET_GATE_POLICY_SECRET"
"""The env var that holds the shared secret, when no secret file is given."""
MIN_SECRET_CHARS = 16
"""A shorter secret is refused at start-up: it could be guessed over the network."""


def read_secret(path: str | None, environ: Mapping[str, str]) -> str:
    """The shared secret: the file's first line when ``path`` is given, else the env var.

    Raises:
        gate.errors.InputError: no secret, an unreadable file, or one too short (exit 3).
    """
    if path is not None:
        hint = f"give a regular file whose first line is the secret, or set {SECRET_ENV}"
        raw = read_regular(path, "--secret-file", hint)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(
                f"--secret-file {path}: cannot be read (not UTF-8)", hint=hint
            ) from None
        secret, where = (text.splitlines() or [""])[0].strip(), f"--secret-file {path}"
    else:
        secret, where = environ.get(SECRET_ENV, "").strip(), SECRET_ENV
    if not secret:
        raise InputError(
            f"the endpoint needs a shared secret and {where} holds none",
            hint=f"set {SECRET_ENV} or --secret-file (e.g. from `openssl rand -hex 32`), and "
            "give SkyPilot the same one; --insecure-no-auth serves without (never on a network)",
        )
    if len(secret) < MIN_SECRET_CHARS:
        raise InputError(
            f"the secret in {where} has {len(secret)} characters, fewer than {MIN_SECRET_CHARS}",
            hint="use a long random one, e.g. `openssl rand -hex 32`",
        )
    return secret


def refusal(authorization: str | None, secret: str) -> str | None:
    """Why a request's ``Authorization`` header does not prove the secret (``None``: it does)."""
    if not authorization:
        # NOTE: not in the policy URL: SkyPilot shows that URL in every rejection it prints
        return (
            "no credentials (give the API server's user a ~/.netrc line: machine HOST login "
            "budget-gate password SECRET)"
        )
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() == "basic":
        try:
            given = base64.b64decode(value.strip(), validate=True).decode("utf-8").partition(":")[2]
        except (binascii.Error, UnicodeDecodeError):
            return "malformed basic credentials"
    elif scheme.lower() == "bearer":
        given = value.strip()
    else:
        return f"credentials of an unknown scheme {scheme[:20]!r} (use basic or bearer)"
    # NOTE: compare_digest takes the same time wherever the strings differ.
    if not hmac.compare_digest(given.encode("utf-8"), secret.encode("utf-8")):
        return "wrong secret"
    return None
