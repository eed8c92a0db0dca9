"""One spec through the pipeline: load → validate → price → estimate → rules → verdict.

The ledger, when given, is read through a :class:`gate.ledger.view.LedgerView` (the monthly
budget and approvals); the evaluator never writes to it. What only some specs need (the
calibration's lookup, the ledger's sums and approvals, an engine file's words) is imported
when a spec needs it: a plain ``check`` of a spec without a budget imports none of it.
The document is read as a spec by :mod:`gate.evaluation.reading`, and the ledger by
:mod:`gate.evaluation.ledger_checks`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import TYPE_CHECKING

from gate.errors import InputError, InputErrors
from gate.estimate.flops import with_prior
from gate.estimate.measured import Measured
from gate.estimate.model import Estimate
from gate.estimate.prices import Catalog, Quote
from gate.estimate.scenarios import estimate
from gate.evaluation.findings import rule_findings
from gate.evaluation.notes import verdict_notes
from gate.evaluation.quotes import on_demand_quote, spec_quote
from gate.evaluation.reading import (
    check_size,
    invalid_result,
    parse_spec,
    refuse_spec_named_folders,
)
from gate.evaluation.report import SpecResult
from gate.formats import Format, kubernetes_object, sniff
from gate.policy.findings import Finding, Outcome
from gate.policy.loader import LoadedPolicy, PolicySet
from gate.policy.model import Ownership, Policy, Severity
from gate.policy.rules.base import RuleContext, Spender
from gate.policy.verdict import apply_approval, decide
from gate.spec.experiment import Experiment
from gate.spec.fingerprint import fingerprint
from gate.spec.loader import LoadedDoc, load_bytes, load_file

if TYPE_CHECKING:
    from gate.calibrate.model import Calibration
    from gate.evaluation.alternatives import Alternative
    from gate.formats.model import FactMap, Imported
    from gate.ledger.approvals import ApprovalCheck
    from gate.ledger.budget import BudgetStatus
    from gate.ledger.records import LedgerQuery, LedgerRecord
    from gate.ledger.spend import Spend
    from gate.ledger.view import LedgerView


@dataclass(frozen=True, slots=True)
class Evaluation:
    """A spec's result, with the parsed spec and policy that ledger commands record.

    ``path`` is the spec's path as the ledger names it: relative to the repository root,
    so an approval is bound to one path whatever directory a command runs in.
    """

    result: SpecResult
    spec: Experiment | None = None
    policy: Policy | None = None
    path: str = ""


FIX_ESTIMATES = 64
"""Edited specs one spec may price to prove its fixes: a count, not a time, so the same spec
gets the same fixes on any machine under any load (imagenet-bruteforce's 8 limit findings
take 51)."""


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
    fix_estimates: int = FIX_ESTIMATES
    """Edited specs one spec may price to prove fixes (0 turns fixes off)."""
    calibration: Calibration | None = None
    """Measured epoch times, plateaus and failure rates (``budget-gate calibrate``)."""
    launch_key: str | None = None
    """The launch this evaluation is part of: its own launch does not use its approval up."""
    spender: Spender | None = None
    """Who would spend: the pull request's author and their GitHub teams (only in the flow)."""
    as_of: str | None = None
    """The moment ``--as-of`` judges at instead of now, as given: every result says it."""
    _spends: dict[LedgerQuery, Spend] = field(default_factory=dict, repr=False, compare=False)
    _docs: dict[tuple[str, bytes], LoadedDoc] = field(
        default_factory=dict, repr=False, compare=False
    )
    """Specs given as bytes, parsed once (the Kueue controller judges one spec per Workload)."""

    def __post_init__(self) -> None:
        # NOTE: the ledger is judged by the signers of the policies in force (the base's on
        # a pull request), so the view takes its trust from the policy set it serves.
        if self.ledger is not None and self.ledger.trust is None:
            self.ledger.judge = self.policies.trust  # read when the ledger is, not before

    def evaluate(self, spec_file: str, content: bytes | None = None) -> SpecResult:
        """Evaluate one spec; bad spec input becomes an INVALID result, not an exception.

        ``content`` is the spec's bytes when it does not come from the file itself (the base
        version of a spec, read from git). Policy errors still raise: they are not the
        spec's fault and invalidate the run. A ledger that cannot be read raises
        :class:`gate.errors.BackendError`.
        """
        return self.evaluate_spec(spec_file, content).result

    def evaluate_spec(
        self, spec_file: str, content: bytes | None = None, launch: FactMap | None = None
    ) -> Evaluation:
        """Like :meth:`evaluate`, keeping the parsed spec and policy.

        ``launch``: facts of the task that launches an engine's file (a SkyPilot task that
        runs a W&B sweep gives its hardware).
        """
        try:
            refuse_spec_named_folders(spec_file)
            doc = load_file(spec_file) if content is None else self._parsed(spec_file, content)
        except (InputError, InputErrors) as exc:
            return Evaluation(invalid_result(spec_file, exc))
        return self.evaluate_doc(spec_file, doc, launch)

    def _parsed(self, spec_file: str, content: bytes) -> LoadedDoc:
        key = (spec_file, content)
        if key not in self._docs:
            self._docs[key] = load_bytes(content, spec_file)
        return self._docs[key]

    def evaluate_doc(
        self,
        spec_file: str,
        doc: LoadedDoc,
        launch: FactMap | None = None,
        *,
        parsed: Experiment | None = None,
    ) -> Evaluation:
        """Evaluate a spec document already loaded (``policy test`` strips its ``expect:``).

        A W&B, Katib, SkyPilot or Hydra file is read as the spec it stands for first.
        ``parsed`` is the document validated already (the monthly report finds each spec
        version by the fingerprint of its validated document).
        """
        fmt = sniff(doc.data)
        imported = None
        try:
            if fmt is not Format.BUDGET_GATE:
                imported = self.import_doc(doc, fmt, launch or {})
                doc = imported.doc
            elif (found := kubernetes_object(doc.data)) is not None:
                raise InputError(
                    f"{found} is a Kubernetes object, not an experiment spec: Kueue's admission "
                    "check judges it when it is submitted",
                    location=doc.source_map.locate(("kind",)),
                    hint="name its spec in the pod template's budget-gate/spec annotation for "
                    "budget-gate serve kueue-admission (docs/kueue.md), and check that spec",
                )
            spec = parsed if parsed is not None and imported is None else parse_spec(doc)
        except (InputError, InputErrors) as exc:
            return Evaluation(invalid_result(spec_file, exc, fmt))
        loaded = self.policies.for_team(spec.metadata.team)
        policy = loaded.policy
        try:
            check_size(spec, doc)
            price = spec_quote(self.catalog, self.policies, spec, policy, doc)
            measured = with_prior(spec, self._measured(spec, policy), policy.estimation.mfu)
        except InputError as exc:
            if exc.location is None:
                exc.location = doc.source_map.locate(("workload", "model"))
            return Evaluation(invalid_result(spec_file, exc))
        on_demand = on_demand_quote(self.catalog, self.policies, spec, policy, doc, price)
        est = estimate(spec, policy, price, on_demand, measured)
        return self._judge(
            spec_file,
            doc,
            spec,
            loaded,
            est,
            lambda s: self._estimate_edit(s, policy, price, on_demand),
            imported,
        )

    def _judge(
        self,
        spec_file: str,
        doc: LoadedDoc,
        spec: Experiment,
        loaded: LoadedPolicy,
        est: Estimate,
        reprice: Callable[[Experiment], Estimate],
        imported: Imported | None,
    ) -> Evaluation:
        """The priced spec through the rules, its fixes, the ledger and the verdict.

        ``reprice`` prices an edited spec as this one was priced (a fix's proof).
        """
        policy = loaded.policy
        fp = fingerprint(spec)
        path = self.ledger_path(spec_file)
        budget = self._budget(spec, policy, path, fp)
        teams = tuple(self.policies.teams())
        owners = self.policies.owners()
        repo_path = self._repo_path(spec_file, policy, bool(owners))
        ctx = RuleContext(
            spec, est, policy, spec_file, self.today, budget, teams, owners, repo_path, self.spender
        )
        words = imported.words if imported is not None else None
        findings = rule_findings(ctx, loaded, repo_path, doc=doc, words=words)
        findings = self._fixes(findings, ctx, loaded, repo_path, reprice)
        approval = self._approval(ctx, fp, path, findings, read=budget is not None)
        if approval is not None and approval.approval is not None:
            findings = apply_approval(findings, approval.approval)
        outcome = decide(findings, fail_on_warn=self.fail_on_warn)
        cheaper = (
            self._alternatives(spec, est, policy, doc) if outcome in self.alternatives_for else ()
        )
        if words is not None:
            from gate.evaluation.importing import in_file_words

            findings, cheaper = in_file_words(findings, cheaper, words)
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
            imported=imported.summary if imported is not None else None,
            notes=verdict_notes(
                spec, policy, est.measured, self.as_of, teams, repo_path, _owning_specs(owners)
            ),
        )
        return Evaluation(result, spec, policy, path)

    def with_launch_key(self, key: str) -> Evaluator:
        """The same evaluator (the month's sums it read included), judging as launch ``key``."""
        return dataclasses.replace(self, launch_key=key)

    def remember(self, record: LedgerRecord) -> None:
        """Fold a record this command just wrote (a launch) into the sums it already read."""
        if self.ledger is None:
            return
        self.ledger.remember(record)
        if record.recorded_at > self.ledger.now:
            record = dataclasses.replace(record, recorded_at=self.ledger.now)
        for query, spend in self._spends.items():
            if query.matches(record):
                spend.add(record)

    def ledger_path(self, spec_file: str) -> str:
        """The spec's path as the ledger records it: relative to the repository root."""
        if self.repo_path is not None:
            return self.repo_path(spec_file)
        return PurePath(os.path.normpath(spec_file)).as_posix()

    def import_doc(self, doc: LoadedDoc, fmt: Format, launch: FactMap) -> Imported:
        """An engine's file as a spec, under the policy of the team it names."""
        from gate.evaluation.importing import import_doc

        return import_doc(
            doc,
            fmt,
            policies=self.policies,
            catalog=self.catalog,
            calibration=self.calibration,
            launch=launch,
        )

    def _fixes(
        self,
        findings: list[Finding],
        ctx: RuleContext,
        loaded: LoadedPolicy,
        repo_path: str,
        price: Callable[[Experiment], Estimate],
    ) -> list[Finding]:
        """Proven fixes for limit findings (:mod:`gate.evaluation.fixing`, loaded on need)."""
        if not any(f.active and f.severity is not Severity.WARN for f in findings):
            return findings  # NOTE: nothing blocks, nothing to fix: a passing check loads less
        from gate.evaluation.fixing import attach_fixes

        return attach_fixes(
            findings, ctx, loaded, repo_path, price, self.fix_estimates, self.fail_on_warn
        )

    def _alternatives(
        self, spec: Experiment, est: Estimate, policy: Policy, doc: LoadedDoc
    ) -> tuple[Alternative, ...]:
        from gate.evaluation.alternatives import alternatives

        return alternatives(spec, est, lambda s: self._price(s, policy, doc))

    def _price(self, spec: Experiment, policy: Policy, doc: LoadedDoc) -> Estimate | None:
        """An edited spec's estimate at its own price; ``None`` when it has none."""
        try:
            price = spec_quote(self.catalog, self.policies, spec, policy, doc)
            return self._estimate_edit(
                spec,
                policy,
                price,
                on_demand_quote(self.catalog, self.policies, spec, policy, doc, price),
            )
        except InputError:  # no price, or a precision the FLOPs prior has no peak for
            return None

    def _estimate_edit(
        self, spec: Experiment, policy: Policy, price: Quote, on_demand: Quote | None
    ) -> Estimate:
        """An edited spec's estimate, priced from the same calibration as the original.

        What its stop conditions save and its assumptions are left out: no rule reads them
        (nor a fix's summary, nor a cheaper plan's).
        """
        measured = self._measured(spec, policy)
        return estimate(
            spec, policy, price, on_demand, measured, savings=False, notes=False, lazy=True
        )

    def _measured(self, spec: Experiment, policy: Policy) -> Measured | None:
        """The calibration's figures for ``spec``, unless there is none or the policy opts out."""
        if self.calibration is None or not policy.calibration.use:
            return None
        from gate.calibrate.lookup import measured_for

        return measured_for(
            self.calibration, spec, policy.calibration, policy.reliability.failure_rate
        )

    def _repo_path(self, spec_file: str, policy: Policy, owned: bool) -> str:
        """The path waiver and ownership globs match; the root is looked up only for them."""
        if (policy.waivers or owned) and self.repo_path is not None:
            return self.repo_path(spec_file)
        return PurePath(os.path.normpath(spec_file)).as_posix()

    def _budget(self, spec: Experiment, policy: Policy, path: str, fp: str) -> BudgetStatus | None:
        if self.ledger is None or policy.limits.monthly_budget is None:
            return None  # NOTE: no budget, no ledger: such a check never imports it
        from gate.evaluation.ledger_checks import budget_status

        return budget_status(self.ledger, self._spends, spec, policy, path, fp)

    def _approval(
        self, ctx: RuleContext, fp: str, path: str, findings: list[Finding], *, read: bool
    ) -> ApprovalCheck | None:
        """The approval check, when approvals count: always, or once the budget read the ledger."""
        ledger = self.ledger
        if ledger is None or not (ledger.approvals or (read and ledger.approvals_if_read)):
            return None
        if decide(findings, fail_on_warn=self.fail_on_warn) is not Outcome.APPROVAL_REQUIRED:
            return None
        from gate.evaluation.ledger_checks import approval_check

        return approval_check(ledger, ctx, fp, path, self.launch_key)


def _owning_specs(owners: dict[str, Ownership]) -> tuple[str, ...]:
    """The teams whose ``owns.specs`` place specs by their path."""
    return tuple(team for team, owns in owners.items() if owns.specs)
