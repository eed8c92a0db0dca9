"""One spec through the pipeline: load → validate → price → estimate → rules → verdict."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from gate.errors import InputError, InputErrors
from gate.estimate import estimate
from gate.fingerprint import fingerprint
from gate.loader import LoadedDoc, load_bytes, load_file
from gate.policy import Policy
from gate.policy_loader import PolicySet
from gate.prices import Catalog, Quote, quote
from gate.report import Finding, Outcome, SpecResult
from gate.rules import REGISTRY
from gate.rules.base import RuleContext
from gate.spec import Capacity, Experiment
from gate.validation import validate
from gate.verdict import RawFinding, apply_policy, decide


@dataclass(frozen=True, slots=True)
class Evaluator:
    """What stays the same across the specs of one run: policies, prices, date, options."""

    policies: PolicySet
    catalog: Catalog
    today: dt.date
    fail_on_warn: bool = False

    def evaluate(self, spec_file: str, content: bytes | None = None) -> SpecResult:
        """Evaluate one spec; bad spec input becomes an INVALID result, not an exception.

        ``content`` is the spec's bytes when it does not come from the file itself (the base
        version of a spec, read from git). Policy errors still raise: they are not the
        spec's fault and invalidate the run.
        """
        try:
            doc = load_file(spec_file) if content is None else load_bytes(content, spec_file)
            spec = _parse(doc)
        except (InputError, InputErrors) as exc:
            return _invalid(spec_file, exc)
        loaded = self.policies.for_team(spec.metadata.team)
        policy = loaded.policy
        try:
            price = self._quote(spec, policy, spec.resources.capacity, doc)
        except InputError as exc:
            return _invalid(spec_file, exc)
        est = estimate(spec, policy, price, self._on_demand(spec, policy, doc))
        ctx = RuleContext(spec, est, policy, spec_file, self.today)
        raw = [
            RawFinding(rule.ID, rule.DEFAULT_SEVERITY, v.message, doc.source_map.locate(v.path))
            for rule in REGISTRY.values()
            for v in rule.check(ctx)
        ]
        findings = apply_policy(raw, loaded, spec_file, self.today)
        findings.sort(key=_finding_order)
        return SpecResult(
            file=spec_file,
            outcome=decide(findings, fail_on_warn=self.fail_on_warn),
            name=spec.metadata.name,
            policy=loaded.name,
            fingerprint=fingerprint(spec),
            estimate=est,
            currency=policy.currency,
            findings=tuple(findings),
        )

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
