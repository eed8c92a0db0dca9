"""The SkyPilot admin policy: launch only tasks whose spec is cleared and that match it.

SkyPilot calls an admin policy for every request on its API server (``admin_policy:`` in
its config, a class path or a URL). :class:`BudgetGatePolicy` looks at launch-like requests
(``launch``, ``exec``, ``jobs.launch``): the task names its spec in the env var
``BUDGET_GATE_SPEC`` (a path in the repository the policy is configured with); the spec is
judged by the same evaluator, with the same ledger view, as ``budget-gate verify`` (valid,
no error findings, a fresh approval when one is needed, room in the monthly budget); the
task's accelerator, GPU count (per node × nodes) and spot setting must match the spec's
``resources`` (a MIG spec is priced as whole GPUs, which SkyPilot asks for, and refused). A
cleared task is mutated to carry the spec's run tags as env vars. Every rejection is one
line: what, why, and the command that fixes it. Imports SkyPilot; nothing else in ``gate``
imports this module except the HTTP side (:mod:`gate.integrations.skypilot_endpoint`) and
``budget-gate serve skypilot-policy``.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
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
from gate.errors import BackendError, InputError, InputErrors
from gate.estimate.prices import load_catalog
from gate.evaluation.evaluate import Evaluation, Evaluator
from gate.evaluation.launching import LAUNCH_KEY_ENV, record_launch
from gate.evaluation.report import SpecResult
from gate.formats import Format, sniff
from gate.formats.model import FactMap, Origin, Source, Traced
from gate.integrations import open_ledger
from gate.integrations.mlflow.patience import Patience
from gate.integrations.mlflow.tracking_uri import redact, resolve_tracking_uri
from gate.ledger import tracking
from gate.ledger.view import LedgerView
from gate.money import format_money
from gate.policy.findings import Outcome
from gate.policy.loader import PolicySet
from gate.spec.experiment import Experiment
from gate.spec.facts import ENV_PREFIX
from gate.spec.loader import load_bytes
from gate.spec.trial import Capacity

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
        Also checks ``BUDGET_GATE_LEDGER_TIMEOUT``, read by the ledger at each request.

        Raises:
            gate.errors.InputError: a value is malformed (one line: which, and the fix).
        """
        repo = Path(_plain("BUDGET_GATE_REPO", environ.get("BUDGET_GATE_REPO") or os.getcwd()))
        if not repo.is_dir():
            raise InputError(
                f"BUDGET_GATE_REPO is {str(repo)!r}, not a directory",
                hint="set it to the checkout that holds the specs and policies",
            )
        policy_dir = repo / _plain(
            "BUDGET_GATE_POLICY_DIR", environ.get("BUDGET_GATE_POLICY_DIR", "policies")
        )
        missing = environ.get("BUDGET_GATE_MISSING_SPEC", MissingSpec.REJECT.value)
        try:
            missing_spec = MissingSpec(missing)
        except ValueError:
            raise InputError(
                f"BUDGET_GATE_MISSING_SPEC is {missing[:40]!r}", hint="set it to reject or allow"
            ) from None
        Patience.from_env(environ)
        uri = _plain("MLFLOW_TRACKING_URI", resolve_tracking_uri(None, environ))
        return cls(repo, policy_dir, uri, missing_spec)


def _plain(name: str, value: str) -> str:
    """``value`` unless it holds a control character (a NUL cannot name a path or URL)."""
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise InputError(f"{name} holds a control character ({value[:40]!r})", hint=f"fix {name}")
    return value


class Rejection(Exception):
    """A request the policy refuses; the message is the one line SkyPilot shows the user."""


class BudgetGatePolicy(sky.AdminPolicy):
    """``admin_policy: gate.integrations.skypilot.BudgetGatePolicy`` in the SkyPilot config.

    Configured from the API server's environment (:meth:`PolicySettings.from_env`).
    """

    @classmethod
    def validate_and_mutate(cls, user_request: sky.UserRequest) -> sky.MutatedUserRequest:
        """Refuse a launch that budget-gate does not clear; tag the task of one it does.

        Settings that cannot be read refuse every launch (fail closed), saying which.
        """
        try:
            settings = PolicySettings.from_env(os.environ)
        except InputError as exc:
            raise sky_exceptions.UserRequestRejectedByPolicy(
                f"budget-gate: the API server's settings are invalid, so no launch is "
                f"cleared: {exc}"
            ) from None
        return apply_policy(user_request, settings)


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
    key = uuid.uuid4().hex  # NOTE: never the task's own: a task must not join another launch
    if not named and not _carries_facts(task):
        return _no_spec(task, asks, settings)
    if named:
        relative, content = _read_spec(named, settings.repo)
        sweep = _format_of(content, relative) is not Format.BUDGET_GATE
        launch = _launch_facts(task, asks) if sweep else {}
    else:  # the task says what it runs: judged as a SkyPilot file of its own
        relative, content, launch = _task_name(task), _task_yaml(task), {}
    evaluation, view = _evaluate(relative, content, settings, now, key, launch)
    if not named:
        _check_self_cleared(evaluation.result, relative)
    if evaluation.spec is not None:
        _check_match(task, asks, evaluation.spec, relative, exec_request=request == "exec")
        if evaluation.spec.resources.mig_profile is not None and asks:
            whole = _whole_gpu_cost(relative, content, settings, now)
            raise _mig_rejection(task, asks[0], evaluation, relative, whole)
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
    """Every resource candidate of ``task`` that asks for an accelerator.

    SkyPilot reads ``A100:inf`` and ``A100:nan`` as counts; they are no number of GPUs.
    """
    nodes = int(task.num_nodes or 1)
    asks = [
        GpuAsk(name, float(count), nodes, bool(resources.use_spot))
        for resources in task.resources
        for name, count in (resources.accelerators or {}).items()
    ]
    for ask in asks:
        if not math.isfinite(ask.per_node) or ask.per_node <= 0:
            raise Rejection(
                f"task {task.name or '(unnamed)'!r} asks for {ask.accelerator}:{ask.per_node} — "
                "not a number of GPUs; ask for a whole count, e.g. "
                f"{ask.accelerator}:8"
            )
    return asks


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


def _format_of(content: bytes, relative: str) -> Format:
    """The named file's format (a spec when it does not read: the evaluation says why)."""
    try:
        return sniff(load_bytes(content, relative).data)
    except (InputError, InputErrors):
        return Format.BUDGET_GATE


def _carries_facts(task: sky.Task) -> bool:
    """Whether the task says what it runs itself (``X_BUDGET_GATE_*`` envs)."""
    return any(name.startswith(ENV_PREFIX) for name in task.envs or {})


def _task_name(task: sky.Task) -> str:
    """How a task judged by itself is named in messages and in the ledger."""
    return f"skypilot-task:{task.name or 'unnamed'}"


def _task_yaml(task: sky.Task) -> bytes:
    """The task as SkyPilot reads it back (``Task.to_yaml_config``), as a YAML document."""
    import yaml

    config = task.to_yaml_config()
    kept = {k: config[k] for k in ("name", "resources", "num_nodes", "run", "envs") if k in config}
    return yaml.safe_dump(kept, sort_keys=False).encode()


def _launch_facts(task: sky.Task, asks: list[GpuAsk]) -> FactMap:
    """What the task runs a sweep on (its dearest ask): the sweep file's missing hardware."""
    if not asks:
        return {}
    ask = max(asks, key=lambda a: a.total)
    source = Source(Origin.EXTENSION, f"the SkyPilot task {task.name or '(unnamed)'} launching it")
    facts = {
        "accelerator": Traced(ask.accelerator, source),
        "capacity": Traced("spot" if ask.spot else "on-demand", source),
    }
    if ask.total == int(ask.total):
        facts["gpus_per_trial"] = Traced(int(ask.total), source)
    return facts


def _check_self_cleared(result: SpecResult, name: str) -> None:
    """A task judged by itself has no path an approval could be bound to: say how to get one."""
    if result.outcome is Outcome.APPROVAL_REQUIRED:
        raise Rejection(
            f"{name} needs an approval, and an approval is bound to a spec's path in the "
            f"repository — commit the task YAML, name it in envs: {{{SPEC_ENV}: "
            "tasks/NAME.yaml}, and approve it (budget-gate approve tasks/NAME.yaml --by NAME "
            "--reason TEXT)"
        )


def _evaluate(
    relative: str,
    content: bytes,
    settings: PolicySettings,
    now: dt.datetime,
    key: str,
    launch: FactMap | None = None,
) -> tuple[Evaluation, LedgerView]:
    """The spec judged as ``budget-gate verify`` judges it (approvals count).

    ``launch``: the task's hardware, for an engine's sweep file that does not name it.
    """
    uri = settings.tracking_uri
    view = LedgerView(lambda trust: open_ledger(uri, trust), now, approvals=True, where=redact(uri))
    evaluator = Evaluator(
        PolicySet(settings.policy_dir), load_catalog(), now.date(), ledger=view, launch_key=key
    )
    try:
        return judge_spec(evaluator, relative, content, str(settings.policy_dir), launch), view
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
    slices = f" {want.mig_profile} MIG slices" if want.mig_profile else ""
    cleared = f"{relative} is cleared for {want.gpus_per_trial} × {want.accelerator}{slices}"
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


def _mig_rejection(
    task: sky.Task, ask: GpuAsk, evaluation: Evaluation, relative: str, whole: str | None
) -> Rejection:
    """A MIG spec's task asks for whole GPUs: SkyPilot has no name for a MIG slice.

    NOTE: SkyPilot 0.14 names accelerators by GPU model only; on Kubernetes a node whose
    GPUs are split into MIG slices reports the whole GPU's name. A task asking for
    ``A100-80GB:8`` holds 8 whole GPUs whatever the spec says, so it is priced that way,
    and the spec must say so before it launches.
    """
    spec, result = evaluation.spec, evaluation.result
    assert spec is not None and result.estimate is not None
    want = spec.resources
    priced = f"{format_money(result.estimate.worst.cost, result.currency)} worst case"
    as_whole = f", {whole} worst case as whole GPUs" if whole else ""
    return Rejection(
        f"task {task.name or '(unnamed)'!r} asks for {ask} whole GPUs{as_whole}, but "
        f"{relative} is priced as {want.gpus_per_trial} × {want.mig_profile} MIG slices "
        f"({priced}) and SkyPilot cannot ask for a MIG slice — remove mig_profile from "
        f"{relative} and clear it again for whole GPUs (budget-gate check {relative})"
    )


def _whole_gpu_cost(
    relative: str, content: bytes, settings: PolicySettings, now: dt.datetime
) -> str | None:
    """The spec's worst case with ``mig_profile`` removed, under its policy and prices."""
    import yaml

    data = load_bytes(content, relative).data
    data["resources"] = {k: v for k, v in data["resources"].items() if k != "mig_profile"}
    whole = yaml.safe_dump(data, sort_keys=False).encode()
    evaluator = Evaluator(PolicySet(settings.policy_dir), load_catalog(), now.date())
    result = evaluator.evaluate(relative, whole)
    if result.estimate is None:
        return None
    return format_money(result.estimate.worst.cost, result.currency)


def _check_cleared(result: SpecResult) -> None:
    """Pass only what ``budget-gate verify`` passes (exit 0)."""
    refused = refusal(result)
    if refused is not None:
        raise Rejection(refused.reason)
