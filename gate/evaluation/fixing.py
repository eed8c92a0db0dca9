"""Proven fixes: the candidate edits of :mod:`gate.policy.fixes` that re-evaluation confirms.

A candidate is applied to the spec, the edited spec is validated and priced again, and every
rule runs on it under the same policy, waivers and budget. It is kept only when the finding
it fixes is gone and no rule fires at ``error`` or ``approval`` that did not before.

The search is bounded twice: a handful of re-estimates per knob (:mod:`gate.policy.fixes`)
and :data:`FIX_SECONDS` of re-estimating per spec, so a spec whose single estimate is slow
(a million-trial ASHA over 10,000 epochs) keeps the fixes found in time and no more. The
time is the evaluating thread's CPU time, not the wall clock: on a loaded machine (a CI
runner, a parallel test suite, a server's other requests) the same spec gets the same fixes.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Callable

from gate.estimate.scenarios import Estimate
from gate.policy.counterfactual import apply_edits
from gate.policy.findings import Edit, Finding, Fix
from gate.policy.fixes import LIMIT_RULES, candidates
from gate.policy.loader import LoadedPolicy
from gate.policy.model import Severity
from gate.policy.rules import REGISTRY
from gate.policy.rules.base import RuleContext, hours, money, plural
from gate.policy.verdict import RawFinding, apply_policy
from gate.spec.experiment import Experiment

Pricer = Callable[[Experiment], Estimate]
FIX_SECONDS = 0.4
"""Re-estimating time (CPU seconds) one spec may spend on fixes before the search stops."""


class _OutOfTime(Exception):
    """The spec's time for fixes is spent."""


_BLOCKING = (Severity.ERROR, Severity.APPROVAL)


def attach_fixes(
    findings: list[Finding],
    ctx: RuleContext,
    loaded: LoadedPolicy,
    repo_path: str,
    price: Pricer,
    estimate_seconds: float = 0.0,
    seconds: float = FIX_SECONDS,
) -> list[Finding]:
    """``findings`` with the proven fixes of each active limit finding attached.

    ``estimate_seconds`` is how long (CPU) the spec's own estimate took: a re-estimate that
    would not end within the spec's ``seconds`` (:data:`FIX_SECONDS`) is not started.
    """
    targets = [f for f in findings if f.active and f.rule_id in LIMIT_RULES]
    if not targets:
        return findings
    cache: dict[str, RuleContext | None] = {}
    deadline = time.thread_time() + seconds

    def probe(edits: tuple[Edit, ...]) -> RuleContext | None:
        key = repr(edits)
        if key not in cache:
            if time.thread_time() + estimate_seconds > deadline:
                raise _OutOfTime
            cache[key] = _edited(ctx, edits, price)
        return cache[key]

    before = _blocking(findings)
    fixed: dict[str, tuple[Fix, ...]] = {}
    for finding in targets:
        if finding.rule_id in fixed:
            continue
        try:
            found = candidates(finding.rule_id, ctx, probe)
        except _OutOfTime:
            break
        proven = []
        for edits in found:
            edited = probe(edits)
            if edited is None:
                continue
            after = _blocking(_rerun(edited, loaded, repo_path, ctx.today))
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


def _rerun(ctx: RuleContext, loaded: LoadedPolicy, repo_path: str, today: dt.date) -> list[Finding]:
    raw = [
        RawFinding(rule.ID, v.severity or rule.DEFAULT_SEVERITY, v.message, None)
        for rule in REGISTRY.values()
        for v in rule.check(ctx)
    ]
    return apply_policy(raw, loaded, repo_path, today)


def _blocking(findings: list[Finding]) -> set[str]:
    return {f.rule_id for f in findings if f.active and f.severity in _BLOCKING}
