"""Under a monthly budget, the spec names no budget key, or one that has no budget.

``limits.monthly_budget`` is per team (``metadata.team``) or per cost center (the
``cost-center`` label, ``limits.budget_scope: cost-center``). A spec without the key would
be charged to no budget at all, and a made-up key (``cost-center: cc-made-up-42``) to a
fresh, empty one: either way the month's limit would not hold. So the key is required and
must come from a closed list: a team that has a policy file or is listed in ``teams``, or
a cost center listed in ``labels.allowed.cost-center`` (a cost-center budget requires that
list; ``policy check`` says so). Without a monthly budget nothing is checked.

Passes (policy ``monthly_budget: 50000``, ``teams: [nlp, vision]``)::

    metadata: {name: sweep, team: nlp}

Fails::

    metadata: {name: sweep}                   # no team: no budget would be charged
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.ledger.tracking import COST_CENTER_LABEL
from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation

ID = "BG206"
SLUG = "budget-key"
TITLE = "No known budget key under a monthly budget"
DEFAULT_SEVERITY = Severity.ERROR


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Yield a violation when the budget key is missing or not in its closed list."""
    policy = ctx.policy
    if policy.limits.monthly_budget is None:
        return
    if policy.limits.budget_scope == "team":
        key = ctx.spec.metadata.team
        known = sorted({*ctx.team_policies, *(policy.teams or ())})
        where: tuple[str, ...] = ("metadata", "team")
        name = "metadata.team"
        source = "a policy file or teams:"
    else:
        key = ctx.spec.metadata.labels.get(COST_CENTER_LABEL)
        known = sorted(policy.labels.allowed.get(COST_CENTER_LABEL, ()))
        where = ("metadata", "labels", COST_CENTER_LABEL)
        name = f"label {COST_CENTER_LABEL}"
        source = f"labels.allowed.{COST_CENTER_LABEL}"
    scope = "team" if policy.limits.budget_scope == "team" else "cost center"
    if key is None:
        fix = (
            f"set it to one of {', '.join(known)}"
            if known
            else f"list the {scope}s ({source}), then set it to one: none is listed yet"
        )
        yield Violation(
            f"{name} is missing, and the monthly budget is per {scope}: the spec would "
            f"spend no budget — {fix}",
            where[:-1],  # the mapping the key is missing from
        )
    elif key not in known:
        listed = f"it is not one of {', '.join(known)}" if known else f"no {scope} is listed"
        yield Violation(
            f"{scope} {key!r} has no monthly budget: {listed} ({source}) — use a known {scope}"
            + ("" if known else " once it is listed there"),
            where,
        )
