"""Whether a launch is cleared: the spec judged as ``budget-gate verify`` judges it.

:func:`judge_spec` runs the evaluator (approvals count) and turns a ledger or policy failure
into :class:`Unjudged`, which never clears anything (fail closed). :func:`refusal` says in
one line why an evaluated spec may not launch, or ``None`` when ``verify`` would exit 0,
and sorts the reason into a :class:`Block`, so that an enforcement point that can wait
(Kueue) tells "wait for an approval" or "wait for next month" from "change the spec".
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from gate.errors import BackendError, InputError
from gate.evaluation.evaluate import Evaluation, Evaluator
from gate.evaluation.report import SpecResult
from gate.formats.model import FactMap
from gate.policy.findings import Outcome
from gate.policy.model import Severity

MONTHLY_BUDGET_RULE = "BG120"
"""The one rule a new month can clear (:mod:`gate.policy.rules.monthly_budget`)."""


class Block(str, Enum):
    """Why a launch is refused, by what would clear it."""

    INVALID = "invalid"
    """The spec is not valid: change it."""
    APPROVAL = "approval"
    """A person has to approve this version: wait for them."""
    BUDGET = "budget"
    """Only this month's budget stands in the way: it clears when the month resets."""
    VIOLATION = "violation"
    """The spec breaks the policy: change it."""
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a launch may not go ahead: its kind and the one line a user sees."""

    block: Block
    reason: str
    why: str = ""
    """The findings alone (``BG120 …; BG101 …``), for callers that word the fix themselves."""


class Unjudged(Exception):
    """The spec could not be judged (the ledger or a policy failed): nothing is cleared.

    ``ledger`` is true when the ledger could not be read (it recovers on its own), false
    for an invalid policy (a person must fix it).
    """

    def __init__(self, message: str, *, ledger: bool) -> None:
        super().__init__(message)
        self.ledger = ledger


def judge_spec(
    evaluator: Evaluator,
    relative: str,
    content: bytes,
    policy_dir: str,
    launch: FactMap | None = None,
) -> Evaluation:
    """The spec at ``relative`` (its bytes ``content``) judged by ``evaluator``.

    ``launch``: facts of the task that launches an engine's file (its hardware).

    Raises:
        Unjudged: the ledger is unreachable, or a policy is invalid.
    """
    try:
        return evaluator.evaluate_spec(relative, content, launch)
    except BackendError as exc:
        raise Unjudged(
            f"{relative} cannot be cleared: the ledger is unreachable ({exc}) — launches "
            "are refused until it answers (fail closed); retry when MLflow is back",
            ledger=True,
        ) from None
    except InputError as exc:  # a policy or setting: not the spec's fault, nothing is cleared
        raise Unjudged(
            f"{relative} cannot be cleared: a policy or a setting is invalid ({exc}) — "
            f"fix it (budget-gate check {relative} --policy-dir {policy_dir})",
            ledger=False,
        ) from None


def refusal(evaluation: Evaluation | SpecResult) -> Refusal | None:
    """Why the evaluated spec may not launch, or ``None`` when ``verify`` passes it."""
    result = evaluation.result if isinstance(evaluation, Evaluation) else evaluation
    spec = result.file
    if result.outcome is Outcome.PASS:
        return None
    if result.outcome is Outcome.INVALID:
        first = result.errors[0] if result.errors else "unreadable"
        more = f" (and {len(result.errors) - 1} more errors)" if len(result.errors) > 1 else ""
        return Refusal(
            Block.INVALID,
            f"{spec} is not a valid spec: {first}{more}; see budget-gate check {spec}",
        )
    if result.outcome is Outcome.APPROVAL_REQUIRED:
        stale = result.approval.stale if result.approval else ()
        why = "; ".join((*messages(result, Severity.APPROVAL), *stale))
        return Refusal(
            Block.APPROVAL,
            f"{spec} needs a fresh approval before launch: {why} — "
            f"budget-gate approve {spec} --by NAME --reason TEXT",
            why,
        )
    if result.outcome is Outcome.VIOLATION:
        why = "; ".join(messages(result, Severity.ERROR) or messages(result, Severity.WARN))
        block = Block.BUDGET if _only_the_month(evaluation) else Block.VIOLATION
        return Refusal(
            block,
            f"{spec} breaks the policy: {why} — change the spec (budget-gate check {spec})",
            why,
        )
    outcome = result.outcome.value
    return Refusal(Block.OTHER, f"{spec} cannot be cleared ({outcome}) — budget-gate verify {spec}")


def messages(result: SpecResult, severity: Severity) -> tuple[str, ...]:
    """``BG101 message`` for every active finding of ``severity``."""
    return tuple(
        f"{f.rule_id} {f.message}" for f in result.findings if f.active and f.severity is severity
    )


def _only_the_month(evaluation: Evaluation | SpecResult) -> bool:
    """The monthly budget is the only error, and a whole month's budget would hold the spec."""
    if not isinstance(evaluation, Evaluation) or evaluation.policy is None:
        return False
    result = evaluation.result
    errors = {f.rule_id for f in result.findings if f.active and f.severity is Severity.ERROR}
    if errors != {MONTHLY_BUDGET_RULE} or result.budget is None or result.estimate is None:
        return False
    enforced = result.estimate.scenario(evaluation.policy.limits.scenario)
    return enforced.cost <= result.budget.budget
