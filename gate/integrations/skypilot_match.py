"""What a SkyPilot task asks for, against what its spec was priced with.

The task's accelerator, GPU count (per node × nodes) and spot setting must match the spec's
``resources``, and a spec that names its cloud runs there. Reads SkyPilot's task objects
without importing SkyPilot.
"""

from __future__ import annotations

import math
from typing import Any

from gate.admission.asks import GpuAsk
from gate.admission.asks import matches as _matches
from gate.errors import InputError
from gate.integrations.skypilot_spec import Rejection
from gate.integrations.skypilot_steps import check_steps
from gate.spec.experiment import Experiment
from gate.spec.trial import Capacity

Task = Any
"""A ``sky.Task``: named here without importing SkyPilot (only the policy module does)."""


MOST_PER_NODE = 1024
"""More GPUs than any node holds: a count past it is no count (``A100:1e308``)."""


def gpu_asks(task: Task) -> list[GpuAsk]:
    """Every resource candidate of ``task`` that asks for an accelerator.

    SkyPilot reads ``A100:inf`` and ``A100:nan`` as counts; they are no number of GPUs. Nor
    is a fraction: Kubernetes gives each pod of ``A100:0.5`` × 16 nodes a whole GPU (16, not
    the 8 the product says), and no spec prices part of one.
    """
    nodes = int(task.num_nodes or 1)
    for resources in task.resources:
        if resources.instance_type and resources.accelerators:
            # NOTE: SkyPilot launches and bills the instance type whatever accelerators are
            # named beside it (T4:1 on p5.48xlarge ran 8 × H100), and fills them in itself
            # when none are: the ask says nothing sure of what the instance holds
            named = ", ".join(f"{k}:{v:g}" for k, v in resources.accelerators.items())
            raise Rejection(
                f"task {task.name or '(unnamed)'!r} asks for instance type "
                f"{resources.instance_type} with accelerators {named}: SkyPilot bills the "
                "instance type whatever accelerators are named beside it — name the "
                "accelerators and the cloud (accelerators: H100:8, infra: aws), without "
                "instance_type"
            )
        if resources.instance_type and resources.cloud is None and not resources.accelerators:
            # NOTE: SkyPilot reads an instance type's GPUs only once a cloud is chosen, after
            # the policy: p5.48xlarge without infra launches 8 × H100 that no ask showed
            raise Rejection(
                f"task {task.name or '(unnamed)'!r} asks for instance type "
                f"{resources.instance_type} on no named cloud, whose GPUs SkyPilot reads only "
                "after budget-gate judges the task — name its accelerators beside it (e.g. "
                "accelerators: H100:8), or its cloud (infra: aws)"
            )
    asks = [
        GpuAsk(name, float(count), nodes, bool(resources.use_spot))
        for resources in task.resources
        for name, count in (resources.accelerators or {}).items()
    ]
    for ask in asks:
        whole = math.isfinite(ask.per_node) and ask.per_node.is_integer()
        if not whole or not 0 < ask.per_node <= MOST_PER_NODE:
            raise Rejection(
                f"task {task.name or '(unnamed)'!r} asks for {ask.accelerator}:{ask.per_node} — "
                "not a whole number of GPUs a node holds; ask for a whole count, e.g. "
                f"{ask.accelerator}:8"
            )
    return asks


def check_task(
    task: Task,
    asks: list[GpuAsk],
    spec: Experiment,
    relative: str,
    retries: int,
    *,
    request: str,
    named: str,
) -> None:
    """The task asks for what the spec was priced with, trains no more, restarts no more.

    ``retries`` is the policy's ``reliability.max_retries``: the reruns the price holds, of
    a managed job (``job_recovery``) and of a command (``torchrun --max-restarts``) alike.
    """
    check_match(task, asks, spec, relative, exec_request=request == "exec")
    check_epochs(task, spec, relative, named=bool(named), restarts=retries)
    check_restarts(task, retries, relative)


def check_epochs(
    task: Task, spec: Experiment, relative: str, *, named: bool, restarts: int = 0
) -> None:
    """The task trains no more epochs than the spec it names was priced with, and no steps.

    Its ``run``, ``setup``, envs and secrets are read as ``budget-gate check`` reads a task
    file (:func:`gate.formats.skypilot.task_epochs`): a loop, or a value outside the task,
    is refused too. A task that names no epochs trains what its spec says; a task judged by
    itself (not ``named``) was read whole: its epochs are the spec's. Neither may bound its
    training by steps (:func:`gate.integrations.skypilot_steps.check_steps`).
    """
    from gate.formats.skypilot import task_epochs  # NOTE: only where a task names a spec

    check_steps(task, relative, spec.workload.max_epochs)
    if not named:
        return
    name = task.name or "(unnamed)"
    config = task.to_yaml_config()
    try:
        found = task_epochs(config, lambda *path: None, restarts=restarts)
    except InputError as exc:
        raise Rejection(f"task {name!r}: {exc.problem.message} — {exc.problem.hint}") from None
    most = spec.workload.max_epochs
    if found is not None and found[0] > most:
        raise Rejection(
            f"task {name!r} trains {found[0]} epochs ({found[1]}), but {relative} is cleared "
            f"for {most} (workload.max_epochs) — train at most {most} epochs, or change the "
            f"spec and clear it again (budget-gate check {relative})"
        )


def check_match(
    task: Task, asks: list[GpuAsk], spec: Experiment, relative: str, *, exec_request: bool
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
    if want.cloud is not None:
        _check_cloud(task, want.cloud, relative, exec_request=exec_request)
    _check_family(task, want.accelerator, relative, exec_request=exec_request)


def _check_cloud(task: Task, cloud: str, relative: str, *, exec_request: bool = False) -> None:
    """A spec priced at a cloud it names runs there: every GPU candidate names that cloud.

    NOTE: ``resources.cloud`` is the spec author's claim, priced over the policy's
    ``prices.cloud`` (a cheaper catalog price); a candidate without a cloud lets SkyPilot's
    optimizer choose any enabled one.
    """
    for resources in task.resources:
        if not resources.accelerators:
            continue
        runs_on = str(resources.cloud).lower() if resources.cloud is not None else None
        if exec_request and runs_on is None:
            continue  # an exec runs on its cluster, whose cloud was checked at its launch
        if runs_on != cloud.lower():
            where = f"on {resources.cloud}" if runs_on else "on any cloud SkyPilot picks"
            raise Rejection(
                f"task {task.name or '(unnamed)'!r} may run {where}, but {relative} is priced "
                f"at {cloud}'s price (resources.cloud) — set resources: {{infra: {cloud}}} in "
                f"every candidate, or drop resources.cloud from the spec and clear it again "
                f"(budget-gate check {relative})"
            )


NAME_MATCHING_INFRA = frozenset({"kubernetes", "ssh", "slurm"})
"""Where SkyPilot places a GPU name on nodes whose GPU's name starts with it (``A100`` on
``A100-80GB`` nodes: its Kubernetes match lets a shorter name stand for a longer one, its
Slurm match a name's segments for any GPU type that holds them)."""


def _check_family(task: Task, accelerator: str, relative: str, *, exec_request: bool) -> None:
    """A spec's GPU that names a family (``A100``: ``A100-80GB`` too) runs on a named cloud.

    NOTE: the policy cannot pin the exact GPU there (each cluster labels its nodes in its own
    way), so a candidate on Kubernetes, SSH or Slurm, or on no named cloud (SkyPilot's
    optimizer may pick one of them), is refused. Only the families the price catalog
    holds are known (``docs/threat-model.md``).
    """
    from gate.estimate.prices import load_catalog

    stem = accelerator.lower()
    longer = [n for n in load_catalog().accelerators if n.lower().startswith(stem + "-")]
    for resources in task.resources if longer else ():
        runs_on = str(resources.cloud).lower() if resources.cloud is not None else None
        if not resources.accelerators or (exec_request and runs_on is None):
            continue  # NOTE: an exec runs on its cluster, whose launch was checked
        if runs_on is None or runs_on in NAME_MATCHING_INFRA:
            where = f"on {resources.cloud}" if runs_on else "on any cloud SkyPilot picks"
            raise Rejection(
                f"task {task.name or '(unnamed)'!r} may run {where}, where SkyPilot places "
                f"{accelerator} on {' or '.join(longer)} GPUs too (it matches a GPU name to "
                f"longer names that start with it), dearer than {relative} is priced for — set "
                f"resources: {{infra: aws}} (a cloud whose {accelerator} is the one priced) in "
                f"every candidate, or price {longer[-1]} in the spec (resources.accelerator), "
                f"ask for it, and clear it again (budget-gate check {relative})"
            )


RECOVERY_KEYS = frozenset({"strategy", "max_restarts_on_errors", "recover_on_exit_codes"})
"""The ``job_recovery`` keys budget-gate reads; any other is refused (it may restart more)."""


def check_restarts(task: Task, most: int, relative: str) -> None:
    """A managed job restarts on errors no more often than the policy prices retries.

    ``job_recovery.max_restarts_on_errors: 1000`` reruns the whole training a thousand times
    under one launch; the estimate prices at most ``reliability.max_retries`` retries.
    ``recover_on_exit_codes`` restarts on those codes past any limit, so a non-empty one is
    refused, as is a key not read here (a plugin's strategy options, a later SkyPilot's).
    """
    name = task.name or "(unnamed)"
    for resources in task.resources:
        recovery = resources.job_recovery
        recovery = recovery if isinstance(recovery, dict) else {}
        unknown = sorted(str(k) for k in recovery if k not in RECOVERY_KEYS)
        if unknown:
            raise Rejection(
                f"task {name!r} sets job_recovery.{unknown[0]}, which budget-gate does not "
                "read (it may restart the job past the retries priced) — drop it, and keep to "
                "job_recovery.strategy and max_restarts_on_errors"
            )
        codes = recovery.get("recover_on_exit_codes")
        if codes not in (None, []):
            raise Rejection(
                f"task {name!r} restarts on the exit codes {codes} "
                "(job_recovery.recover_on_exit_codes) past any limit, but "
                f"{relative} is priced with at most {most} retries (the policy's "
                f"reliability.max_retries) — drop recover_on_exit_codes, and set "
                f"max_restarts_on_errors: {most} at most"
            )
        restarts = recovery.get("max_restarts_on_errors", 0)
        if not isinstance(restarts, int) or isinstance(restarts, bool) or restarts > most:
            raise Rejection(
                f"task {name!r} restarts on errors up to {restarts} times "
                f"(job_recovery.max_restarts_on_errors), but {relative} is priced with at most "
                f"{most} retries (the policy's reliability.max_retries) — lower it to {most}"
            )


def check_controller(task: Task, request: str) -> None:
    """A jobs or serve controller asks for no GPUs: it trains nothing, and holds them idle.

    SkyPilot takes its resources from the client's ``jobs.controller.resources``.
    """
    asks = gpu_asks(task)
    if asks:
        raise Rejection(
            f"the {request} request asks for {asks[0]}: a controller trains nothing and "
            "would hold them idle — give it no accelerators (jobs.controller.resources)"
        )


AUTODOWN_MINUTES = 10
"""Idle minutes after which a cleared cluster that set no autostop of its own is torn down."""
OWN_AUTOSTOP_MINUTES = 60
"""The longest idle time a task's own autostop may keep: one longer (a year) is none."""


def autodown(task: Any, request: str, minutes: int = AUTODOWN_MINUTES) -> bool:
    """Give a cluster ``launch``'s resources an autodown, unless it sets an autostop; True if set.

    A spec prices the training, not a cluster left idle after it: a GPU cluster with no
    autostop spends on, unpriced, until someone tears it down. A task's own autostop (stop
    or down, after at most an hour idle) is kept; an ``exec`` runs on a cluster launched
    before, and a managed job's controller tears its cluster down itself.
    """
    resources = task.resources
    if request != "launch" or all(_stops(r) for r in resources):
        return False
    changed = [r if _stops(r) else r.copy(autostop={"idle_minutes": minutes, "down": True})
               for r in resources]  # fmt: skip
    task.set_resources(changed if isinstance(resources, list) else set(changed))
    return True  # NOTE: no log line of its own: one line per decision (sky status shows it)


def _stops(resources: Any) -> bool:
    """An autostop that will act: on, after 0 to 60 idle minutes (``-i -1`` cancels one)."""
    config = getattr(resources, "autostop_config", None)
    if config is None or not config.enabled or not isinstance(config.idle_minutes, int):
        return False
    return 0 <= config.idle_minutes <= OWN_AUTOSTOP_MINUTES
