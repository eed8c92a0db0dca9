"""Proven fixes: the candidate edits of :mod:`gate.policy.fixes` that re-evaluation confirms.

A candidate is applied to the spec, the edited spec is validated and priced again, and every
rule that may block runs on it under the same policy, waivers and budget. It is kept only
when the finding it fixes is gone and no rule fires at ``error`` or ``approval`` (or
``warn``, under ``--fail-on warn``) that did not before.

The search is bounded twice, both times by counts: a handful of re-estimates per knob
(:mod:`gate.policy.fixes`) and a number of re-estimates per spec
(:data:`gate.evaluation.evaluate.FIX_ESTIMATES`), fewer for a spec whose estimate is
costly (ASHA's promotions simulated, or Hyperband at η near 1 with a hundred brackets of a
hundred rungs): :data:`WORK_STEPS` for the spec's own estimate and its fixes' together,
counted in :attr:`gate.estimate.model.Estimate.work_steps` (a million-trial ASHA over
10,000 epochs gets one re-estimate, Hyperband at η = 1.1 over 10,000 epochs none).
Counts, not a time: a clock (even the thread's CPU time) depends on the machine and its
load, and the same spec must get the same fixes in a pull-request comment, a golden file
and a developer's terminal.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from gate.estimate.model import Estimate
from gate.evaluation.findings import rule_findings, rules_that_may
from gate.policy.counterfactual import apply_edits
from gate.policy.findings import Edit, Finding, Fix
from gate.policy.fixes import LIMIT_RULES, candidates
from gate.policy.loader import LoadedPolicy
from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, hours, money, plural
from gate.policy.verdict import blocking_severities
from gate.spec.experiment import Experiment

Pricer = Callable[[Experiment], Estimate]


class _OutOfEstimates(Exception):
    """The spec's re-estimates for fixes are spent."""


WORK_STEPS = 1_000_000
"""Work steps (:attr:`gate.estimate.model.Estimate.work_steps`) one spec's pricing may cost,
its own estimate and its fixes' re-estimates together: about half a second here. A spec
whose own estimate takes more than half of it gets no fixes searched."""


def attach_fixes(
    findings: list[Finding],
    ctx: RuleContext,
    loaded: LoadedPolicy,
    repo_path: str,
    price: Pricer,
    estimates: int,
    fail_on_warn: bool = False,
) -> list[Finding]:
    """``findings`` with the proven fixes of each active limit finding attached.

    At most ``estimates`` edited specs are priced (0: no fixes), and no more than
    :data:`WORK_STEPS` allows beside the spec's own estimate's steps; the findings searched
    before the count ran out keep their fixes.
    """
    targets = [f for f in findings if f.active and f.rule_id in LIMIT_RULES]
    steps = ctx.estimate.work_steps
    if steps:
        estimates = min(estimates, (WORK_STEPS - steps) // steps)
    if not targets or estimates <= 0:
        return findings
    cache: dict[tuple[tuple[tuple[str, ...], str], ...], RuleContext | None] = {}

    def probe(edits: tuple[Edit, ...]) -> RuleContext | None:
        key = tuple((e.path, repr(e.value)) for e in edits)  # NOTE: 1, 1.0 and True differ
        if key not in cache:
            if len(cache) >= estimates:
                raise _OutOfEstimates
            cache[key] = _edited(ctx, edits, price)
        return cache[key]

    blocking = blocking_severities(fail_on_warn=fail_on_warn)
    before = _blocking(findings, blocking)
    # NOTE: a proof asks only whether a blocking finding is new: a rule that blocks already
    # adds none (the finding it fixes was checked gone by its search)
    rules = [rule for rule in rules_that_may(blocking, loaded) if rule.ID not in before]
    fixed: dict[str, tuple[Fix, ...]] = {}
    for finding in targets:
        if finding.rule_id in fixed:
            continue
        try:
            found = candidates(finding.rule_id, ctx, probe)
        except _OutOfEstimates:
            break
        proven = []
        for edits in found:
            edited = probe(edits)
            if edited is None:
                continue
            after = _blocking(rule_findings(edited, loaded, repo_path, rules=rules), blocking)
            if finding.rule_id not in after and after <= before:
                proven.append(Fix(edits, describe(edited)))
        fixed[finding.rule_id] = tuple(proven)
    return [
        dataclasses.replace(f, fixes=fixed[f.rule_id]) if fixed.get(f.rule_id) and f.active else f
        for f in findings
    ]


def describe(ctx: RuleContext) -> str:
    """What an edited plan comes to, in the enforced scenario."""
    s = ctx.enforced
    gpus = s.concurrency * ctx.spec.resources.gpus_per_trial
    return (
        f"{s.name}-case {plural(s.trials, 'trial')}, {plural(s.waves, 'wave')} of "
        f"{s.concurrency} ({plural(gpus, 'GPU')} at once), {hours(s.wall_clock_hours)}, "
        f"{money(s.cost, ctx)}, {money(s.cost_per_trial, ctx)} per trial"
    )


def _edited(ctx: RuleContext, edits: tuple[Edit, ...], price: Pricer) -> RuleContext | None:
    spec = apply_edits(ctx.spec, edits)
    if spec is None:
        return None
    return dataclasses.replace(ctx, spec=spec, estimate=price(spec))


def _blocking(findings: list[Finding], blocking: tuple[Severity, ...]) -> set[str]:
    return {f.rule_id for f in findings if f.active and f.severity in blocking}
