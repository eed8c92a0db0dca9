"""Findings + severities + waivers + approvals → the spec's outcome.

The one place pass/fail is decided.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from gate.errors import Location
from gate.policy.findings import Finding, Outcome
from gate.policy.loader import LoadedPolicy
from gate.policy.model import Policy, Severity
from gate.policy.rules import expired_waiver, extends_none, unused_waiver
from gate.policy.rules.waivers import find_waiver

if TYPE_CHECKING:
    from gate.ledger.records import LedgerRecord


@dataclass(frozen=True, slots=True)
class RawFinding:
    """A rule's violation placed in the spec, before the policy has its say."""

    rule_id: str
    default_severity: Severity
    message: str
    location: Location | None


def apply_policy(
    raw: Iterable[RawFinding], loaded: LoadedPolicy, repo_path: str, today: dt.date
) -> list[Finding]:
    """Stamp severities and waivers onto findings; report waivers and the policy's chain.

    ``repo_path`` is the spec's path relative to the repository root, which waiver globs
    match. Policy severity overrides win over rule defaults, and ``off`` drops the
    finding. Expired and unused waivers, and a chain that leaves ``default`` out
    (``extends: none``), are findings located in the policy.
    """
    policy = loaded.policy
    used: set[int] = set()
    findings: list[Finding] = []
    for item in raw:
        severity = severity_for(policy, item.rule_id, item.default_severity)
        if severity is None:
            continue
        waiver = find_waiver(policy.waivers, item.rule_id, repo_path, today)
        if waiver is not None:
            used.add(waiver)
        reason = policy.waivers[waiver].reason if waiver is not None else None
        findings.append(Finding(item.rule_id, severity, item.message, item.location, reason))
    return findings + _policy_findings(loaded, repo_path, today, used)


def _policy_findings(
    loaded: LoadedPolicy, repo_path: str, today: dt.date, used: set[int]
) -> list[Finding]:
    """Findings located in the policy: expired and unused waivers, ``extends: none``."""
    policy = loaded.policy
    waivers = [
        (expired_waiver, expired_waiver.check_waivers(policy.waivers, repo_path, today)),
        (unused_waiver, unused_waiver.check_waivers(policy.waivers, repo_path, today, used)),
    ]
    located = [
        (module, message, loaded.source_map.locate(("waivers", index)))
        for module, hits in waivers
        for index, message in hits
    ]
    located.extend(
        (extends_none, message, loaded.left_default)
        for message in extends_none.check_policy(loaded.chain, loaded.left_default)
    )
    findings = []
    for module, message, location in located:
        severity = severity_for(policy, module.ID, module.DEFAULT_SEVERITY)
        if severity is not None:
            findings.append(Finding(module.ID, severity, message, location))
    return findings


def apply_approval(findings: Iterable[Finding], approval: LedgerRecord) -> list[Finding]:
    """Mark the active approval-level findings as satisfied by a fresh approval.

    Only findings of severity ``approval`` are covered; an approval never lifts an error.
    A covered finding needs no fix, so its proposed fixes are dropped.
    """
    return [
        dataclasses.replace(f, approved_by=approval.by or "unknown", fixes=())
        if f.active and f.severity is Severity.APPROVAL
        else f
        for f in findings
    ]


def decide(findings: Iterable[Finding], *, fail_on_warn: bool = False) -> Outcome:
    """Errors fail; approval findings need an approver; warnings fail only on request."""
    active = {f.severity for f in findings if f.active}
    if Severity.ERROR in active or (fail_on_warn and Severity.WARN in active):
        return Outcome.VIOLATION
    if Severity.APPROVAL in active:
        return Outcome.APPROVAL_REQUIRED
    return Outcome.PASS


class FailOn(str, Enum):
    """Which verdicts fail the command (``--fail-on``, the Action's ``fail-on``).

    ``error``: only policy violations fail (approvals pass: a pre-commit hook's choice);
    ``approval``: violations and missing approvals fail; ``warn``: warnings fail too.
    """

    ERROR = "error"
    APPROVAL = "approval"
    WARN = "warn"


def exit_code(outcome: Outcome, fail_on: FailOn) -> int:
    """The exit code under ``fail_on``: approvals fail only with ``approval`` (or ``warn``)."""
    if outcome is Outcome.APPROVAL_REQUIRED and fail_on is FailOn.ERROR:
        return 0
    return outcome.exit_code


def severity_for(policy: Policy, rule_id: str, default: Severity) -> Severity | None:
    """A rule's findings' severity under ``policy``; ``None`` when it is set ``off``.

    The policy's ``severity:`` setting wins over ``default`` (the rule's own, or a graded
    violation's).
    """
    setting = policy.severity.get(rule_id)
    if setting is None:
        return default
    return None if setting == "off" else Severity(setting)


def blocking_severities(*, fail_on_warn: bool = False) -> tuple[Severity, ...]:
    """The severities that keep a spec from passing (as :func:`decide` judges them)."""
    return (Severity.ERROR, Severity.APPROVAL, *((Severity.WARN,) if fail_on_warn else ()))
