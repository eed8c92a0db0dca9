"""A pull request that changes the policy directory: validate the head's policies, show impact.

The specs a pull request changes are still judged by the base branch's policies (a pull
request never judges itself). When it changes the policies, the Action also loads every
policy at the head (invalid ones fail the commit status) and prices every spec of the
repository (its head version) under both, listing each spec whose verdict or worst-case
cost changes, before → after. Both sides are judged before approvals and without the
ledger's monthly spend, so they compare like with like. Who may merge a policy change is
GitHub's CODEOWNERS' business, not this module's.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from gate.ci.model import ChangedFile
from gate.errors import InputError, InputErrors, Problem
from gate.estimate.prices import Catalog
from gate.evaluation.evaluate import Evaluator
from gate.evaluation.report import SpecResult
from gate.money import format_money
from gate.policy.findings import Outcome
from gate.policy.loader import PolicySet
from gate.reporters.markup import code, escape, utf16_length
from gate.spec.globs import is_spec_file, literal_root, matches

MAX_SPECS = 300
"""Specs priced for the impact; past this the comment says how many were left out."""
MAX_ROWS = 100


class Reader(Protocol):
    """The GitHub reads the impact needs (see the facade for each method's contract)."""

    def read_file(self, path: str, ref: str) -> bytes | None: ...  # noqa: D102
    def read_dir(self, path: str, ref: str) -> dict[str, bytes] | None: ...  # noqa: D102
    def list_files(self, path: str, ref: str, limit: int) -> list[str] | None: ...  # noqa: D102


@dataclass(frozen=True, slots=True)
class Change:
    """One spec whose verdict or worst-case cost differs under the head's policies."""

    path: str
    before: SpecResult
    after: SpecResult


@dataclass(frozen=True, slots=True)
class PolicyChange:
    """What the pull request's policy change does: errors, or the specs it changes."""

    files: tuple[str, ...]
    errors: tuple[Problem, ...] = ()
    changes: tuple[Change, ...] = ()
    checked: int = 0
    notes: tuple[str, ...] = ()

    @property
    def valid(self) -> bool:
        """Every policy at the head loads."""
        return not self.errors


def policy_files(files: Sequence[ChangedFile], policy_dir: str) -> list[str]:
    """The changed files under the policy directory (fixtures in it included)."""
    prefix = policy_dir.strip("/").removeprefix("./") + "/"
    touched = [p for f in files for p in (f.path, f.previous_path) if p]
    return sorted({p for p in touched if p.startswith(prefix)})


def assess(
    gh: Reader,
    *,
    changed: Sequence[str],
    policy_dir: str,
    globs: Sequence[str],
    refs: tuple[str, str],
    base_files: dict[str, bytes],
    catalog: Catalog,
    today: dt.date,
) -> PolicyChange:
    """Load the head's policies; if valid, price every spec under base and head policies.

    ``refs`` is (base commit, head commit); specs are read at the head.
    """
    head_files = gh.read_dir(policy_dir.strip("/") or ".", refs[1]) or {}
    head = PolicySet(policy_dir, head_files)
    try:
        head.load_all()
    except InputErrors as exc:
        return PolicyChange(tuple(changed), tuple(e.problem for e in exc.errors))
    except InputError as exc:
        return PolicyChange(tuple(changed), (exc.problem,))
    paths, notes = _repository_specs(gh, globs, refs[1])
    before = Evaluator(PolicySet(policy_dir, base_files), catalog, today)
    after = Evaluator(head, catalog, today)
    changes = []
    for path in paths:
        try:
            content = gh.read_file(path, refs[1])
        except InputError as exc:  # e.g. too large for the contents API
            notes.append(f"{path}: not priced ({exc.message})")
            continue
        if content is None:
            continue
        old, new = _judge(before, path, content), _judge(after, path, content)
        if _differs(old, new):
            changes.append(Change(path, old, new))
    return PolicyChange(tuple(changed), (), tuple(changes), len(paths), tuple(notes))


def _judge(evaluator: Evaluator, path: str, content: bytes) -> SpecResult:
    """The spec's result; a policy that does not load (the base's, say) makes it invalid."""
    try:
        return evaluator.evaluate(path, content)
    except (InputError, InputErrors) as exc:
        errors = exc.errors if isinstance(exc, InputErrors) else [exc]
        return SpecResult(path, Outcome.INVALID, errors=tuple(e.problem for e in errors))


def _repository_specs(gh: Reader, globs: Sequence[str], ref: str) -> tuple[list[str], list[str]]:
    """Every spec file at ``ref`` that the spec globs select, walking each glob's directory."""
    wanted = [g.strip() for g in globs if g.strip()]
    roots = sorted({literal_root(g) for g in wanted if not g.startswith("!")})
    found: set[str] = set()
    notes: list[str] = []
    for root in roots:
        listed = gh.list_files(root or ".", ref, MAX_SPECS + 1) or []
        found |= {p for p in listed if is_spec_file(p) and matches(wanted, p)}
    paths = sorted(found)
    if len(paths) > MAX_SPECS:
        notes.append(f"only the first {MAX_SPECS} specs were priced; more match the globs")
        paths = paths[:MAX_SPECS]
    return paths, notes


def _differs(before: SpecResult, after: SpecResult) -> bool:
    return before.outcome is not after.outcome or _worst(before) != _worst(after)


def _worst(result: SpecResult) -> str:
    if result.estimate is None:
        return "—"
    return format_money(result.estimate.worst.cost, result.currency)


def status(change: PolicyChange, state: str, description: str) -> tuple[str, str]:
    """The commit status, given the specs' own: invalid policies at the head fail it."""
    if not change.valid:
        return "failure", "invalid policies at the head: see the job's annotations"
    if description == "no experiment spec changed":
        moved = len(change.changes)
        said = "1 spec changes" if moved == 1 else f"{moved} specs change"
        return state, f"policies valid · {said} under them"
    return state, description


def render(change: PolicyChange, room: int) -> str:
    """The comment's policy section, in at most ``room`` UTF-16 units (shortened if not)."""
    text = _render(change, MAX_ROWS)
    if utf16_length(text) > room:
        text = _render(change, 0)
    return text if utf16_length(text) <= room else ""


def _render(change: PolicyChange, rows: int) -> str:
    files = ", ".join(code(f) for f in change.files[:20])
    lines = ["", "### Policy change", "", f"This pull request changes {files}.", ""]
    if not change.valid:
        lines.append("**The policies at the head do not load**, so they cannot be merged:")
        lines.append("")
        lines.extend(f"- {escape(str(p))}" for p in change.errors[:50])
    else:
        lines.extend(_impact(change, rows))
    lines += ["", "<sub>Who may merge policy changes is set by the repository's CODEOWNERS.</sub>"]
    return "\n".join(lines) + "\n"


def _impact(change: PolicyChange, rows: int) -> list[str]:
    moved = len(change.changes)
    lines = [
        f"The policies at the head are valid. Of {change.checked} specs in the repository, "
        f"{moved} {'changes' if moved == 1 else 'change'} verdict or worst-case cost under "
        "them (judged before approvals, without the monthly budget):",
        "",
    ]
    if moved and rows:
        lines += ["| spec | verdict | worst case |", "|---|---|---|"]
        for item in change.changes[:rows]:
            verdict = f"{item.before.outcome.value} → **{item.after.outcome.value}**"
            cost = f"{_worst(item.before)} → {_worst(item.after)}"
            lines.append(f"| {code(item.path, in_table=True)} | {verdict} | {cost} |")
        if moved > rows:
            lines.append(f"\n… and {moved - rows} more (see the job's log)")
    lines.extend(f"\n> {escape(note)}" for note in change.notes)
    return lines


def log_lines(change: PolicyChange) -> list[str]:
    """Plain lines for the job's log: every error, or every change."""
    if not change.valid:
        return [str(p) for p in change.errors]
    lines = [
        f"budget-gate: policy change: {change.checked} specs priced under the head's policies, "
        f"{len(change.changes)} change"
    ]
    lines += [
        f"  {c.path}: {c.before.outcome.value} → {c.after.outcome.value}, worst case "
        f"{_worst(c.before)} → {_worst(c.after)}"
        for c in change.changes
    ]
    return lines
