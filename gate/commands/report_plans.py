"""The plan of each run's spec version, found by path and fingerprint, for the report.

A run's tags name its spec's path and fingerprint; the version is looked for on disk or in
git history (as ``calibrate --backtest`` finds it) and evaluated once: its price, estimate,
quality gate and monitor, as declared (no fix search, no calibration).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os

from gate.commands.reconcile import requote
from gate.evaluation.evaluate import Evaluator
from gate.integrations.git.spec_versions import HISTORY_BUDGET, SpecVersions, policies_home
from gate.ledger import tracking
from gate.ledger.records import LedgerRecord
from gate.money import to_decimal
from gate.policy.findings import Outcome
from gate.reconcile.actuals import Plan, RunFacts
from gate.reconcile.quality import monitor_for
from gate.report.commitments import NO_TEAM
from gate.report.runs import Priced, asks_approval

NO_SPEC = "no spec at their fingerprint (on disk or in git history)"
UNSEARCHED = (
    f"their spec was not searched for in git history: the runs named more than "
    f"{HISTORY_BUDGET:,} spec paths that are not on disk (their tags are their jobs' word)"
)
INVALID = "their spec no longer evaluates"


class SpecPlans:
    """The plan of each run's spec version, found by path and fingerprint, evaluated once."""

    def __init__(self, evaluator: Evaluator, now: dt.datetime) -> None:
        # No fix search, no calibration: the spec priced from its own figures, as declared.
        self.evaluator = dataclasses.replace(evaluator, fix_estimates=0, calibration=None)
        self.now = now
        self.versions = SpecVersions(home=policies_home(evaluator.policies))
        self._found: dict[tuple[str, str], Priced | str] = {}
        self._files: set[str] = set()
        """Where each version found lives (on disk, or its path in git history)."""

    def __call__(self, facts: RunFacts) -> Priced | str:
        """The plan of the run's spec version, or why there is none."""
        tags = facts.tags
        return self.find(tags.get(tracking.SPEC, ""), tags.get(tracking.FINGERPRINT, ""))

    def find(self, path: str, fingerprint: str) -> Priced | str:
        """The plan of the spec at ``path`` with ``fingerprint``, or why there is none."""
        key = (path, fingerprint)
        if key not in self._found:
            self._found[key] = self._evaluate(path, fingerprint)
        return self._found[key]

    def spec_files(self) -> list[str]:
        """The spec files the versions found live in (a report must not write over one)."""
        return sorted(self._files)

    def needs_approval(self, approval: LedgerRecord) -> bool | None:
        """Whether the approved spec version is over the policy's triggers (``None``: unknown)."""
        priced = self.find(approval.spec, approval.fingerprint)
        return None if isinstance(priced, str) else priced.needs_approval

    def _evaluate(self, path: str, fingerprint: str) -> Priced | str:
        version = self.versions.find(path, fingerprint)
        if version is None:
            return UNSEARCHED if self.versions.exhausted else NO_SPEC
        self._files.add(os.path.abspath(version.path))  # NOTE: not the tag: found from there
        evaluation = (
            self.evaluator.evaluate_doc(version.path, version.doc, parsed=version.spec)
            if version.doc is not None
            else self.evaluator.evaluate_spec(version.path, version.content)
        )
        spec, policy, result = evaluation.spec, evaluation.policy, evaluation.result
        if result.outcome is Outcome.INVALID or not spec or not policy or not result.estimate:
            return INVALID
        plan = Plan(
            spec=spec,
            fingerprint=fingerprint,
            quote=result.estimate.quote,
            estimate=result.estimate,
            monitor=monitor_for(spec, returns=policy.returns),
            now=self.now,
            tolerance=to_decimal(policy.limits.reconcile_tolerance),
            requote=requote(spec, policy),
            on_demand=result.estimate.on_demand,  # the price check compared spot with
        )
        return Priced(
            plan=plan,
            team=spec.metadata.team or NO_TEAM,
            model=spec.metadata.labels.get(tracking.MODEL_LABEL, ""),
            spec=path,
            experiment=spec.metadata.name,
            needs_approval=asks_approval(result.findings),
            provider=spec.resources.cloud or policy.prices.cloud or "",
            tracked_in=spec.tracking.mlflow_experiment or spec.metadata.name,
        )
