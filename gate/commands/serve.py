"""``budget-gate serve skypilot-policy``: the SkyPilot admin policy as an HTTP endpoint.

(``serve kueue-admission`` is :mod:`gate.commands.serve_kueue`.)

Starlette on uvicorn (both come with SkyPilot): ``POST /`` takes what SkyPilot's
``RestfulAdminPolicy`` sends and answers the mutated request, or 400 with the reason, or
401 when the caller does not send the shared secret; ``GET /health`` answers ``ok``. The
decision is :mod:`gate.integrations.skypilot`'s, the HTTP side
:mod:`gate.integrations.skypilot_endpoint`'s. ``--ssl-certfile``/``--ssl-keyfile`` serve
HTTPS with uvicorn's TLS; a TLS-terminating proxy in front works as well
(``docs/skypilot-policy.md``).
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
from gate.integrations.mlflow.patience import Patience
from gate.integrations.mlflow.tracking_uri import redact, resolve_tracking_uri
from gate.integrations.shared_secret import read_secret, refusal
from gate.integrations.skypilot_settings import MissingSpec, PolicySettings
from gate.integrations.whole_files import why_not_regular

if TYPE_CHECKING:
    from starlette.applications import Starlette


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; exit 3 when the extra is missing or the port is taken."""
    if args.service == "kueue-admission":
        from gate.commands import serve_kueue

        return serve_kueue.run(args)
    _require_the_extra()
    repo = Path(args.repo)
    if not repo.is_dir():
        raise InputError(f"--repo {args.repo} is not a directory", hint="give the repository root")
    policy_dir = repo / (args.policy_dir or "policies")  # the ledger's default lies beside it
    settings = PolicySettings(
        repo=repo,
        policy_dir=policy_dir,
        tracking_uri=resolve_tracking_uri(args.tracking_uri, os.environ, policy_dir),
        missing_spec=MissingSpec(args.missing_spec),
    )
    Patience.from_env(os.environ)  # a malformed BUDGET_GATE_LEDGER_TIMEOUT: exit 3 now
    secret = None
    if not args.insecure_no_auth:
        secret = read_secret(args.secret_file, os.environ)
    certfile, keyfile = _tls_files(args.ssl_certfile, args.ssl_keyfile)
    listener = _bind(args.host, args.port)
    try:  # NOTE: every option is checked before SkyPilot is imported (seconds)
        return _serve(listener, settings, secret, (certfile, keyfile))
    finally:
        listener.close()


def _serve(
    listener: socket.socket,
    settings: PolicySettings,
    secret: str | None,
    tls: tuple[str | None, str | None],
) -> int:
    """Import SkyPilot and the HTTP server, then listen on ``listener`` until interrupted."""
    try:
        import uvicorn

        app = _app(settings, secret)  # imports SkyPilot (the endpoint) and Starlette
    except ImportError as exc:  # present but broken (find_spec saw the package)
        raise _needs_skypilot(str(exc)) from None
    host, port = listener.getsockname()[:2]
    try:  # NOTE: only now, so a caller is answered and never left waiting on the import
        listener.listen(128)
    except OSError as exc:  # another server bound the same port meanwhile, and listens
        raise _cannot_listen(host, port, exc) from None
    log_decisions()
    callers = (
        "callers must send the shared secret (HTTP basic auth)"
        if secret is not None
        else "WITHOUT authentication (--insecure-no-auth): anyone who reaches it can ask"
    )
    certfile, keyfile = tls
    print(
        f"budget-gate: SkyPilot admin policy on {'https' if certfile else 'http'}://{host}:{port}/ "
        f"— specs in {settings.repo}, "
        f"policies in {settings.policy_dir}, ledger {redact(settings.tracking_uri)}; "
        f"GPU tasks without a spec: {settings.missing_spec.value}; {callers}",
        file=sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(  # NOTE: a client that hangs must not hold up a stop forever
        app,
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=5,
        ssl_certfile=certfile,
        ssl_keyfile=keyfile,
    )
    uvicorn.Server(config).run(sockets=[listener])
    return 0


def _app(settings: PolicySettings, secret: str | None) -> Starlette:
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    from gate.integrations.skypilot_endpoint import MAX_BODY_BYTES, answer_http

    async def policy(request: Request) -> Response:
        authorization = request.headers.get("authorization")
        caller = f"{request.client.host}:{request.client.port}" if request.client else "?"
        body = b""
        if secret is None or refusal(authorization, secret) is None:  # else: left unread
            async for chunk in request.stream():
                body += chunk
                if len(body) > MAX_BODY_BYTES:
                    break  # answer_http refuses it; reading on would only fill memory
        answer = await run_in_threadpool(
            lambda: answer_http(
                body, settings, authorization=authorization, secret=secret, caller=caller
            )
        )
        return Response(
            answer.body,
            status_code=answer.status,
            media_type=answer.media_type,
            headers=answer.headers,
        )

    async def health(request: Request) -> Response:
        return PlainTextResponse("ok")

    routes = [Route("/", policy, methods=["POST"]), Route("/health", health, methods=["GET"])]
    return Starlette(routes=routes)


def _require_the_extra() -> None:
    """Exit 3 naming the extra when SkyPilot or the HTTP server is missing (nothing imported)."""
    from importlib.util import find_spec

    missing = [name for name in ("sky", "uvicorn", "starlette") if find_spec(name) is None]
    if missing:
        raise _needs_skypilot(f"No module named {missing[0]!r}")


def _needs_skypilot(reason: str) -> InputError:
    return InputError(
        f"the SkyPilot admin policy needs SkyPilot ({reason})",
        hint="pip install 'budget-gate[skypilot]'",
    )


def _tls_files(certfile: str | None, keyfile: str | None) -> tuple[str | None, str | None]:
    """The certificate and key, once both are given and load; neither for plain HTTP."""
    if certfile is None and keyfile is None:
        return None, None
    if certfile is None or keyfile is None:
        raise InputError(
            "--ssl-certfile and --ssl-keyfile go together", hint="give both PEM files, or neither"
        )
    for option, path in (("--ssl-certfile", certfile), ("--ssl-keyfile", keyfile)):
        refused = why_not_regular(path, option)  # NOTE: a FIFO hung the load below
        if refused is not None:
            raise InputError(refused, hint="give a PEM certificate (chain) and its private key")
    import ssl

    try:  # NOTE: load them now, so a wrong file is exit 3 here, not a crash in uvicorn
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(certfile, keyfile)
    except (OSError, ssl.SSLError) as exc:
        raise InputError(
            f"--ssl-certfile {certfile} / --ssl-keyfile {keyfile}: {exc}",
            hint="give a PEM certificate (chain) and its private key",
        ) from None
    return certfile, keyfile


def _bind(host: str, port: int) -> socket.socket:
    """The socket, bound here so a taken port is a clear error, not a crash.

    :func:`_serve` listens on it once the server is ready.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as exc:
        listener.close()
        raise _cannot_listen(host, port, exc) from None
    return listener


def _cannot_listen(host: str, port: int, exc: OSError) -> InputError:
    return InputError(
        f"cannot listen on {host}:{port}: {exc.strerror}",
        hint="choose another --port (0 picks a free one) or --host",
    )


def log_decisions() -> None:
    """One line per decision on stderr.

    NOTE: not propagated: SkyPilot gives the root logger a handler of its own, which
    printed every decision a second time.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("budget-gate: %(message)s"))
    logger = logging.getLogger("gate.integrations.skypilot")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
