"""``budget-gate serve skypilot-policy``: the SkyPilot admin policy as an HTTP endpoint.

(``serve kueue-admission`` is :mod:`gate.commands.serve_kueue`.)

Starlette on uvicorn (both come with SkyPilot): ``POST /`` takes what SkyPilot's
``RestfulAdminPolicy`` sends and answers the mutated request, or 400 with the reason;
``GET /health`` answers ``ok``. The decision itself is :mod:`gate.integrations.skypilot`'s.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gate.errors import InputError
from gate.integrations.mlflow.tracking_uri import redact, resolve_tracking_uri

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from gate.integrations.skypilot import PolicySettings


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; exit 3 when the extra is missing or the port is taken."""
    if args.service == "kueue-admission":
        from gate.commands import serve_kueue

        return serve_kueue.run(args)
    try:
        import uvicorn

        from gate.integrations import skypilot
    except ImportError as exc:
        raise InputError(
            f"the SkyPilot admin policy needs SkyPilot ({exc})",
            hint="pip install 'budget-gate[skypilot]'",
        ) from None
    repo = Path(args.repo)
    if not repo.is_dir():
        raise InputError(f"--repo {args.repo} is not a directory", hint="give the repository root")
    settings = skypilot.PolicySettings(
        repo=repo,
        policy_dir=repo / (args.policy_dir or "policies"),
        tracking_uri=resolve_tracking_uri(args.tracking_uri, os.environ),
        missing_spec=skypilot.MissingSpec(args.missing_spec),
    )
    listener = _bind(args.host, args.port)
    host, port = listener.getsockname()[:2]
    _log_decisions()
    print(
        f"budget-gate: SkyPilot admin policy on http://{host}:{port}/ — specs in {repo}, "
        f"policies in {settings.policy_dir}, ledger {redact(settings.tracking_uri)}; "
        f"GPU tasks without a spec: {settings.missing_spec.value}",
        file=sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(_app(settings), log_level="warning", lifespan="off")
    uvicorn.Server(config).run(sockets=[listener])
    return 0


def _app(settings: PolicySettings) -> Starlette:
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    from gate.integrations.skypilot import MAX_BODY_BYTES, answer_http

    async def policy(request: Request) -> Response:
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY_BYTES:
                break  # answer_http refuses it; reading on would only fill memory
        answer = await run_in_threadpool(answer_http, body, settings)
        return Response(answer.body, status_code=answer.status, media_type=answer.media_type)

    async def health(request: Request) -> Response:
        return PlainTextResponse("ok")

    routes = [Route("/", policy, methods=["POST"]), Route("/health", health, methods=["GET"])]
    return Starlette(routes=routes)


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so a taken port is a clear error, not a crash."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as exc:
        listener.close()
        raise InputError(
            f"cannot listen on {host}:{port}: {exc.strerror}",
            hint="choose another --port (0 picks a free one) or --host",
        ) from None
    listener.listen(128)
    return listener


def _log_decisions() -> None:
    """One line per decision on stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("budget-gate: %(message)s"))
    logger = logging.getLogger("gate.integrations.skypilot")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
