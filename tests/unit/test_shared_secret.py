"""The policy endpoints' shared secret: how a request proves it, and what a refusal advises."""

from __future__ import annotations

import base64

from gate.integrations.shared_secret import refusal

SECRET = "0123456789abcdef0123456789abcdef"


def _basic(secret: str) -> str:
    return "Basic " + base64.b64encode(f"budget-gate:{secret}".encode()).decode()


def test_a_request_without_credentials_is_told_of_netrc_never_the_url():
    """SkyPilot prints the policy URL in every rejection it shows a user: a secret put
    there, as the refusal once advised, reached every refused user."""
    said = refusal(None, SECRET)
    assert said is not None and "~/.netrc" in said
    assert "URL" not in said and "@HOST" not in said


def test_basic_and_bearer_credentials_prove_the_secret_and_a_wrong_one_does_not():
    assert refusal(_basic(SECRET), SECRET) is None
    assert refusal(f"Bearer {SECRET}", SECRET) is None
    assert refusal(_basic("x" * 32), SECRET) == "wrong secret"
    assert refusal("Basic !!!", SECRET) == "malformed basic credentials"
