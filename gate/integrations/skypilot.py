"""The SkyPilot admin policy: launch only tasks whose spec is cleared and that match it.

SkyPilot calls an admin policy for every request on its API server (``admin_policy:`` in
its config, a class path or a URL). :class:`BudgetGatePolicy` looks at launch-like requests
(``launch``, ``exec``, ``jobs.launch``): the task names its spec in the env var
``BUDGET_GATE_SPEC`` (a path in the repository the policy is configured with); the spec is
judged by the same evaluator, with the same ledger view, as ``budget-gate verify`` (valid,
no error findings, a fresh approval when one is needed, room in the monthly budget); the
task's accelerator, GPU count (per node × nodes) and spot setting must match the spec's
``resources``. A cleared task is mutated to carry the spec's run tags as env vars. Every
rejection is one line: what, why, and the command that fixes it. Imports SkyPilot; nothing
else in ``gate`` imports this module except ``budget-gate serve skypilot-policy``.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import sky
from sky import exceptions as sky_exceptions

from gate.admission.asks import GpuAsk
from gate.admission.asks import matches as _matches
from gate.admission.clearance import Unjudged, judge_spec, refusal
from gate.admission.spec_file import SpecRefError, read_spec
from gate.errors import BackendError, InputError
from gate.estimate.prices import load_catalog
from gate.evaluation.evaluate import Evaluation, Evaluator
from gate.evaluation.launching import LAUNCH_KEY_ENV, record_launch
from gate.evaluation.report import SpecResult
from gate.integrations import open_ledger
from gate.integrations.mlflow.tracking_uri import redact, resolve_tracking_uri
from gate.ledger import tracking
from gate.ledger.records import LedgerView
from gate.policy.loader import PolicySet
from gate.spec.experiment import Capacity, Experiment

log = logging.getLogger(__name__)

SPEC_ENV = "BUDGET_GATE_SPEC"
"""The task env var that names its spec, relative to the repository."""
RUN_TAGS_ENV = "BUDGET_GATE_RUN_TAGS"
"""Set on a cleared task: every run tag as one JSON object, for ``mlflow.start_run(tags=)``."""
CHECKED_REQUESTS = frozenset({"launch", "exec", "jobs.launch"})
"""SkyPilot request names judged; others (controllers, optimize, validate) pass unchanged."""


class MissingSpec(str, Enum):
    """What happens to a GPU task that names no spec."""

    REJECT = "reject"
    ALLOW = "allow"


@dataclass(frozen=True, slots=True)
class PolicySettings:
    """Where the specs, policies and ledger are, and what to do with a GPU task without spec."""

    repo: Path
    policy_dir: Path
    tracking_uri: str
    missing_spec: MissingSpec = MissingSpec.REJECT

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> PolicySettings:
        """Settings from the API server's environment.

        ``BUDGET_GATE_REPO`` (default: the working directory), ``BUDGET_GATE_POLICY_DIR``
        (default ``policies``, relative to the repository),
        ``MLFLOW_TRACKING_URI`` and ``BUDGET_GATE_MISSING_SPEC`` (``reject`` or ``allow``).
        """
        repo = Path(environ.get("BUDGET_GATE_REPO") or os.getcwd())
        policy_dir = repo / environ.get("BUDGET_GATE_POLICY_DIR", "policies")
        missing = environ.get("BUDGET_GATE_MISSING_SPEC", MissingSpec.REJECT.value)
        try:
            missing_spec = MissingSpec(missing)
        except ValueError:
            raise InputError(
                f"BUDGET_GATE_MISSING_SPEC is {missing!r}", hint="set it to reject or allow"
            ) from None
        return cls(repo, policy_dir, resolve_tracking_uri(None, environ), missing_spec)


class Rejection(Exception):
    """A request the policy refuses; the message is the one line SkyPilot shows the user."""


class BudgetGatePolicy(sky.AdminPolicy):
    """``admin_policy: gate.integrations.skypilot.BudgetGatePolicy`` in the SkyPilot config.

    Configured from the API server's environment (:meth:`PolicySettings.from_env`).
    """

    @classmethod
    def validate_and_mutate(cls, user_request: sky.UserRequest) -> sky.MutatedUserRequest:
        """Refuse a launch that budget-gate does not clear; tag the task of one it does."""
        return apply_policy(user_request, PolicySettings.from_env(os.environ))


def apply_policy(
    user_request: sky.UserRequest, settings: PolicySettings, now: dt.datetime | None = None
) -> sky.MutatedUserRequest:
    """The policy's decision on one request, as SkyPilot expects it.

    Raises:
        sky.exceptions.UserRequestRejectedByPolicy: the one-line reason.
    """
    task = user_request.task
    request = getattr(user_request.request_name, "value", str(user_request.request_name))
    try:
        envs = judge(task, request, settings, now or dt.datetime.now(dt.timezone.utc))
    except Rejection as exc:
        log.info("rejected %s of task %r by %s: %s", request, task.name, _who(user_request), exc)
        raise sky_exceptions.UserRequestRejectedByPolicy(f"budget-gate: {exc}") from None
    if envs:
        task.update_envs(envs)
        spec = envs[tracking_env(tracking.SPEC)]
        log.info(
            "allowed %s of task %r by %s under %s", request, task.name, _who(user_request), spec
        )
    return sky.MutatedUserRequest(task=task, skypilot_config=user_request.skypilot_config)


def _who(user_request: sky.UserRequest) -> str:
    user = user_request.user
    return user.name if user is not None and user.name else "an unnamed user"


def judge(
    task: sky.Task, request: str, settings: PolicySettings, now: dt.datetime
) -> dict[str, str]:
    """The env vars a cleared task gets (empty: passed unchanged), or :class:`Rejection`."""
    if request not in CHECKED_REQUESTS:
        return {}
    asks = gpu_asks(task)
    named = (task.envs or {}).get(SPEC_ENV, "").strip()
    if not named:
        return _no_spec(task, asks, settings)
    relative, content = _read_spec(named, settings.repo)
    key = uuid.uuid4().hex  # NOTE: never the task's own: a task must not join another launch
    evaluation, view = _evaluate(relative, content, settings, now, key)
    if evaluation.spec is not None:
        _check_match(task, asks, evaluation.spec, relative, exec_request=request == "exec")
    _check_cleared(evaluation.result)
    assert evaluation.spec is not None and evaluation.result.fingerprint is not None
    _launch(view, evaluation, key)
    approval = evaluation.result.approval.approval if evaluation.result.approval else None
    tags = tracking.spec_tags(
        evaluation.spec,
        evaluation.result.fingerprint,
        relative,
        approval_id=approval.record_id if approval else None,
    )
    tags[tracking.SUBMITTED_AT] = now.isoformat(timespec="seconds")
    return tag_envs(tags) | {LAUNCH_KEY_ENV: key}


def _launch(view: LedgerView, evaluation: Evaluation, key: str) -> None:
    """Record the admitted task's launch when the ledger is in play (fail closed if not)."""
    result = evaluation.result
    if result.approval is None and result.budget is None:
        return
    from gate.integrations.signing import SIGNER_ENV, signer_from

    try:
        signer = signer_from(os.environ, principal="skypilot-policy")
        by = signer.principal if signer else os.environ.get(SIGNER_ENV, "skypilot-policy")
        record_launch(view, evaluation, launch_key=key, by=by, signer=signer)
    except (BackendError, InputError) as exc:
        raise Rejection(
            f"{result.file} is cleared, but its launch could not be recorded ({exc}) — "
            "launches are refused until the ledger records them (fail closed)"
        ) from None


def tag_envs(tags: Mapping[str, str]) -> dict[str, str]:
    """Run tags as env vars, one each and all of them as JSON in ``BUDGET_GATE_RUN_TAGS``.

    ``budget_gate.fingerprint`` becomes ``BUDGET_GATE_FINGERPRINT``, and so on.
    """
    envs = {tracking_env(name): value for name, value in tags.items()}
    envs[RUN_TAGS_ENV] = json.dumps(dict(tags), sort_keys=True)
    return envs


def tracking_env(tag: str) -> str:
    """The env var that carries run tag ``tag`` (``budget_gate.spec`` → ``BUDGET_GATE_SPEC``)."""
    return tag.upper().replace(".", "_")


def gpu_asks(task: sky.Task) -> list[GpuAsk]:
    """Every resource candidate of ``task`` that asks for an accelerator."""
    nodes = int(task.num_nodes or 1)
    return [
        GpuAsk(name, float(count), nodes, bool(resources.use_spot))
        for resources in task.resources
        for name, count in (resources.accelerators or {}).items()
    ]


def _no_spec(task: sky.Task, asks: list[GpuAsk], settings: PolicySettings) -> dict[str, str]:
    if not asks:
        return {}
    what = f"task {task.name or '(unnamed)'!r} asks for {asks[0]} but names no spec"
    if settings.missing_spec is MissingSpec.ALLOW:
        log.warning("%s: allowed, because BUDGET_GATE_MISSING_SPEC=allow", what)
        return {}
    raise Rejection(
        f"{what} — add envs: {{{SPEC_ENV}: experiments/NAME.yaml}} (its path in "
        f"{settings.repo}) and clear it (budget-gate check experiments/NAME.yaml)"
    )


def _read_spec(named: str, repo: Path) -> tuple[str, bytes]:
    """The spec's normalized path in the repository and its bytes, or why not."""
    try:
        return read_spec(named, repo, subject=f"{SPEC_ENV}={named}")
    except SpecRefError as exc:
        raise Rejection(str(exc)) from None


def _evaluate(
    relative: str, content: bytes, settings: PolicySettings, now: dt.datetime, key: str
) -> tuple[Evaluation, LedgerView]:
    """The spec judged as ``budget-gate verify`` judges it (approvals count)."""
    uri = settings.tracking_uri
    view = LedgerView(lambda trust: open_ledger(uri, trust), now, approvals=True, where=redact(uri))
    evaluator = Evaluator(
        PolicySet(settings.policy_dir), load_catalog(), now.date(), ledger=view, launch_key=key
    )
    try:
        return judge_spec(evaluator, relative, content, str(settings.policy_dir)), view
    except Unjudged as exc:
        raise Rejection(str(exc)) from None


def _check_match(
    task: sky.Task, asks: list[GpuAsk], spec: Experiment, relative: str, *, exec_request: bool
) -> None:
    """The task asks for what the spec was priced with: accelerator, GPUs, spot or not.

    An ``exec`` that names no accelerator runs on its cluster as launched (checked then).
    """
    want = spec.resources
    spot = want.capacity is Capacity.SPOT
    cleared = f"{relative} is cleared for {want.gpus_per_trial} × {want.accelerator}"
    name = task.name or "(unnamed)"
    if not asks and not exec_request:
        raise Rejection(
            f"task {name!r} asks for no GPU, but {cleared} (resources.gpus_per_trial) — "
            f"set resources: {{accelerators: {want.accelerator}:{want.gpus_per_trial}}}"
        )
    for ask in asks:
        if not _matches(ask, spec):
            offer = "spot" if ask.spot else "on-demand"
            raise Rejection(
                f"task {name!r} asks for {ask} {offer}, but {cleared} {want.capacity.value} "
                f"(resources.gpus_per_trial) — ask for {want.accelerator}:{want.gpus_per_trial} "
                f"in all with use_spot: {str(spot).lower()}, or change the spec and clear it "
                f"again (budget-gate check {relative})"
            )


def _check_cleared(result: SpecResult) -> None:
    """Pass only what ``budget-gate verify`` passes (exit 0)."""
    refused = refusal(result)
    if refused is not None:
        raise Rejection(refused.reason)


MAX_BODY_BYTES = 4 * 1024 * 1024
"""A request body past this is refused: a task YAML is kilobytes."""


@dataclass(frozen=True, slots=True)
class HttpAnswer:
    """What the HTTP endpoint answers: status, body and its media type."""

    status: int
    body: str
    media_type: str = "text/plain"


def answer_http(body: bytes, settings: PolicySettings) -> HttpAnswer:
    """The RESTful admin policy's answer to one POST body, as SkyPilot's client expects it.

    SkyPilot's ``RestfulAdminPolicy`` posts ``UserRequest.encode()`` as a JSON string and
    reads a JSON string holding ``MutatedUserRequest.encode()``; HTTP 400 rejects, with the
    body as the reason. A body that is not such a request is a 400 with what is wrong.
    """
    if len(body) > MAX_BODY_BYTES:
        return HttpAnswer(400, f"budget-gate: malformed request: body over {MAX_BODY_BYTES} bytes")
    try:
        user_request = _decode(body)
    except Exception as exc:  # SkyPilot's decoder raises anything on bad input
        reason = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else "unreadable"
        return HttpAnswer(400, f"budget-gate: malformed request: {type(exc).__name__}: {reason}")
    try:
        mutated = apply_policy(user_request, settings)
    except sky_exceptions.UserRequestRejectedByPolicy as exc:
        return HttpAnswer(400, str(exc))
    return HttpAnswer(200, json.dumps(mutated.encode()), "application/json")


def _decode(body: bytes) -> sky.UserRequest:
    encoded = json.loads(body)
    if not isinstance(encoded, str):
        raise ValueError(
            f"expected a JSON string holding sky.UserRequest.encode(), got {type(encoded).__name__}"
        )
    return sky.UserRequest.decode(encoded)
