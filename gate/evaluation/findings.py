"""Every rule on a priced spec, through the policy's severities and waivers, in file order."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gate.policy.findings import Finding
from gate.policy.loader import LoadedPolicy
from gate.policy.rules import REGISTRY
from gate.policy.rules.base import RuleContext
from gate.policy.verdict import RawFinding, apply_policy
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
) -> list[Finding]:
    """What every rule finds in ``ctx``, as the policy ``loaded`` grades and waives it.

    With ``doc`` each finding is located in it; with ``words`` (an engine's file) its
    message says where in that file to add a field. Ordered by file, line, column, rule.
    """
    say = _where_to_add(words)
    raw = [
        RawFinding(
            rule.ID,
            v.severity or rule.DEFAULT_SEVERITY,
            say(rule.ID, v.message, v.path),
            doc.source_map.locate(v.path) if doc is not None else None,
        )
        for rule in REGISTRY.values()
        for v in rule.check(ctx)
    ]
    findings = apply_policy(raw, loaded, repo_path, ctx.today)
    findings.sort(key=_finding_order)
    return findings


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
