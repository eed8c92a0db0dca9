"""The SkyPilot admin policy over HTTP: who may ask, what a body means, what is answered.

``budget-gate serve skypilot-policy`` answers SkyPilot's ``RestfulAdminPolicy``. Once a
decision can write to the ledger (a launch uses up an approval and commits money), whoever
reaches the endpoint could spend a team's budget, so every request must carry the
endpoint's shared secret: SkyPilot's client posts with ``requests``, which sends the
credentials of the policy URL (``http://budget-gate:SECRET@host:8765``), or those of the
host's ``~/.netrc`` entry (``$NETRC``) when the URL has none, as HTTP basic auth. The
password (or a ``Bearer`` token) is compared with the secret in constant time
(:func:`hmac.compare_digest`); a request without it is refused with 401 and one line of
reason before anything is decoded, read or judged. The secret comes from a file or from
``BUDGET_GATE_POLICY_SECRET`` and is never printed; reading and comparing it is
:mod:`gate.integrations.shared_secret`'s.
"""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import dataclass, field

import sky
from sky import exceptions as sky_exceptions

from gate.integrations.shared_secret import refusal
from gate.integrations.skypilot import apply_policy
from gate.integrations.skypilot_settings import PolicySettings

log = logging.getLogger("gate.integrations.skypilot")  # one logger for every decision line

MAX_BODY_BYTES = 4 * 1024 * 1024
"""A request body past this is refused: a task YAML is kilobytes."""
REALM = 'Basic realm="budget-gate", charset="UTF-8"'


@dataclass(frozen=True, slots=True)
class HttpAnswer:
    """What the HTTP endpoint answers: status, body, its media type and extra headers."""

    status: int
    body: str
    media_type: str = "text/plain"
    headers: dict[str, str] = field(default_factory=dict)


def answer_http(
    body: bytes,
    settings: PolicySettings,
    *,
    authorization: str | None = None,
    secret: str | None = None,
    caller: str = "an unknown address",
) -> HttpAnswer:
    """The RESTful admin policy's answer to one POST, as SkyPilot's client expects it.

    With ``secret`` set, a request that does not prove it gets 401 before its body is read.
    SkyPilot's ``RestfulAdminPolicy`` posts ``UserRequest.encode()`` as a JSON string and
    reads a JSON string holding ``MutatedUserRequest.encode()``; HTTP 400 rejects, with the
    body as the reason. A body that is not such a request is a 400 with what is wrong; a
    bug of ours is a 500 (SkyPilot's client then refuses the launch), logged with its
    traceback.
    """
    if secret is not None:
        why = refusal(authorization, secret)
        if why is not None:
            log.warning("refused an unauthenticated request from %s: %s", caller, why)
            message = f"budget-gate: unauthenticated request refused: {why}"
            return HttpAnswer(401, message, headers={"WWW-Authenticate": REALM})
    try:
        return _answer(body, settings)
    except Exception as exc:  # NOTE: a bug; the launch is refused all the same
        log.exception("internal error answering a request: %s", exc)
        return HttpAnswer(500, f"budget-gate: internal error, launch refused: {_line(exc)}")
    finally:
        _forget_traceback_limit()


def _answer(body: bytes, settings: PolicySettings) -> HttpAnswer:
    if len(body) > MAX_BODY_BYTES:
        return HttpAnswer(400, f"budget-gate: malformed request: body over {MAX_BODY_BYTES} bytes")
    try:
        user_request = _decode(body)
    except Exception as exc:  # SkyPilot's decoder raises anything on bad input
        return HttpAnswer(400, f"budget-gate: malformed request: {_line(exc)}")
    try:
        mutated = apply_policy(user_request, settings)
    except sky_exceptions.UserRequestRejectedByPolicy as exc:
        return HttpAnswer(400, str(exc))
    return HttpAnswer(200, json.dumps(mutated.encode()), "application/json")


def _line(exc: BaseException) -> str:
    reason = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else "unreadable"
    return f"{type(exc).__name__}: {reason}"


def _forget_traceback_limit() -> None:
    """Undo the ``sys.tracebacklimit = 0`` that SkyPilot leaves behind.

    NOTE: ``sky.utils.ux_utils.print_exception_no_traceback`` sets it to 0 and restores it
    only when no exception passes through, so one malformed task would leave every later
    error of this server logged without its traceback. Nothing here wants a limit of 0.
    """
    if getattr(sys, "tracebacklimit", None) == 0:
        del sys.tracebacklimit


def _decode(body: bytes) -> sky.UserRequest:
    encoded = json.loads(body)
    if not isinstance(encoded, str):
        raise ValueError(
            f"expected a JSON string holding sky.UserRequest.encode(), got {type(encoded).__name__}"
        )
    return sky.UserRequest.decode(encoded)
