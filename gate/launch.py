"""Launch-time verification for Python launch scripts, behind ``gate.require_approval``.

The same decision as ``budget-gate verify``, as a function that returns what a launch
script needs (the approval and the tags for its MLflow runs) or raises a clear exception;
``gate.open_guard`` clears the spec the same way and builds its runtime guard. Both record
the launch in the ledger (:mod:`gate.evaluation.launching`) when the ledger is in play (the
spec needed an approval, or its policy has a monthly budget): one record per launch key,
which they take from ``BUDGET_GATE_LAUNCH_KEY`` or make and export there, so the processes
a launch starts join it instead of launching again. In one process a launch holds one call
of each: a second ``require_approval`` (or a second ``open_guard``) is a launch of its own,
so a loop that launches again and again uses the approval each time.
"""

from __future__ import annotations

import datetime as dt
import getpass
import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from gate.admission.spec_file import check_launched
from gate.errors import ApprovalRequired, InputError, PolicyViolation
from gate.estimate.prices import load_catalog
from gate.evaluation.evaluate import Evaluation, Evaluator
from gate.evaluation.launching import LAUNCH_KEY_ENV, checked_key, record_launch
from gate.evaluation.report import SpecResult, absent_ledger
from gate.guard.core import Guard
from gate.guard.ledger import LedgerCeiling
from gate.guard.limits import limits_for
from gate.integrations import open_ledger
from gate.integrations.git.policy_dir import POLICY_DIR, open_policies
from gate.integrations.git.policy_history import approver_history
from gate.integrations.git.remote import this_repository
from gate.integrations.git.repo import RepoPaths
from gate.integrations.mlflow.tracking_uri import redact, resolve_tracking_uri
from gate.ledger import tracking
from gate.ledger.records import MAX_CLOCK_SKEW, LedgerRecord
from gate.ledger.view import LedgerView
from gate.policy.findings import Outcome
from gate.policy.model import Severity

_log = logging.getLogger(__name__)
_joined: dict[str, set[str]] = {}
"""Launch keys this process cleared, and by which call (``require_approval``, ``open_guard``)."""
_joined_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class Verification:
    """A spec cleared for launch: its fingerprint, the approval used (if one was needed)."""

    spec: str
    fingerprint: str
    approval: LedgerRecord | None
    result: SpecResult
    tags: dict[str, str] = field(default_factory=dict)
    launch: LedgerRecord | None = None
    """The launch recorded in the ledger (``None`` when the ledger was not in play)."""
    experiment: str = ""
    """The MLflow experiment the spec's runs belong in (``tracking.mlflow_experiment``, else
    its name): ``mlflow.set_experiment`` it, or reconcile and the report will not find them."""

    def run_tags(
        self, trial_id: str | int | None = None, attempt: int | None = None
    ) -> dict[str, str]:
        """Tags for one training run: spec, fingerprint, team, GPUs, approval, trial, attempt."""
        tags = dict(self.tags)
        if trial_id is not None:
            tags[tracking.TRIAL_ID] = str(trial_id)
        if attempt is not None:
            tags[tracking.ATTEMPT] = str(attempt)
        return tags


def require_approval(
    spec: str | Path,
    *,
    policy_dir: str | Path | None = None,
    tracking_uri: str | None = None,
    now: dt.datetime | None = None,
    launch_key: str | None = None,
) -> Verification:
    """Clear ``spec`` for launch, as ``budget-gate verify`` does, or raise why not.

    Returns a :class:`Verification` with the approval used (``None`` when none was needed)
    and ``run_tags(trial_id)`` for the experiment's MLflow runs. The policies are
    ``policy_dir``, else ``policies/`` at the root of the git work tree of the current
    directory, as ``budget-gate verify`` finds them (else the built-in default policy, which
    is logged and named in ``result.policy``). The ledger is at
    ``tracking_uri``, else ``MLFLOW_TRACKING_URI``, else ``mlflow.db`` at the root of the
    git work tree that holds the policy directory (beside the built-in default: the current
    directory's), from whatever directory the script runs; it is
    read only when the spec needs an approval or its policy a monthly budget. ``now``
    must be the current time (within a clock skew): a launch is judged when it happens,
    and another moment is refused (``budget-gate verify --as-of`` judges one without
    clearing a launch).
    The launch is recorded under ``launch_key`` (else ``BUDGET_GATE_LAUNCH_KEY``, else a new
    key, exported there for the processes this one starts). Each call is a launch of its
    own: only the first in a process joins the launch in ``BUDGET_GATE_LAUNCH_KEY``.

    Raises:
        gate.errors.ApprovalRequired: no fresh approval (``.reasons`` says why); exit 2.
        gate.errors.PolicyViolation: the spec breaks the policy; exit 1.
        gate.errors.InputError: the spec or a policy is invalid, the Action never judges
            a spec so named or placed (not ``.yaml``/``.yml``/``.json``, in a submodule), or
            ``now`` is not the current time; exit 3.
        gate.errors.BackendError: the ledger could not be read; exit 4.
        gate.errors.MissingExtra: MLflow is not installed (an InputError naming the extra).
    """
    return _clear(spec, policy_dir, tracking_uri, now, launch_key, "require_approval")[0]


def open_guard(
    spec: str | Path,
    *,
    policy_dir: str | Path | None = None,
    tracking_uri: str | None = None,
    now: dt.datetime | None = None,
    launch_key: str | None = None,
) -> Guard:
    """A runtime guard for ``spec``, cleared as :func:`require_approval` clears it.

    The ceiling is the approval's amount (re-read from the ledger at most once a minute:
    a revocation stops the search), or the worst-case estimate when nothing needed an
    approval; the red lines, the plateau and the failure limits come from the spec and its
    policy. Hand it to an adapter: :class:`gate.guard.loop.LoopGuard`,
    :class:`gate.guard.optuna.OptunaGuard` or
    :class:`gate.guard.ray.RayGuard`. Raises as :func:`require_approval`.
    """
    verification, evaluation, view, uri, key = _clear(
        spec, policy_dir, tracking_uri, now, launch_key, "open_guard"
    )
    estimate = verification.result.estimate
    assert evaluation.spec is not None and evaluation.policy is not None and estimate
    limits = limits_for(evaluation.spec, evaluation.policy, estimate, verification.approval)
    refresh = None
    if verification.approval is not None:
        trust = view.trusted()
        assert trust is not None
        refresh = LedgerCeiling(
            uri,
            trust,
            verification.fingerprint,
            verification.approval.record_id or "",  # none: no match, the first refresh stops
            limits.ceiling,
            (evaluation.policy.approval.approvers, evaluation.spec.metadata.owner),
            view.history,
        )
    return Guard(limits, clock=time.monotonic, refresh=refresh, launch_key=key)


def _clear(
    spec: str | Path,
    policy_dir: str | Path | None,
    tracking_uri: str | None,
    now: dt.datetime | None,
    launch_key: str | None,
    call: str,
) -> tuple[Verification, Evaluation, LedgerView, str, str]:
    moment = _moment(now)
    policies = open_policies(policy_dir, spec=spec)
    if policies.builtin:
        _log.warning("no policies/ directory at the repository root: the built-in default applies")
    if not policies.builtin:
        policies.require_dir()  # NOTE: else its missing folder read as the spec's misplacement
    repo = RepoPaths(policies.policy_dir if not policies.builtin else POLICY_DIR)
    check_launched(spec, repo.root, policies_there=not policies.builtin)  # before any read
    home = None if policies.builtin else policies.policy_dir
    # beside the policies
    uri = resolve_tracking_uri(tracking_uri, os.environ, home, named="tracking_uri")
    key = _launch_key(launch_key, call)
    view = LedgerView(
        lambda trust: open_ledger(uri, trust),
        moment,
        approvals=True,
        where=redact(uri),
        history=approver_history(home),
        locate=partial(this_repository, home),
    )
    evaluator = Evaluator(
        policies, load_catalog(), moment.date(), ledger=view, repo_path=repo, launch_key=key
    )
    evaluation = evaluator.evaluate_spec(str(spec))
    result = evaluation.result
    _say_ledger(view)
    _raise_unless_cleared(result)
    for note in result.approval.notes if result.approval else ():
        _log.warning("approval: %s", note)  # NOTE: a revocation passed over is said
    assert evaluation.spec is not None and result.fingerprint is not None
    approval = result.approval.approval if result.approval else None
    launch = None
    if result.approval is not None or result.budget is not None:
        launch = record_launch(view, evaluation, launch_key=key, **_launcher())
    approval_id = approval.record_id if approval else None
    tags = tracking.spec_tags(
        evaluation.spec, result.fingerprint, evaluation.path or spec, approval_id=approval_id
    )
    verification = Verification(
        evaluation.path or tracking.spec_path(spec),
        result.fingerprint,
        approval,
        result,
        tags,
        launch,
        evaluation.spec.tracking.mlflow_experiment or evaluation.spec.metadata.name,
    )
    if launch_key is None:
        _cleared(key, call)
    return verification, evaluation, view, uri, key


def _moment(now: dt.datetime | None) -> dt.datetime:
    """The moment a launch is judged at: the current time; another ``now`` is refused.

    NOTE: a launch happens now. Judged at a past moment, an approval revoked or expired
    since would clear it (and a later month's budget at a future one), and the launch
    would still be recorded and used: ``verify --as-of`` judges another moment and clears
    no launch, and so the API launches at no moment but the present.
    """
    clock = dt.datetime.now(dt.timezone.utc)
    if now is None:
        return clock
    if now.tzinfo is None or abs(now - clock) > MAX_CLOCK_SKEW:
        raise InputError(
            f"now={now.isoformat()} is not the current time: a launch is cleared only at "
            "the moment it happens (an approval revoked or expired since, or another "
            "month's budget, would clear it)",
            hint="leave now= out to launch; judge another moment with "
            "`budget-gate verify SPEC --as-of TIME`, which clears no launch",
        )
    return now


def _say_ledger(view: LedgerView) -> None:
    """What ``verify`` prints of its ledger read, logged: records unsigned, records ignored."""
    if not view.opened or view.trust is None:
        return
    if view.absent:
        _log.warning("ledger: %s", absent_ledger(view.where))
    warning = view.trust.warning()
    if warning:
        _log.warning("ledger: %s", warning)
    ignored = view.ignored()
    if ignored:
        why = "; ".join(f"{n} {reason}" for reason, n in sorted(ignored.items()))
        _log.warning(
            "ledger: %d records at %s ignored (%s)", sum(ignored.values()), view.where, why
        )


def _launch_key(given: str | None, call: str) -> str:
    """The launch this ``call`` is part of: given, the process's own, or new (and exported).

    NOTE: the exported key is the process's own too, so a second call of the same kind
    would join the first launch and never use the approval again: it starts a new one.
    """
    if given is not None:
        return checked_key(given, "launch_key")
    with _joined_lock:
        current = os.environ.get(LAUNCH_KEY_ENV)
        if current and call not in _joined.get(current, ()):
            return checked_key(current)
        key = uuid.uuid4().hex
        os.environ[LAUNCH_KEY_ENV] = key  # NOTE: the processes this launch starts join it
        return key


def _cleared(key: str, call: str) -> None:
    """Mark ``key`` as cleared by ``call`` in this process, once it was.

    A call refused, or cut off by an outage, used nothing: its retry is the same launch.
    """
    with _joined_lock:
        _joined.setdefault(key, set()).add(call)


def _launcher() -> dict[str, Any]:
    """Who records the launch, and the key that signs it (``BUDGET_GATE_SIGNING_KEY``)."""
    from gate.integrations.signing import SIGNER_ENV, signer_from

    signer = signer_from(os.environ, principal=None)
    by = signer.principal if signer else os.environ.get(SIGNER_ENV) or _os_user()
    return {"by": by, "signer": signer}


def _os_user() -> str | None:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return None


def _raise_unless_cleared(result: SpecResult) -> None:
    def messages(severity: Severity) -> tuple[str, ...]:
        return tuple(
            f"{f.rule_id} {f.message}"
            for f in result.findings
            if f.active and f.severity is severity
        )

    if result.outcome is Outcome.INVALID:
        raise InputError(
            f"{result.file} is not a valid spec:\n" + "\n".join(str(e) for e in result.errors)
        )
    if result.outcome is Outcome.VIOLATION:
        errors = messages(Severity.ERROR) or messages(Severity.WARN)
        raise PolicyViolation(f"{result.file} breaks the policy: " + "; ".join(errors))
    if result.outcome is Outcome.APPROVAL_REQUIRED:
        stale = result.approval.stale if result.approval else ()
        raise ApprovalRequired(
            f"{result.file} needs a fresh approval before launch "
            f"(budget-gate approve {result.file} --by NAME --reason TEXT)",
            reasons=(*messages(Severity.APPROVAL), *stale),
        )
