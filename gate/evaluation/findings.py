"""Every rule on a priced spec, through the policy's severities and waivers, in file order."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from gate.policy.findings import Finding
from gate.policy.loader import LoadedPolicy
from gate.policy.model import Severity
from gate.policy.rules import REGISTRY
from gate.policy.rules.base import Rule, RuleContext, Violation
from gate.policy.verdict import RawFinding, apply_policy, severity_for
from gate.spec.loader import DataPath, LoadedDoc

if TYPE_CHECKING:  # an engine's file only: a spec's check loads no engine mapper
    from gate.formats.model import Words


def rule_findings(
    ctx: RuleContext,
    loaded: LoadedPolicy,
    repo_path: str,
    *,
    doc: LoadedDoc | None = None,
    words: Words | None = None,
    rules: Sequence[Rule] | None = None,
) -> list[Finding]:
    """What every rule finds in ``ctx``, as the policy ``loaded`` grades and waives it.

    With ``doc`` each finding is located in it; with ``words`` (an engine's file) its
    message says where in that file to add a field. Ordered by file, line, column, rule.
    With ``rules`` only those run (a fix's proof runs :func:`rules_that_may` block).
    """
    say = _where_to_add(words)
    raw = [
        RawFinding(
            rule.ID,
            _severity_of(rule, v),
            say(rule.ID, v.message, v.path),
            doc.source_map.locate(v.path) if doc is not None else None,
        )
        for rule in (REGISTRY.values() if rules is None else rules)
        for v in rule.check(ctx)
    ]
    findings = apply_policy(raw, loaded, repo_path, ctx.today)
    findings.sort(key=_finding_order)
    return findings


def rules_that_may(blocking: Collection[Severity], loaded: LoadedPolicy) -> list[Rule]:
    """The rules whose findings may have a ``blocking`` severity, and those a waiver names.

    What a fix's proof runs: it asks only whether a blocking finding is new, and a warning
    rule may price a lot (spot against on-demand, a counterfactual plan); a waiver's rule
    runs so that the waiver is used as in a full run. A finding's severity is the policy's
    ``severity:`` setting for its rule, else the rule's own (any, for a rule that grades each
    violation).
    """
    policy = loaded.policy
    waived = {waiver.rule for waiver in policy.waivers}
    return [
        rule
        for rule in REGISTRY.values()
        if rule.ID in waived
        or severity_for(policy, rule.ID, rule.DEFAULT_SEVERITY) in blocking
        or (rule.ID not in policy.severity and _grades_each(rule))
    ]


def _grades_each(rule: Rule) -> bool:
    return bool(getattr(rule, "VIOLATION_SEVERITY", False))


def _severity_of(rule: Rule, violation: Violation) -> Severity:
    """The violation's own severity, from a rule that says it grades each; else the rule's."""
    if violation.severity is None:
        return rule.DEFAULT_SEVERITY
    if not _grades_each(rule):  # NOTE: a fix's proof skips a warning rule that says nothing
        raise AssertionError(f"{rule.ID} grades a violation without VIOLATION_SEVERITY")
    return violation.severity


def _where_to_add(words: Words | None) -> Callable[[str, str, DataPath], str]:
    """A finding's message as the rule says it; in an engine's file, with where to add a field."""
    if words is None:
        return lambda _rule, message, _path: message
    from gate.evaluation.importing import with_where_to_add

    return lambda rule, message, path: with_where_to_add(rule, message, path, words)


def _finding_order(finding: Finding) -> tuple[str, int, int, str]:
    loc = finding.location
    if loc is None:
        return ("", 0, 0, finding.rule_id)
    return (loc.file, loc.line, loc.col, finding.rule_id)
