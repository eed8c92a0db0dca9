"""A Workload's admission check state from its spec's verdict and its resources (pure).

The decision table (``docs/kueue.md`` shows it with the messages):

- cleared, and the pods ask for what the spec was priced with → ``Ready``, with
  ``podSetUpdates`` that label every pod set with the run tags;
- no fresh approval → ``Retry`` after :attr:`Options.approval_recheck` seconds: the quota
  is released while a person decides (holding it would idle GPUs others wait for), and the
  Workload comes back on its own once approved;
- over this month's budget (and nothing else) → ``Retry`` until the month resets (UTC);
- resources unlike the spec's, an invalid or unreadable spec, a policy violation, a GPU
  Workload naming no spec → ``Rejected`` (Kueue deactivates it), with what to change;
- the ledger unreachable → stays ``Pending`` (never ``Ready``: fail closed), with why in
  its message; the controller decides it again when the ledger answers;
- a policy that cannot be read → ``Retry`` after :attr:`Options.policy_recheck` seconds.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from gate.admission.asks import GPU_RESOURCES, MIG_PREFIX, is_mig
from gate.admission.clearance import Block, Unjudged, refusal
from gate.admission.commands import command_refusal
from gate.admission.labels import RUN_TAGS_ANNOTATION, SPEC_ANNOTATION, pod_annotations, pod_labels
from gate.admission.spec_file import SpecRefError
from gate.admission.spenders import namespace_refusal
from gate.admission.workload import Workload, placement
from gate.evaluation.evaluate import Evaluation
from gate.ledger import tracking
from gate.ledger.budget import month_start
from gate.spec.experiment import Experiment
from gate.spec.trial import Capacity

MAX_MESSAGE = 32768
"""Kueue's limit on an admission check message."""


class State(str, Enum):
    """Kueue's admission check states (``CheckState``)."""

    PENDING = "Pending"
    READY = "Ready"
    RETRY = "Retry"
    REJECTED = "Rejected"


@dataclass(frozen=True, slots=True)
class Options:
    """How the check treats what no spec settles."""

    missing_spec_allowed: bool = False
    """A GPU Workload that names no spec is admitted (and said so) instead of rejected."""
    approval_recheck: int = 300
    """Seconds a Workload waiting for an approval stays out of the queue before a new try."""
    policy_recheck: int = 300
    """Seconds before a new try when a policy cannot be read."""


@dataclass(frozen=True, slots=True)
class Decision:
    """What the check says of one Workload; ``cleared`` is the evaluation a Ready admits."""

    state: State
    message: str
    requeue_after: int | None = None
    pod_set_updates: tuple[Mapping[str, Any], ...] = ()
    cleared: Evaluation | None = None


Judged = Evaluation | SpecRefError | Unjudged | None
"""What became of the Workload's spec: evaluated, not found, not judged, or none named."""


def decide(
    workload: Workload,
    judged: Judged,
    flavors: Mapping[str, Mapping[str, str]],
    names: frozenset[str],
    options: Options,
    now: dt.datetime,
) -> Decision:
    """The check's state for ``workload``.

    ``flavors`` maps each ResourceFlavor to its ``nodeLabels``; ``names`` are the
    accelerators the price catalog knows.
    """
    if judged is None:
        return _no_spec(workload, options)
    if isinstance(judged, SpecRefError):
        return _say(State.REJECTED, str(judged))
    if isinstance(judged, Unjudged):
        if judged.ledger:
            return _say(State.PENDING, f"{judged}; decided as soon as it answers")
        return _say(State.RETRY, f"{judged}; tried again in {options.policy_recheck} s",
                    options.policy_recheck)  # fmt: skip
    spec, relative = judged.spec, judged.result.file
    if spec is not None:
        wrong = mismatch(workload, spec, relative, flavors, names | {spec.resources.accelerator})
        retries = judged.policy.reliability.max_retries if judged.policy else 0
        runs = ((pod_set.name, run) for pod_set in workload.pod_sets for run in pod_set.runs)
        wrong = wrong or command_refusal(workload.key, runs, spec, relative, retries)
        if wrong is not None:
            return _say(State.REJECTED, wrong)
        stray = namespace_refusal(judged, workload.namespace, workload.key)
        if stray is not None:
            return _say(State.REJECTED, stray)
    refused = refusal(judged)
    if refused is not None:
        return _refused(refused.block, refused.reason, refused.why, relative, options, now)
    assert spec is not None and judged.result.fingerprint is not None
    return _ready(workload, judged, spec, now)


def _no_spec(workload: Workload, options: Options) -> Decision:
    asks = _asks_text(workload)
    if not asks:
        return _say(State.READY, f"workload {workload.key} asks for no GPU and names no spec")
    what = f"workload {workload.key} asks for {asks} but names no spec"
    if options.missing_spec_allowed:
        return _say(State.READY, f"{what}: admitted, because --missing-spec allow")
    return _say(
        State.REJECTED,
        f"{what} — add the annotation {SPEC_ANNOTATION}: experiments/NAME.yaml (its path in "
        "the repository) to the job's pod template and clear it (budget-gate check "
        "experiments/NAME.yaml)",
    )


def _refused(
    block: Block, reason: str, why: str, relative: str, options: Options, now: dt.datetime
) -> Decision:
    if block is Block.APPROVAL:
        wait = options.approval_recheck
        return _say(State.RETRY, f"{reason}; its quota is released and it is tried again in "
                    f"{wait} s", wait)  # fmt: skip
    if block is Block.BUDGET:
        reset = next_month(now)
        wait = seconds_until(reset, now)
        return _say(
            State.RETRY,
            f"{relative} is over this month's budget: {why} — it is tried again when the "
            f"month resets ({reset:%Y-%m-%d %H:%M} UTC, in {wait} s), unless the budget is "
            f"raised or spend is released first (budget-gate check {relative})",
            wait,
        )
    return _say(State.REJECTED, reason)


def _ready(workload: Workload, judged: Evaluation, spec: Experiment, now: dt.datetime) -> Decision:
    result = judged.result
    assert result.fingerprint is not None
    approval = result.approval.approval if result.approval else None
    tags = tracking.spec_tags(
        spec,
        result.fingerprint,
        result.file,
        approval_id=approval.record_id if approval else None,
    )
    tags[tracking.SUBMITTED_AT] = now.isoformat(timespec="seconds")
    labels, annotations = pod_labels(tags), pod_annotations(tags)
    updates = []
    for pod_set in workload.pod_sets:
        clash = _clash(pod_set.labels, labels) or _clash(pod_set.annotations, annotations)
        if clash is not None:
            key, old, new = clash
            return _say(
                State.REJECTED,
                f"pod set {pod_set.name} of workload {workload.key} already sets {key}="
                f"{old[:80]!r}, and budget-gate sets it to {new[:80]!r} — remove it from the "
                "pod template (the run tags are set on admission)",
            )
        updates.append({"name": pod_set.name, "labels": labels, "annotations": annotations})
    by = f"approval {approval.record_id} by {approval.by}" if approval else "no approval needed"
    return Decision(
        State.READY,
        _line(f"cleared under {result.file} ({result.fingerprint[:19]}; {by})"),
        pod_set_updates=tuple(updates),
        cleared=judged,
    )


def _clash(have: Mapping[str, str], add: Mapping[str, str]) -> tuple[str, str, str] | None:
    return next(((k, have[k], v) for k, v in add.items() if k in have and have[k] != v), None)


def mismatch(
    workload: Workload,
    spec: Experiment,
    relative: str,
    flavors: Mapping[str, Mapping[str, str]],
    names: frozenset[str],
) -> str | None:
    """Why ``workload``'s pods do not ask for what ``spec`` was priced with, or ``None``."""
    want = spec.resources
    cleared = f"{relative} is cleared for {want.gpus_per_trial} × {want.accelerator}"
    fix = f"or change the spec and clear it again (budget-gate check {relative})"
    resource = f"{MIG_PREFIX}{want.mig_profile}" if want.mig_profile else None
    asks = _asks_text(workload)
    if not asks:
        return (
            f"workload {workload.key} asks for no GPU, but {cleared} "
            f"(resources.gpus_per_trial) — request {resource or GPU_RESOURCES[0]} in its pods"
        )
    counted = {r for ps in workload.pod_sets for r in ps.gpu_resources}
    if resource is not None and counted != {resource}:
        return (
            f"workload {workload.key} asks for {asks}, but {cleared} as MIG slices "
            f"{want.mig_profile} (resources.mig_profile) — request {resource} only, {fix}"
        )
    if resource is None and any(is_mig(r) for r in counted):
        return (
            f"workload {workload.key} asks for {asks}, but {cleared} whole GPUs — request "
            f"{GPU_RESOURCES[0]}, or set resources.mig_profile, {fix}"
        )
    spot = want.capacity is Capacity.SPOT
    for pod_set in (ps for ps in workload.pod_sets if ps.gpu_resources):
        where = placement(pod_set, flavors.get(pod_set.flavor or ""), names)
        runs = f"workload {workload.key} runs pod set {pod_set.name}"
        if where.accelerator is None:
            return (
                f"{runs} on an unknown accelerator ({where.accelerator_from}) — label its "
                f"ResourceFlavor's nodeLabels with budget-gate/accelerator: {want.accelerator}, "
                "or select the GPU nodes in the pod template's nodeSelector"
            )
        if where.accelerator.lower() != want.accelerator.lower():
            return (
                f"{runs} on {where.accelerator} ({where.accelerator_from}), but {cleared} "
                f"(resources.accelerator) — queue it where {want.accelerator} nodes are, {fix}"
            )
        if where.spot != spot:
            offer = "spot" if where.spot else "on-demand"
            change = "keep it off spot nodes" if where.spot else "select spot nodes"
            return (
                f"{runs} on {offer} ({where.spot_from}), but {cleared} "
                f"{want.capacity.value} (resources.capacity) — {change}, {fix}"
            )
    total = sum(ps.pods * n for ps in workload.pod_sets for n in ps.gpu_resources.values())
    if total == want.gpus_per_trial:
        return None
    return (
        f"workload {workload.key} asks for {total} × {want.accelerator} ({asks}), but "
        f"{cleared} (resources.gpus_per_trial) — make pods × GPUs per pod "
        f"{want.gpus_per_trial} in all, {fix}"
    )


def _asks_text(workload: Workload) -> str:
    """``main: 2 pods × 4 nvidia.com/gpu; worker: …`` over the pod sets that ask for GPUs."""
    parts = [
        f"{ps.name}: {ps.pods} pod{'s' if ps.pods != 1 else ''} × {n} {resource}"
        for ps in workload.pod_sets
        for resource, n in ps.gpu_resources.items()
    ]
    return "; ".join(parts)


def next_month(now: dt.datetime) -> dt.datetime:
    """Midnight UTC on the first day of the month after ``now``'s (UTC)."""
    start = month_start(now)
    return (start + dt.timedelta(days=32)).replace(day=1)


def seconds_until(moment: dt.datetime, now: dt.datetime) -> int:
    """Whole seconds from ``now`` (as Kueue stores it, to the second) to ``moment``."""
    return max(0, int((moment - now.replace(microsecond=0)).total_seconds()))


def rejection(message: str) -> Decision:
    """A Workload rejected for ``message``, said as every rejection is (one line, capped)."""
    return _say(State.REJECTED, message)


def _say(state: State, message: str, requeue_after: int | None = None) -> Decision:
    return Decision(state, _line(message), requeue_after)


def _line(message: str) -> str:
    text = "budget-gate: " + " ".join(message.split())
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


__all__ = ["RUN_TAGS_ANNOTATION", "Decision", "Judged", "Options", "State", "decide"]
