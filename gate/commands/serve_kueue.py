"""``budget-gate serve kueue-admission``: the Kueue AdmissionCheck controller, until stopped.

Connects to the cluster (kubeconfig or the pod's service account), makes its
AdmissionChecks ``Active``, then decides Workloads as they come (see
:mod:`gate.integrations.kubernetes.controller`). SIGTERM stops it (exit 0). The decisions
themselves are :mod:`gate.admission`'s.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from gate.admission.check_state import Options
from gate.errors import BackendError, InputError
from gate.evaluation.report import absent_ledger
from gate.integrations import open_ledger
from gate.integrations.mlflow.tracking_uri import redact, resolve_tracking_uri
from gate.policy.loader import PolicySet

if TYPE_CHECKING:
    from gate.integrations.kubernetes.controller import Controller

KUBECONFIG_HINT = "give --kubeconfig FILE (and --context NAME) that `kubectl config view` reads"


def run(args: argparse.Namespace) -> int:
    """Run the controller; exit 3 on bad options or a missing extra, 4 when the API fails."""
    try:
        from gate.integrations.kubernetes import api, controller
    except ImportError as exc:
        raise InputError(
            f"the Kueue admission check needs the Kubernetes client ({exc})",
            hint="pip install 'budget-gate[kueue]'",
        ) from None
    repo = Path(args.repo)
    if not repo.is_dir():
        raise InputError(f"--repo {args.repo} is not a directory", hint="give the repository root")
    policy_dir = repo / (args.policy_dir or "policies")  # the ledger's default lies beside it
    settings = controller.Settings(
        repo=repo,
        policy_dir=policy_dir,
        tracking_uri=resolve_tracking_uri(args.tracking_uri, os.environ, policy_dir),
        controller_name=args.controller_name,
        options=Options(
            missing_spec_allowed=args.missing_spec == "allow",
            approval_recheck=args.approval_recheck,
        ),
        resync=float(args.resync),
    )
    # NOTE: a missing MLflow extra or a bad signers file is exit 3 now, not per workload
    ledger = open_ledger(settings.tracking_uri, PolicySet(settings.policy_dir).trust())
    try:
        cluster = api.connect(args.kubeconfig, args.context)
    except api.KubeError as exc:
        raise InputError(str(exc), hint=KUBECONFIG_HINT) from None
    worker = controller.Controller(cluster, settings)
    checks = _activate(worker, cluster.host)
    _log_decisions()
    stop = _stop_on_sigterm()  # NOTE: before it says it runs, so a stop then is clean
    ledger_at = redact(settings.tracking_uri)
    named = ", ".join(sorted(checks)) or (
        f"none yet (an AdmissionCheck with controllerName {settings.controller_name} is "
        f"picked up within {args.resync} s)"
    )
    print(
        f"budget-gate: Kueue admission check controller on {cluster.host} — checks: {named}; "
        f"specs in {repo}, policies in {settings.policy_dir}, ledger {ledger_at}; "
        f"GPU workloads without a spec: {args.missing_spec}",
        file=sys.stderr,
        flush=True,
    )
    if ledger.absent:
        print(f"budget-gate: warning: {absent_ledger(ledger_at)}", file=sys.stderr, flush=True)
    try:
        worker.run(stop)
    except api.KubeError as exc:
        raise BackendError(f"the Kubernetes API at {cluster.host} failed: {exc}") from None
    return 0


def _activate(worker: Controller, host: str) -> frozenset[str]:
    """Make our AdmissionChecks Active; their names, or a backend error (exit 4)."""
    from gate.integrations.kubernetes import api

    try:
        return worker.activate()
    except api.KubeError as exc:
        if exc.status == 404:  # no kueue.x-k8s.io/v1beta2: no Kueue, or one before 0.15
            raise BackendError(
                f"the Kubernetes API at {host} serves no {api.API_VERSION} "
                f"AdmissionChecks ({exc}) — install Kueue 0.15 or newer"
            ) from None
        raise BackendError(f"the Kubernetes API at {host} failed: {exc}") from None


def _stop_on_sigterm() -> threading.Event:
    """An event SIGTERM sets, by way of a pipe and a thread.

    NOTE: not in the handler itself: a handler runs between two bytecodes of the main
    thread, and ``Event.set`` there deadlocks when that thread holds the Event's lock
    (inside its own ``stop.wait``).
    """
    stop = threading.Event()
    readable, writable = os.pipe()
    os.set_blocking(writable, False)
    signal.signal(signal.SIGTERM, lambda *_: _poke(writable))
    waiter = threading.Thread(target=_set_on_read, args=(readable, stop), daemon=True)
    waiter.start()
    return stop


def _poke(writable: int) -> None:
    with contextlib.suppress(BlockingIOError):  # a full pipe has a byte to read already
        os.write(writable, b"\0")


def _set_on_read(readable: int, stop: threading.Event) -> None:
    os.read(readable, 1)
    stop.set()


def _log_decisions() -> None:
    """One line per decision on stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("budget-gate: %(message)s"))
    logger = logging.getLogger("gate.integrations.kubernetes")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
