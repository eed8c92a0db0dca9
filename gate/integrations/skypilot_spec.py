"""The spec a SkyPilot task names, judged as ``budget-gate verify`` judges it.

Read from the repository the policy is configured with, evaluated with approvals counting
and the ledger in play, the admitted launch recorded (fail closed); every refusal is a
:class:`Rejection` whose message is the one line SkyPilot shows the user. A MIG spec is
refused with its price as whole GPUs, which is what SkyPilot asks for. Imports no SkyPilot:
:mod:`gate.integrations.skypilot` reads the task.
"""

from __future__ import annotations

import datetime as dt
import os
from functools import partial
from pathlib import Path

from gate.admission.asks import GpuAsk
from gate.admission.clearance import Unjudged, judge_spec, refusal
from gate.admission.spec_file import SpecRefError, read_spec
from gate.errors import ApprovalRequired, BackendError, InputError, InputErrors
from gate.estimate.prices import load_catalog
from gate.evaluation.evaluate import Evaluation, Evaluator
from gate.evaluation.launching import record_launch
from gate.evaluation.report import SpecResult
from gate.formats import Format, sniff
from gate.formats.model import FactMap
from gate.integrations import open_ledger
from gate.integrations.git.policy_history import former_approvers
from gate.integrations.git.remote import this_repository
from gate.integrations.mlflow.tracking_uri import redact
from gate.integrations.skypilot_settings import PolicySettings
from gate.ledger.view import LedgerView
from gate.money import format_money
from gate.policy.findings import Outcome
from gate.policy.loader import PolicySet
from gate.spec.loader import load_bytes

SPEC_ENV = "BUDGET_GATE_SPEC"
"""The task env var that names its spec, relative to the repository."""


class Rejection(Exception):
    """A request the policy refuses; the message is the one line SkyPilot shows the user."""


def read_named_spec(named: str, repo: Path) -> tuple[str, bytes]:
    """The spec's normalized path in the repository and its bytes, or why not."""
    try:
        return read_spec(named, repo, subject=f"{SPEC_ENV}={named}")
    except SpecRefError as exc:
        raise Rejection(str(exc)) from None


def format_of(content: bytes, relative: str) -> Format:
    """The named file's format (a spec when it does not read: the evaluation says why)."""
    try:
        return sniff(load_bytes(content, relative).data)
    except (InputError, InputErrors):
        return Format.BUDGET_GATE


def check_self_cleared(result: SpecResult, name: str) -> None:
    """A task judged by itself has no path an approval could be bound to: say how to get one."""
    if result.outcome is Outcome.APPROVAL_REQUIRED:
        raise Rejection(
            f"{name} needs an approval, and an approval is bound to a spec's path in the "
            f"repository — commit the task YAML, name it in envs: {{{SPEC_ENV}: "
            "tasks/NAME.yaml}, and approve it (budget-gate approve tasks/NAME.yaml --by NAME "
            "--reason TEXT)"
        )


def evaluate_named(
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
    home = Path(settings.policy_dir)
    view = LedgerView(
        lambda trust: open_ledger(uri, trust),
        now,
        approvals=True,
        where=redact(uri),
        history=partial(former_approvers, home),
        locate=partial(this_repository, home),
    )
    evaluator = Evaluator(
        PolicySet(settings.policy_dir), load_catalog(), now.date(), ledger=view, launch_key=key
    )
    try:
        return judge_spec(evaluator, relative, content, str(settings.policy_dir), launch), view
    except Unjudged as exc:
        raise Rejection(str(exc)) from None


def record_admission(view: LedgerView, evaluation: Evaluation, key: str) -> None:
    """Record the admitted task's launch when the ledger is in play (fail closed if not)."""
    result = evaluation.result
    if result.approval is None and result.budget is None:
        return
    from gate.integrations.signing import SIGNER_ENV, signer_from

    try:
        signer = signer_from(os.environ, principal="skypilot-policy")
        by = signer.principal if signer else os.environ.get(SIGNER_ENV, "skypilot-policy")
        record_launch(view, evaluation, launch_key=key, by=by, signer=signer)
    except ApprovalRequired as exc:
        raise Rejection(str(exc)) from None
    except (BackendError, InputError) as exc:
        raise Rejection(
            f"{result.file} is cleared, but its launch could not be recorded ({exc}) — "
            "launches are refused until the ledger records them (fail closed)"
        ) from None


def mig_rejection(
    task: str, ask: GpuAsk, evaluation: Evaluation, relative: str, whole: str | None
) -> Rejection:
    """A MIG spec's task (named ``task``) asks for whole GPUs: SkyPilot has no name for a MIG slice.

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
        f"task {task!r} asks for {ask} whole GPUs{as_whole}, but "
        f"{relative} is priced as {want.gpus_per_trial} × {want.mig_profile} MIG slices "
        f"({priced}) and SkyPilot cannot ask for a MIG slice — remove mig_profile from "
        f"{relative} and clear it again for whole GPUs (budget-gate check {relative})"
    )


def whole_gpu_cost(
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


def check_cleared(result: SpecResult) -> None:
    """Pass only what ``budget-gate verify`` passes (exit 0)."""
    refused = refusal(result)
    if refused is not None:
        raise Rejection(refused.reason)
