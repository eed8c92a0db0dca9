"""What every rule module provides and receives: the Rule protocol, its context, its output."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Protocol

from gate.estimate.model import Estimate, Scenario
from gate.money import format_amount, format_money, to_decimal
from gate.policy.model import Ownership, Policy, Severity
from gate.spec.experiment import Experiment
from gate.spec.loader import DataPath

if TYPE_CHECKING:  # a budget's status comes from the ledger, read only for specs with one
    from gate.ledger.budget import BudgetStatus


@dataclass(frozen=True, slots=True)
class RuleContext:
    """Read-only inputs of a rule: the spec, its estimate and the team's typed policy.

    ``budget`` is this month's spend of the spec's team or cost center, computed from the
    ledger by the command; it is ``None`` when the policy sets no monthly budget.
    ``team_policies`` names the teams that have a policy file of their own; ``owners`` what
    each team's policy owns (``owns:``), and ``repo_path`` the spec's path relative to the
    repository root, as ownership and waiver globs match it. ``spender`` is who would spend
    (the pull request's author, with the GitHub teams they were found in), ``None`` outside
    a pull request.
    """

    spec: Experiment
    estimate: Estimate
    policy: Policy
    spec_file: str
    today: dt.date
    budget: BudgetStatus | None = None
    team_policies: tuple[str, ...] = ()
    owners: Mapping[str, Ownership] = field(default_factory=dict)
    repo_path: str = ""
    spender: Spender | None = None

    @property
    def enforced(self) -> Scenario:
        """The scenario limits apply to (the policy's ``limits.scenario``, worst by default)."""
        return self.estimate.scenario(self.policy.limits.scenario)


@dataclass(frozen=True, slots=True)
class Spender:
    """Who would spend a team's budget on a pull request, as GitHub answered (pure data).

    ``member_of`` holds the policy entries (``org/slug`` or ``slug``, as written) GitHub
    confirmed the login is an active member of; ``unknown`` the ones it would not say
    (the token cannot read the organization's teams).
    """

    login: str
    member_of: frozenset[str] = frozenset()
    unknown: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Violation:
    """A rule's raw result: what is wrong and where in the spec; the engine adds severity.

    ``severity``, when set, replaces the rule's default for this violation (a rule whose
    default depends on the policy; it says so with ``VIOLATION_SEVERITY = True``); the
    policy's ``severity:`` overrides still win.
    """

    message: str
    path: DataPath = ()
    severity: Severity | None = None


class Rule(Protocol):
    """A rule module: constants plus ``check``; its docstring is the user documentation."""

    __doc__: str | None
    ID: str
    SLUG: str
    TITLE: str
    DEFAULT_SEVERITY: Severity

    def check(self, ctx: RuleContext) -> Iterator[Violation]:
        """Yield one Violation per problem found; nothing when the limit is unset."""
        ...


def money(amount: Decimal, ctx: RuleContext) -> str:
    """Format an amount in the policy's currency for a message."""
    return format_money(amount, ctx.policy.currency)


def plural(count: int, noun: str) -> str:
    """``1 wave``, ``2 waves``, ``1,000 waves``."""
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def as_given(value: float) -> str:
    """A limit as the user wrote it: ``48``, ``1.5``, ``1234567`` (never ``1.23e+06``)."""
    return f"{to_decimal(value).normalize():f}"


def hours(value: Decimal) -> str:
    """Format hours for a message (two decimals)."""
    return f"{format_amount(value)} h"
