"""The values reporters see: per-spec results and the whole report.

Findings, outcomes and rule facts come from :mod:`gate.policy.findings`. Reporters render
these and never decide pass or fail; :mod:`gate.policy.verdict` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gate.errors import Problem
from gate.policy.findings import Finding, Outcome, RuleInfo
from gate.policy.model import BUILTIN_NAME

if TYPE_CHECKING:  # loaded only where a result has them (a budget, an approval, a diff)
    from gate.estimate.model import Estimate
    from gate.evaluation.alternatives import Alternative
    from gate.evaluation.diff import SpecDiff
    from gate.formats.model import ImportSummary
    from gate.ledger.approvals import ApprovalCheck
    from gate.ledger.budget import BudgetStatus


BUILTIN_NOTE = (
    "judged by the built-in default policy: there is no policies/ directory at the "
    "repository root (budget-gate init writes one to edit)"
)


@dataclass(frozen=True, slots=True)
class SpecResult:
    """Everything known about one spec after evaluation.

    ``budget`` is this month's spend of its team or cost center (only with a monthly
    budget); ``approval`` is the ledger lookup (only when approvals were consulted).
    """

    file: str
    outcome: Outcome
    name: str | None = None
    policy: str | None = None
    fingerprint: str | None = None
    estimate: Estimate | None = None
    currency: str = "USD"
    findings: tuple[Finding, ...] = ()
    errors: tuple[Problem, ...] = ()
    budget: BudgetStatus | None = None
    approval: ApprovalCheck | None = None
    alternatives: tuple[Alternative, ...] = ()
    """Cheaper plans, priced (only when the evaluator was asked for them)."""
    imported: ImportSummary | None = None
    """For a W&B, Katib, SkyPilot or Hydra file: its format and where each field came from."""
    notes: tuple[str, ...] = ()
    """What the verdict took as given without proof (e.g. a team no policy owns), said aloud."""

    @property
    def fallbacks(self) -> tuple[str, ...]:
        """What every format must say beside the verdict: the built-in policy, the notes."""
        if self.policy is not None and self.policy.startswith(BUILTIN_NAME):
            return (BUILTIN_NOTE, *self.notes)
        return self.notes


DOCS_URL = "https://github.com/budget-gate/budget-gate/blob/main/docs/rules.md"
"""Where ``docs/rules.md`` is published; ``--docs-url`` points reports elsewhere."""


@dataclass(frozen=True, slots=True)
class RenderContext:
    """Where a report will be shown, filled in by the command (reporters read no env).

    ``repository``, ``workflow`` and ``policy_dir`` identify the pull-request comment so
    that a later run updates it in place instead of adding another; ``head_sha`` is the
    commit a pull-request comment was written for, so a run for an older commit can tell
    that it must not overwrite it.
    """

    repository: str = ""
    workflow: str = ""
    policy_dir: str = "policies"
    docs_url: str = DOCS_URL
    base_ref: str | None = None
    head_sha: str | None = None
    quiet: bool = False
    """``check -q``: the text report prints only findings and input errors."""

    def rule_url(self, rule: RuleInfo) -> str:
        """The link to one rule's documentation."""
        return f"{self.docs_url}#{rule.anchor}"


def absent_ledger(where: str) -> str:
    """What a command says when the ledger it read was not there."""
    return (
        f"no ledger at {where}: read as empty, nothing approved or spent is recorded there — "
        "if the ledger is elsewhere, give its URI (--tracking-uri or MLFLOW_TRACKING_URI)"
    )


@dataclass(frozen=True, slots=True)
class LedgerNote:
    """What a run read of the ledger: where, under which signers, and what it left out.

    ``warning`` is said when records are not signed; ``ignored`` counts, by reason, the
    records that did not count (unsigned, a bad signature, malformed, …); ``absent``: there
    was no store at all (a ``sqlite:///`` file not there), so everything read as empty.
    """

    where: str
    signed: bool
    warning: str | None = None
    ignored: tuple[tuple[str, int], ...] = ()
    absent: bool = False

    @property
    def ignored_total(self) -> int:
        """How many records were left out in all."""
        return sum(n for _, n in self.ignored)

    def lines(self) -> list[str]:
        """The note in words, one line per fact (nothing when there is nothing to say)."""
        lines = [f"warning: {absent_ledger(self.where)}"] if self.absent else []
        if self.warning:
            lines.append(f"warning: {self.warning}")
        if self.ignored:
            why = "; ".join(f"{n} {reason}" for reason, n in self.ignored)
            total = self.ignored_total
            noun = "record" if total == 1 else "records"
            lines.append(f"{total} ledger {noun} at {self.where} ignored ({why})")
        return lines


@dataclass(frozen=True, slots=True)
class Report:
    """One evaluation of one or more specs, ready to render in any format.

    ``rules`` documents every rule that was evaluated, fired or not; :attr:`fired` says
    which ones fired. ``diffs`` holds the cost change against ``context.base_ref``, one per
    spec, deleted specs included.
    """

    results: tuple[SpecResult, ...]
    rules: dict[str, RuleInfo] = field(default_factory=dict)
    catalog_source: str = ""
    catalog_date: str = ""
    version: str = ""
    context: RenderContext = field(default_factory=RenderContext)
    diffs: tuple[SpecDiff, ...] = ()
    ledger: LedgerNote | None = None
    """What the run read of the ledger, when it read it."""
    rendered: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Each result as a format renders it on its own (``json``), in order: rendered by the
    process that evaluated it, so a thousand results are not rendered one by one at the end."""

    @property
    def outcome(self) -> Outcome:
        """The worst outcome over all specs (pass when there are none)."""
        return max((r.outcome for r in self.results), key=lambda o: o.rank, default=Outcome.PASS)

    @property
    def fired(self) -> list[str]:
        """The ids of the rules with at least one finding, sorted."""
        return sorted({f.rule_id for r in self.results for f in r.findings})

    def diff_for(self, file: str) -> SpecDiff | None:
        """The cost change of one spec against the base, when a base was given."""
        return next((d for d in self.diffs if d.file == file), None)

    @property
    def removed(self) -> list[SpecDiff]:
        """Diffs of specs that exist only in the base (deleted by the change)."""
        files = {r.file for r in self.results}
        return [d for d in self.diffs if d.file not in files]
