"""One spec through the pipeline: load → validate → price → estimate → rules → verdict.

The ledger, when given, is read through a :class:`gate.ledger.records.LedgerView` (the monthly
budget and approvals); the evaluator never writes to it.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import TYPE_CHECKING

from gate.calibrate.lookup import measured_for
from gate.calibrate.model import Calibration
from gate.errors import InputError, InputErrors
from gate.estimate.flops import with_prior
from gate.estimate.measured import Measured
from gate.estimate.prices import Catalog, Quote, quote
from gate.estimate.scenarios import Estimate, estimate
from gate.estimate.trials import count_trials
from gate.evaluation.report import SpecResult
from gate.ledger.budget import BudgetStatus, budget_scope, month_spend, month_start, spend_status
from gate.ledger.records import (
    ApprovalCheck,
    LedgerQuery,
    LedgerView,
    Requirement,
    check_approvals,
    explain_changed,
)
from gate.ledger.spend import Spend, SpendReader
from gate.ledger.tracking import spec_path
from gate.policy.findings import Finding, Outcome
from gate.policy.loader import LoadedPolicy, PolicySet
from gate.policy.model import Policy, Severity
from gate.policy.rules import REGISTRY
from gate.policy.rules.base import RuleContext
from gate.policy.verdict import RawFinding, apply_approval, apply_policy, decide
from gate.spec.experiment import Capacity, Experiment
from gate.spec.fingerprint import fingerprint
from gate.spec.loader import LoadedDoc, load_bytes, load_file
from gate.spec.validation import validate

if TYPE_CHECKING:
    from gate.evaluation.alternatives import Alternative


@dataclass(frozen=True, slots=True)
class Evaluation:
    """A spec's result, with the parsed spec and policy that ledger commands record."""

    result: SpecResult
    spec: Experiment | None = None
    policy: Policy | None = None


@dataclass(frozen=True, slots=True)
class Evaluator:
    """What stays the same across the specs of one run: policies, prices, date, options."""

    policies: PolicySet
    catalog: Catalog
    today: dt.date
    fail_on_warn: bool = False
    ledger: LedgerView | None = None
    repo_path: Callable[[str], str] | None = None
    """The spec's path relative to the repository root, for waiver globs (the command
    finds the root; without it, the path as given, normalized)."""
    alternatives_for: frozenset[Outcome] = frozenset()
    """The outcomes whose specs get priced alternatives (``estimate --alternatives``, the
    pull-request comment for specs that fail or need approval)."""
    fix_seconds: float = 0.4
    """CPU seconds one spec may spend re-estimating to prove fixes (0 turns fixes off)."""
    calibration: Calibration | None = None
    """Measured epoch times, plateaus and failure rates (``budget-gate calibrate``)."""
    _spends: dict[LedgerQuery, Spend] = field(default_factory=dict, repr=False, compare=False)

    def evaluate(self, spec_file: str, content: bytes | None = None) -> SpecResult:
        """Evaluate one spec; bad spec input becomes an INVALID result, not an exception.

        ``content`` is the spec's bytes when it does not come from the file itself (the base
        version of a spec, read from git). Policy errors still raise: they are not the
        spec's fault and invalidate the run. A ledger that cannot be read raises
        :class:`gate.errors.BackendError`.
        """
        return self.evaluate_spec(spec_file, content).result

    def evaluate_spec(self, spec_file: str, content: bytes | None = None) -> Evaluation:
        """Like :meth:`evaluate`, keeping the parsed spec and policy."""
        try:
            doc = load_file(spec_file) if content is None else load_bytes(content, spec_file)
        except (InputError, InputErrors) as exc:
            return Evaluation(_invalid(spec_file, exc))
        return self.evaluate_doc(spec_file, doc)

    def evaluate_doc(self, spec_file: str, doc: LoadedDoc) -> Evaluation:
        """Evaluate a spec document already loaded (``policy test`` strips its ``expect:``)."""
        try:
            spec = _parse(doc)
        except (InputError, InputErrors) as exc:
            return Evaluation(_invalid(spec_file, exc))
        loaded = self.policies.for_team(spec.metadata.team)
        policy = loaded.policy
        try:
            _check_size(spec, doc)
            price = self._quote(spec, policy, spec.resources.capacity, doc)
            measured = with_prior(spec, self._measured(spec, policy), policy.estimation.mfu)
        except InputError as exc:
            if exc.location is None:
                exc.location = doc.source_map.locate(("workload", "model"))
            return Evaluation(_invalid(spec_file, exc))
        on_demand = self._on_demand(spec, policy, doc)
        started = time.thread_time()  # CPU: the fixes' time bound must not depend on load
        est = estimate(spec, policy, price, on_demand, measured)
        took = time.thread_time() - started
        fp = fingerprint(spec)
        budget = self._budget(spec, policy, spec_file, fp)
        teams = tuple(self.policies.teams())
        ctx = RuleContext(spec, est, policy, spec_file, self.today, budget, teams)
        repo_path = self._repo_path(spec_file, policy)
        findings = _findings(doc, ctx, loaded, repo_path)
        findings = self._fixes(
            findings,
            ctx,
            loaded,
            repo_path,
            lambda s: self._estimate_edit(s, policy, price, on_demand),
            took,
        )
        approval = self._approval(ctx, fp, findings, read=budget is not None)
        if approval is not None and approval.approval is not None:
            findings = apply_approval(findings, approval.approval)
        outcome = decide(findings, fail_on_warn=self.fail_on_warn)
        cheaper = (
            self._alternatives(spec, est, policy, doc) if outcome in self.alternatives_for else ()
        )
        result = SpecResult(
            file=spec_file,
            outcome=outcome,
            name=spec.metadata.name,
            policy=loaded.name,
            fingerprint=fp,
            estimate=est,
            currency=policy.currency,
            findings=tuple(findings),
            budget=budget,
            approval=approval,
            alternatives=cheaper,
        )
        return Evaluation(result, spec, policy)

    def _fixes(
        self,
        findings: list[Finding],
        ctx: RuleContext,
        loaded: LoadedPolicy,
        repo_path: str,
        price: Callable[[Experiment], Estimate],
        took: float,
    ) -> list[Finding]:
        """Proven fixes for limit findings (:mod:`gate.evaluation.fixing`, loaded on need)."""
        if not any(f.active and f.severity is not Severity.WARN for f in findings):
            return findings  # NOTE: nothing blocks, nothing to fix: a passing check loads less
        from gate.evaluation.fixing import attach_fixes

        return attach_fixes(findings, ctx, loaded, repo_path, price, took, self.fix_seconds)

    def _alternatives(
        self, spec: Experiment, est: Estimate, policy: Policy, doc: LoadedDoc
    ) -> tuple[Alternative, ...]:
        from gate.evaluation.alternatives import alternatives

        return alternatives(spec, est, lambda s: self._price(s, policy, doc))

    def _price(self, spec: Experiment, policy: Policy, doc: LoadedDoc) -> Estimate | None:
        """An edited spec's estimate at its own price; ``None`` when it has none."""
        try:
            price = self._quote(spec, policy, spec.resources.capacity, doc)
            return self._estimate_edit(spec, policy, price, self._on_demand(spec, policy, doc))
        except InputError:  # no price, or a precision the FLOPs prior has no peak for
            return None

    def _estimate_edit(
        self, spec: Experiment, policy: Policy, price: Quote, on_demand: Quote | None
    ) -> Estimate:
        """An edited spec's estimate, priced from the same calibration as the original."""
        return estimate(spec, policy, price, on_demand, self._measured(spec, policy))

    def _measured(self, spec: Experiment, policy: Policy) -> Measured | None:
        """The calibration's figures for ``spec``, unless there is none or the policy opts out."""
        if self.calibration is None or not policy.calibration.use:
            return None
        return measured_for(
            self.calibration, spec, policy.calibration, policy.reliability.failure_rate
        )

    def _repo_path(self, spec_file: str, policy: Policy) -> str:
        """The path waiver globs match; the root is looked up only when there are waivers."""
        if policy.waivers and self.repo_path is not None:
            return self.repo_path(spec_file)
        return PurePath(os.path.normpath(spec_file)).as_posix()

    def _quote(self, spec: Experiment, policy: Policy, capacity: Capacity, doc: LoadedDoc) -> Quote:
        return quote(
            self.catalog,
            policy,
            spec.resources.accelerator,
            capacity,
            spec.resources.cloud or policy.prices.cloud,
            location=doc.source_map.locate(("resources", "accelerator")),
        )

    def _on_demand(self, spec: Experiment, policy: Policy, doc: LoadedDoc) -> Quote | None:
        """The on-demand price a spot spec is compared with, when there is one."""
        if spec.resources.capacity is not Capacity.SPOT:
            return None
        try:
            return self._quote(spec, policy, Capacity.ON_DEMAND, doc)
        except InputError:
            return None

    def _budget(
        self, spec: Experiment, policy: Policy, spec_file: str, fp: str
    ) -> BudgetStatus | None:
        scope = budget_scope(spec, policy)
        if scope is None or self.ledger is None:
            return None
        now = self.ledger.now
        query = scope.query(month_start(now))
        spend = self._spends.get(query)
        if spend is None:
            store = self.ledger.store()
            if isinstance(store, SpendReader):
                spend = store.month_spend(query, now)
            else:
                spend = month_spend(store.query(query), now)
            self._spends[query] = spend
        return spend_status(
            spend,
            policy=policy,
            scope=scope,
            now=now,
            spec=spec_path(spec_file),
            fingerprint=fp,
        )

    def _approval(
        self, ctx: RuleContext, fp: str, findings: list[Finding], *, read: bool
    ) -> ApprovalCheck | None:
        """The approval check, when approvals count: always, or once the budget read the ledger."""
        ledger = self.ledger
        if ledger is None or not (ledger.approvals or (read and ledger.approvals_if_read)):
            return None
        if decide(findings, fail_on_warn=self.fail_on_warn) is not Outcome.APPROVAL_REQUIRED:
            return None
        policy = ctx.policy
        need = Requirement(
            fp,
            ctx.estimate.worst.cost,
            policy.currency,
            policy.approval.approvers,
            ctx.spec.metadata.owner,
            tuple(policy.approval.sources),
        )
        found = check_approvals(ledger.records(LedgerQuery(fingerprint=fp)), need, ledger.now)
        if found.approval is not None:
            return found
        path = ledger.records(LedgerQuery(spec=spec_path(ctx.spec_file)))
        changed = explain_changed(path, fp)
        return ApprovalCheck(None, (*found.stale, changed)) if changed else found


def _findings(
    doc: LoadedDoc, ctx: RuleContext, loaded: LoadedPolicy, repo_path: str
) -> list[Finding]:
    raw = [
        RawFinding(
            rule.ID, v.severity or rule.DEFAULT_SEVERITY, v.message, doc.source_map.locate(v.path)
        )
        for rule in REGISTRY.values()
        for v in rule.check(ctx)
    ]
    findings = apply_policy(raw, loaded, repo_path, ctx.today)
    findings.sort(key=_finding_order)
    return findings


MAX_TRIALS = 10**18
"""Beyond a quintillion trials a search is a typo, not a plan (10¹⁵ is still priced)."""


def _check_size(spec: Experiment, doc: LoadedDoc) -> None:
    trials = count_trials(spec.search, spec.workload.max_epochs)
    if trials > MAX_TRIALS:
        raise InputError(
            f"the search has about 10^{len(str(trials)) - 1} trials",
            location=doc.source_map.locate(("search",), key=True),
            hint="check the grid's value lists and seeds; no budget covers this many trials",
        )


def _parse(doc: LoadedDoc) -> Experiment:
    kind = doc.data.get("kind")
    if kind == "Policy":
        raise InputError(
            "this file is a policy, not an experiment spec",
            location=doc.source_map.locate(("kind",)),
            hint="check specs with budget-gate check; policies go in --policy-dir",
        )
    return validate(Experiment, doc)


def _invalid(spec_file: str, exc: InputError | InputErrors) -> SpecResult:
    errors = exc.errors if isinstance(exc, InputErrors) else [exc]
    return SpecResult(spec_file, Outcome.INVALID, errors=tuple(e.problem for e in errors))


def _finding_order(finding: Finding) -> tuple[str, int, int, str]:
    loc = finding.location
    if loc is None:
        return ("", 0, 0, finding.rule_id)
    return (loc.file, loc.line, loc.col, finding.rule_id)
