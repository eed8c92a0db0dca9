"""The ``kind: Policy`` document: a team's limits, approval triggers, labels and waivers.

Policies are data, never code. ``policies/<team>.yaml`` extends ``policies/default.yaml``
(implicitly, unless it says ``extends: none``); :mod:`gate.policy.loader` deep-merges the
chain before these models validate it.
"""

from __future__ import annotations

import datetime as dt
import re
from enum import Enum
from typing import Annotated, Literal

from gate.estimate.settings import (
    Calibration,
    Estimation,
    Prices,
    Reliability,
    Returns,
    ScenarioName,
    Spot,
)
from gate.ledger.approvers import ALL_ORIGINS, Approvers, Origin
from gate.model import Check, Field, Model, StrictBool, StrictFloat, StrictInt, model_check
from gate.money import Money
from gate.spec.base import Name, PositiveFloat, PositiveInt
from gate.spec.facts import Facts


class Severity(str, Enum):
    """How a finding affects the verdict: fail, ask for approval, or just tell."""

    ERROR = "error"
    APPROVAL = "approval"
    WARN = "warn"


SeveritySetting = Literal["error", "approval", "warn", "off"]


class Cluster(Model):
    """The shape of the team's cluster, for the can-it-ever-be-scheduled check."""

    gpus_per_node: PositiveInt | None = None
    """GPUs in one node of the team's cluster."""
    nodes: PositiveInt | None = None
    """Nodes in the cluster."""
    multi_node: StrictBool = False
    """Whether one trial may span nodes."""


class Limits(Model):
    """Hard limits; a limit left unset is not enforced.

    ``monthly_budget`` is per team or per cost-center label (``budget_scope``); spend so far
    comes from the ledger, and a warning fires once ``budget_warn_at`` of it would be used.
    With a budget, every spec must name its key from a closed list (BG206): a team that has
    a policy file or is listed in ``teams``, or a cost center of
    ``labels.allowed.cost-center``, which a cost-center budget therefore requires.
    ``reconcile_tolerance`` is how far (a fraction) the actual cost of the runs may exceed
    the approved amount before ``budget-gate reconcile`` fails.
    """

    scenario: ScenarioName = "worst"
    """Which scenario limits apply to: worst (default) or expected."""
    max_gpus_per_trial: PositiveInt | None = None
    """GPUs one trial may hold."""
    max_trial_hours: PositiveFloat | None = None
    """Hours one trial may take."""
    max_trial_cost: Money | None = None
    """Cost one trial may reach."""
    max_experiment_cost: Money | None = None
    """Cost the whole experiment may reach."""
    max_concurrent_gpus: PositiveInt | None = None
    """GPUs the team may hold at once."""
    monthly_budget: Money | None = None
    """The team's (or cost center's) spend per calendar month, from the ledger."""
    budget_scope: Literal["team", "cost-center"] = "team"
    """Whose budget a spec spends: its team or its cost-center label."""
    budget_warn_at: Annotated[StrictFloat, Field(gt=0, le=1, allow_inf_nan=False)] = 0.8
    """The share of the monthly budget at which a warning fires."""
    reconcile_tolerance: Annotated[StrictFloat, Field(ge=0, le=10, allow_inf_nan=False)] = 0.1
    """How far (a fraction) actual cost may exceed the approved amount in reconcile."""


class Approval(Model):
    """What makes an experiment need an approver before launch, and which approvals count.

    ``sources: [github]`` counts only approvals the pull-request flow verified on GitHub;
    the default counts local ``budget-gate approve`` records too.
    """

    trials_over: PositiveInt | None = None
    """Searches with more trials need an approval."""
    cost_over: Money | None = None
    """Experiments that cost more need an approval."""
    accelerators: list[Name] = Field(default_factory=list)
    """Accelerators that always need an approval."""
    approvers: Approvers = Field(default_factory=Approvers)
    """Who may approve."""
    sources: Annotated[list[Origin], Field(min_length=1)] = Field(
        default_factory=lambda: list(ALL_ORIGINS)
    )
    """Where approvals may come from: local (budget-gate approve) and github (reviews, comments)."""
    launches: Annotated[StrictInt, Field(ge=1, le=1000)] = 1
    """How many launches one approval covers; the next launch needs a new approval."""


class Labels(Model):
    """Attribution labels every spec must carry, and the values allowed for some."""

    required: list[Name] = Field(default_factory=list)
    """Labels every spec must carry."""
    allowed: dict[str, list[Name]] = Field(default_factory=dict)
    """The values allowed for some labels."""


class Practices(Model):
    """Thresholds for the waste rules (stop conditions)."""

    stop_condition_above_epochs: PositiveInt | None = None
    """Searches longer than this many epochs need an early-stopping condition."""


_POLICY_NAME = r"^[a-z0-9][a-z0-9_-]*$"
_GLOB_CHARS = r"(?:[^\x00-\x1f\x7f-\x9f\\]|\\[^\x00-\x1f\x7f-\x9f])+$"
"""Printable characters, a backslash only before the one it escapes (gitignore refuses a
pattern that ends in one)."""
_NO_PARENT = r"(?!(?:.*/)?!?\.\.(?:/|$))"
"""No ``..`` component: globs match paths relative to the repository root, never above it."""
_WAIVER_GLOB = r"^(?![!#\s])" + _NO_PARENT + _GLOB_CHARS


def _matching(pattern: str, problem: str) -> Check:
    """A validator that says what is wrong in words a pattern mismatch does not."""

    def check(value: str) -> str:
        if not re.fullmatch(pattern, value):
            raise ValueError(f"{value!r} {problem}")
        return value

    return Check(check)


PolicyName = Annotated[
    str,
    Field(max_length=63, json_schema_extra={"pattern": _POLICY_NAME}),
    _matching(
        _POLICY_NAME,
        "is not a team or policy name — use lower case letters, digits, - and _ "
        "(as in metadata.team)",
    ),
]
"""A policy file's name without ``.yaml``: a team name, or ``default``."""

NO_BASE = "none"
"""``extends: none``: a team policy that leaves the default policy out of its chain."""
BUILTIN_NAME = "built-in default"
"""How every report names the packaged default policy (no ``policies/`` directory)."""


WaiverGlob = Annotated[
    str,
    Field(min_length=1, max_length=200, json_schema_extra={"pattern": _WAIVER_GLOB}),
    _matching(
        _WAIVER_GLOB,
        "is not a usable glob — a waiver glob cannot start with '!' (negation), '#' or a "
        "space, end in a lone backslash, hold control characters, nor step above the "
        "repository with '..'; list the specs it waives, relative to the repository root",
    ),
]
"""A gitignore-style glob; no ``!`` negation or ``#`` comment, no control characters."""


class GuardSettings(Model):
    """What the runtime guard stops besides the budget and the per-trial red lines.

    ``stop_at_plateau`` stops a trial once the monitored metric no longer pays the accepted
    ``returns`` over the patience window; the search stops after ``max_failed_in_a_row``
    failed trials in a row or ``max_failed_trials`` in all (unset: never).
    """

    stop_at_plateau: StrictBool = True
    """The runtime guard stops a trial once its metric no longer pays its GPU-hours."""
    max_failed_in_a_row: PositiveInt | None = 3
    """The guard stops the search after this many failed trials in a row."""
    max_failed_trials: PositiveInt | None = None
    """The guard stops the search after this many failed trials in all."""


_OWNED_GLOB = r"^(?![#\s])(?!!\s*$)" + _NO_PARENT + _GLOB_CHARS
OwnedGlob = Annotated[
    str,
    Field(min_length=1, max_length=200, json_schema_extra={"pattern": _OWNED_GLOB}),
    _matching(
        _OWNED_GLOB,
        "is not a usable glob — it cannot start with '#' or a space, be a bare '!', end in a "
        "lone backslash, hold control characters, nor step above the repository with '..'; "
        "write a path glob relative to the repository root, such as experiments/nlp/**",
    ),
]
"""A gitignore-style glob of spec paths (``!glob`` takes back what an earlier one matched)."""


Namespace = Annotated[str, Field(max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")]
"""A Kubernetes namespace name (an RFC 1123 label)."""


class Ownership(Model):
    """What a team's policy owns: which specs may claim the team, and who may spend for it.

    Stated in ``policies/<team>.yaml`` only, for that team (a policy's ``owns:`` is not
    inherited through ``extends``, and the default policy owns nothing). ``specs`` are
    gitignore-style globs of spec paths relative to the repository root: a spec outside
    them cannot say ``team: <team>`` (BG204), and one inside them must. On pull requests,
    the author must be a member of one of ``github_teams`` (``org/slug``, or ``slug`` in the
    repository's organization) to change a spec of the team (BG205). At launch, Kueue
    workloads outside ``namespaces`` and SkyPilot users outside ``skypilot_users`` may not
    spend the team's budget.
    """

    specs: list[OwnedGlob] = Field(default_factory=list)
    """Globs of the team's spec paths, e.g. experiments/nlp/**; a spec elsewhere cannot claim
    the team."""
    github_teams: list[Name] = Field(default_factory=list)
    """On pull requests: GitHub teams (org/slug, or slug) whose members may spend the team's
    budget; the author must be in one."""
    namespaces: list[Namespace] = Field(default_factory=list)
    """Kubernetes namespaces whose Kueue workloads may spend the team's budget; a workload
    elsewhere that names one of the team's specs is rejected (none listed: any namespace)."""
    skypilot_users: list[Name] = Field(default_factory=list)
    """SkyPilot users (as the API server authenticates them) who may launch the team's specs
    (none listed: any user)."""


class Waiver(Model):
    """Suppress one rule for matching specs until a date, with a reason on record.

    ``specs`` is a gitignore-style glob over the spec's path relative to the repository
    root: ``*`` stays within one directory, ``**`` spans directories, and a glob without a
    ``/`` matches a file name at any depth.
    """

    rule: Annotated[str, Field(pattern=r"^BG\d{3}$")]
    """The rule id the waiver suppresses, e.g. BG104."""
    specs: WaiverGlob = "*"
    """A gitignore-style glob of spec paths relative to the repository root."""
    reason: Annotated[str, Field(min_length=3, max_length=500)]
    """Why, kept in every report."""
    expires: dt.date
    """The date after which the waiver no longer applies (YYYY-MM-DD)."""


class Policy(Model):
    """A whole ``kind: Policy`` document, after ``extends`` has been merged.

    ``teams`` lists every team the organization knows: with it, a spec whose
    ``metadata.team`` is neither listed nor has a policy file is an error (BG203), not a
    warning. ``owns`` (a team policy's own) proves a spec's team by its path and author.
    """

    api_version: Literal["budget-gate/v1"] = Field(alias="apiVersion")
    """Always budget-gate/v1."""
    kind: Literal["Policy"]
    """Always Policy."""
    extends: PolicyName | None = None
    """The policy this one extends (default: default; none leaves it out, which is reported)."""
    teams: list[PolicyName] | None = None
    """The teams the organisation has; a spec naming another team is then an error."""
    owns: Ownership | None = None
    """What this team owns: its specs' paths and the GitHub teams that may spend its budget (a
    team policy only; not inherited)."""
    currency: Annotated[str, Field(pattern=r"^[A-Z]{3}$")] = "USD"
    """The ISO 4217 currency every price and limit is in."""
    prices: Prices = Field(default_factory=Prices)
    """Where prices come from, and the team's own."""
    cluster: Cluster = Field(default_factory=Cluster)
    """The shape of the team's cluster."""
    limits: Limits = Field(default_factory=Limits)
    """Hard limits; unset ones are not enforced."""
    approval: Approval = Field(default_factory=Approval)
    """What needs an approval, and who gives it."""
    labels: Labels = Field(default_factory=Labels)
    """Attribution labels specs must carry."""
    practices: Practices = Field(default_factory=Practices)
    """Thresholds of the waste rules."""
    estimation: Estimation = Field(default_factory=Estimation)
    """Assumptions of the expected case."""
    returns: Returns = Field(default_factory=Returns)
    """The return a team accepts for more training."""
    guard: GuardSettings = Field(default_factory=GuardSettings)
    """What the runtime guard stops."""
    reliability: Reliability = Field(default_factory=Reliability)
    """How often trials fail and are retried."""
    calibration: Calibration = Field(default_factory=Calibration)
    """How measured figures (budget-gate calibrate) price specs, and when a declared one is
    flagged."""
    spot: Spot = Field(default_factory=Spot)
    """Spot-capacity assumptions."""
    severity: dict[Annotated[str, Field(pattern=r"^BG\d{3}$")], SeveritySetting] = Field(
        default_factory=dict
    )
    """Severity overrides by rule id: error, approval, warn or off."""
    waivers: list[Waiver] = Field(default_factory=list)
    """Rules suppressed for matching specs until a date."""
    defaults: Facts = Field(default_factory=Facts)
    """Facts the team's W&B, Katib, SkyPilot and Hydra files lack (accelerator, epoch time,
    quality gate); never applied to a budget-gate spec. name and team cannot be defaulted."""

    @model_check
    def _no_identity_defaults(self) -> None:
        if self.defaults.name is not None or self.defaults.team is not None:
            raise ValueError(
                "defaults cannot set name or team — the file names its experiment, and its "
                "team selects this policy"
            )
