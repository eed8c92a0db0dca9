"""The SkyPilot admin policy: launch only tasks whose spec is cleared and that match it.

SkyPilot calls an admin policy for every request on its API server (``admin_policy:`` in
its config, a class path or a URL). :class:`BudgetGatePolicy` looks at launch-like requests
(``launch``, ``exec``, ``jobs.launch``) and refuses GPU services and pools, whose replicas no
spec prices (:data:`SERVICE_REQUESTS`). A launched task names its spec in the env var
``BUDGET_GATE_SPEC`` (a path in the repository the policy is configured with); the spec is
judged by the same evaluator, with the same ledger view, as ``budget-gate verify`` (valid,
no error findings, a fresh approval when one is needed, room in the monthly budget); the
task must ask for what the spec's ``resources`` were priced with
(:mod:`gate.integrations.skypilot_match`; a MIG spec is priced as whole GPUs, which SkyPilot
asks for, and refused). A cleared task is mutated to carry the spec's run tags as env vars,
and a cleared cluster launch with no autostop of its own to go down when idle.
Every rejection is one line: what, why, and the command that fixes it. This module reads the
task; the settings are :mod:`gate.integrations.skypilot_settings`'s, and reading, judging
and recording the spec a task names is :mod:`gate.integrations.skypilot_spec`'s (neither
imports SkyPilot).
Imports SkyPilot; nothing else in ``gate`` imports this module except the HTTP side
(:mod:`gate.integrations.skypilot_endpoint`) and ``budget-gate serve skypilot-policy``.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import sky
from sky import exceptions as sky_exceptions

from gate.admission.asks import GpuAsk
from gate.admission.spenders import user_refusal
from gate.errors import InputError
from gate.evaluation.launching import LAUNCH_KEY_ENV, checked_key
from gate.formats import Format
from gate.formats.model import FactMap, Origin, Source, Traced
from gate.integrations.skypilot_configs import refuse_config_reach
from gate.integrations.skypilot_match import (
    autodown,
    check_controller,
    check_task,
    gpu_asks,
)
from gate.integrations.skypilot_settings import MissingSpec, PolicySettings
from gate.integrations.skypilot_spec import (
    SPEC_ENV,
    Rejection,
    check_cleared,
    check_self_cleared,
    evaluate_named,
    format_of,
    mig_rejection,
    read_named_spec,
    record_admission,
    whole_gpu_cost,
)
from gate.ledger import tracking
from gate.spec.facts import ENV_PREFIX

if TYPE_CHECKING:
    from gate.evaluation.evaluate import Evaluation

log = logging.getLogger(__name__)

RUN_TAGS_ENV = "BUDGET_GATE_RUN_TAGS"
"""Set on a cleared task: every run tag as one JSON object, for ``mlflow.start_run(tags=)``."""
RELAUNCH = "jobs.launch_cluster"
"""A managed job's cluster, launched by its controller (and again after a preemption).

NOTE: a client names it by setting ``_is_launched_by_jobs_controller`` on a plain ``sky
launch``, so it is judged as a launch that may join the launch key its task carries: the
one the ``jobs.launch`` admission gave it, for as long as a launch may be joined."""
CHECKED_REQUESTS = frozenset({"launch", "exec", "jobs.launch", RELAUNCH})
"""SkyPilot request names judged; others pass unchanged (optimize, validate; a controller with
no GPUs: one with GPUs is refused, :func:`check_controller`)."""
SERVICE_REQUESTS = frozenset(
    {"serve.up", "serve.update", "serve.launch_replica", "jobs.pool_apply"}
)
"""SkyServe services and job pools, and the replicas (pool workers too) their controller
launches: each replica holds the task's GPUs for as long as the service lives, which no
spec prices. With GPUs they are refused, unless GPU tasks without a spec are allowed."""


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
        moment = now or dt.datetime.now(dt.timezone.utc)
        envs = judge(
            task,
            request,
            settings,
            moment,
            user_request.skypilot_config,
            _user(user_request),
            _identities(user_request),
        )
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
    return _user(user_request) or "an unnamed user"


def _identities(user_request: sky.UserRequest) -> tuple[str, ...]:
    """What an ``owns.skypilot_users`` entry may match: the user's id, and their name.

    NOTE: a service account's name is whatever its creator typed (any user may create
    one), so it is matched by its id alone.
    """
    user = user_request.user
    if user is None:
        return ()
    found: tuple[str, ...] = (str(user.id),) if user.id else ()
    if user.name and not str(user.id or "").lower().startswith("sa-"):
        found += (str(user.name),)
    return found


def _user(user_request: sky.UserRequest) -> str | None:
    """The requesting user's name, as the API server authenticated it (None: unnamed)."""
    user = user_request.user
    return str(user.name) if user is not None and user.name else None


def judge(
    task: sky.Task,
    request: str,
    settings: PolicySettings,
    now: dt.datetime,
    client_config: Any = None,
    user: str | None = None,
    identities: tuple[str, ...] = (),
) -> dict[str, str]:
    """The env vars a cleared task gets (empty: passed unchanged), or :class:`Rejection`.

    ``client_config`` is the request's ``skypilot_config`` (the client's own config, which
    SkyPilot merges into the task's); ``user`` is who asks (``owns.skypilot_users``).
    """
    if request in SERVICE_REQUESTS:
        return _no_service(task, request, settings, client_config)
    if request.endswith("launch_controller"):
        check_controller(task, request)
        _refuse_pod_config_devices(task, client_config)  # NOTE: its pod on a GPU node
    if request not in CHECKED_REQUESTS:
        return {}
    _refuse_pod_config_devices(task, client_config)
    asks = gpu_asks(task)
    named = (task.envs or {}).get(SPEC_ENV, "").strip()
    if request == RELAUNCH:
        _refuse_many_jobs(task)
    key = _relaunch_key(task) if request == RELAUNCH else uuid.uuid4().hex
    if not named and not _carries_facts(task):
        return _no_spec(task, asks, settings)
    if named:
        relative, content = read_named_spec(named, settings.repo)
        sweep = format_of(content, relative) is not Format.BUDGET_GATE
        launch = _launch_facts(task, asks) if sweep else {}
    else:  # the task says what it runs: judged as a SkyPilot file of its own
        relative, content, launch = _task_name(task), _task_yaml(task), {}
    evaluation, view = evaluate_named(relative, content, settings, now, key, launch)
    if not named:
        check_self_cleared(evaluation.result, relative)
    if evaluation.spec is not None:
        retries = evaluation.policy.reliability.max_retries if evaluation.policy else 0
        check_task(task, asks, evaluation.spec, relative, retries, request=request, named=named)
        _check_who(task, request, evaluation, user, identities)
        if evaluation.spec.resources.mig_profile is not None and asks:
            whole = whole_gpu_cost(relative, content, settings, now)
            raise mig_rejection(task.name or "(unnamed)", asks[0], evaluation, relative, whole)
    check_cleared(evaluation.result)
    assert evaluation.spec is not None and evaluation.result.fingerprint is not None
    autodown(task, request)
    record_admission(view, evaluation, key)
    approval = evaluation.result.approval.approval if evaluation.result.approval else None
    tags = tracking.spec_tags(
        evaluation.spec,
        evaluation.result.fingerprint,
        relative,
        approval_id=approval.record_id if approval else None,
    )
    tags[tracking.SUBMITTED_AT] = now.isoformat(timespec="seconds")
    return tag_envs(tags) | {LAUNCH_KEY_ENV: key}


def _check_who(
    task: sky.Task,
    request: str,
    evaluation: Evaluation,
    user: str | None,
    identities: tuple[str, ...],
) -> None:
    """Refuse a user the spec's team does not own (``owns.skypilot_users``).

    NOTE: a controller launching a managed job's cluster may carry no user; the jobs.launch
    whose key it carries was checked with the user who asked.
    """
    stranger = user_refusal(evaluation, user, identities, task.name or "(unnamed)")
    joins = request == RELAUNCH and bool((task.envs or {}).get(LAUNCH_KEY_ENV, "").strip())
    if stranger is not None and not (joins and user is None):
        raise Rejection(stranger)


def _refuse_many_jobs(task: sky.Task) -> None:
    """Refuse the clusters of ``sky jobs launch --num-jobs N``, N over 1.

    NOTE: SkyPilot judges ``jobs.launch`` once, then submits the task N times, each on a
    cluster of its own that joins the one launch; it says N (``SKYPILOT_NUM_JOBS``) only on
    those clusters' requests.
    """
    count = (task.envs or {}).get("SKYPILOT_NUM_JOBS", "1").strip()
    if count != "1":
        raise Rejection(
            f"task {task.name or '(unnamed)'!r} is one of {count} managed jobs launched at once "
            "(sky jobs launch --num-jobs), which budget-gate clears as one launch — launch "
            "each job on its own, or run them as the trials of the spec's search"
        )


def _relaunch_key(task: sky.Task) -> str:
    """The launch a managed job's cluster is part of: the key its admission gave the task.

    Every other request gets a new key: a task must not join another launch.
    """
    given = (task.envs or {}).get(LAUNCH_KEY_ENV, "").strip()
    if not given:
        return uuid.uuid4().hex
    try:
        return checked_key(given)
    except InputError as exc:
        raise Rejection(f"task {task.name or '(unnamed)'!r}: {exc}") from None


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


def _refuse_pod_config_devices(task: sky.Task, client_config: Any) -> None:
    """Refuse what the task's ``config:`` or the request's config hands its machines unasked.

    GPUs in a pod config, a container that reaches every GPU of its node, an ``#SBATCH``
    option that asks for GPUs or repeats the job (:mod:`gate.integrations.skypilot_configs`).
    """
    configs = [
        ("config", getattr(resources, "cluster_config_overrides", None))
        for resources in task.resources
    ]
    configs.append(("the client's SkyPilot config", _plain(client_config)))
    refuse_config_reach(task.name or "(unnamed)", configs)


def _plain(config: Any) -> Any:
    """A SkyPilot config object (a dict subclass, or None) as plain data."""
    return config if isinstance(config, dict) else {}


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


def _no_service(
    task: sky.Task, request: str, settings: PolicySettings, client_config: Any
) -> dict[str, str]:
    """A service or pool passes without GPUs; with them, only where spec-less GPUs may."""
    _refuse_pod_config_devices(task, client_config)
    asks = gpu_asks(task)
    if not asks:
        return {}
    what = (
        f"task {task.name or '(unnamed)'!r} asks for {asks[0]} per replica of a SkyServe "
        f"service or job pool ({request})"
    )
    if settings.missing_spec is MissingSpec.ALLOW:
        log.warning("%s: allowed, because BUDGET_GATE_MISSING_SPEC=allow", what)
        return {}
    raise Rejection(
        f"{what}, which budget-gate does not price (replicas run as long as the service) — "
        f"train with sky launch or sky jobs launch and envs: {{{SPEC_ENV}: "
        "experiments/NAME.yaml}, or serve without GPUs here"
    )


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
    kept = {
        k: config[k]
        for k in ("name", "resources", "num_nodes", "setup", "run", "envs", "secrets")
        if k in config
    }
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
