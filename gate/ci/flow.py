"""The pull-request flow, read side: changed specs → evaluations → GitHub approvals judged.

Stateless: every run derives everything from GitHub (the file list, the base commit's
policies, reviews and ``/budget-gate approve`` comments, commit history), so any event can
be replayed and gives the same answer. Policies and the base versions of specs are read
from the pull request's *base* commit through the API, never from the checkout, which the
pull request controls; head versions are read at the head commit the same way.

Writes live in :mod:`gate.ci.publish`; GitHub is reached through the :class:`GitHub`
protocol, which :class:`gate.integrations.github.client.GitHubClient` implements.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from gate.calibrate.model import Calibration
from gate.calibrate.model import parse as parse_calibration
from gate.ci.approvals import (
    Access,
    Candidate,
    SpecChange,
    Via,
    access_refusal,
    candidates,
    identity_refusal,
    listed,
    team_ref,
    timing_refusal,
)
from gate.ci.decisions import select_specs
from gate.ci.event import Event
from gate.ci.model import ChangedFile, CommentInfo, CommitInfo, PullInfo, ReviewInfo
from gate.ci.policy_change import PolicyChange, assess, policy_files
from gate.ci.scope import spender, unjudged_specs
from gate.errors import InputError
from gate.estimate.prices import load_catalog
from gate.evaluation.diff import SpecDiff, compare
from gate.evaluation.evaluate import Evaluation, Evaluator
from gate.evaluation.report import SpecResult
from gate.ledger.approvals import NO_APPROVAL, ApprovalCheck
from gate.ledger.approvers import Approvers
from gate.ledger.records import LedgerQuery, LedgerRecord, RecordKind, Source
from gate.ledger.tracking import COST_CENTER_LABEL, spec_path
from gate.ledger.view import LedgerView
from gate.policy.findings import Outcome
from gate.policy.loader import CALIBRATION_FILE, PolicySet
from gate.policy.verdict import FailOn, apply_approval, decide
from gate.spec.loader import load_bytes

MAX_WALK = 50
"""How many commits back from the head to look for the last change to a spec."""
BIND_WITHIN = dt.timedelta(minutes=10)
"""A ``/budget-gate approve`` processed later than this after it was posted binds to no
commit: the head may have moved since (a re-run, a queued runner), and it must be posted
again."""
_BOUND = re.compile(
    r"^<!-- budget-gate:bound:(comment-[0-9]+):([0-9a-f]{40}|[0-9a-f]{64}) -->$", re.MULTILINE
)


class GitHub(Protocol):
    """What the flow needs from GitHub (see the facade for each method's contract)."""

    owner: str

    def pull(self, number: int) -> PullInfo: ...  # noqa: D102
    def changed_files(self, number: int) -> list[ChangedFile]: ...  # noqa: D102
    def read_file(self, path: str, ref: str) -> bytes | None: ...  # noqa: D102
    def read_dir(self, path: str, ref: str) -> dict[str, bytes] | None: ...  # noqa: D102
    def list_files(self, path: str, ref: str, limit: int) -> list[str] | None: ...  # noqa: D102
    def commit(self, sha: str) -> CommitInfo: ...  # noqa: D102
    def reviews(self, number: int) -> list[ReviewInfo]: ...  # noqa: D102
    def comments(self, number: int) -> list[CommentInfo]: ...  # noqa: D102
    def team_member(self, org: str, slug: str, login: str) -> bool | None: ...  # noqa: D102
    def role(self, login: str) -> str | None: ...  # noqa: D102
    def create_comment(self, number: int, body: str) -> int: ...  # noqa: D102
    def update_comment(self, comment_id: int, body: str) -> None: ...  # noqa: D102
    def set_status(  # noqa: D102
        self, sha: str, state: str, description: str, context: str, url: str
    ) -> None: ...
    def add_label(self, number: int, name: str) -> None: ...  # noqa: D102
    def remove_label(self, number: int, name: str) -> None: ...  # noqa: D102
    def request_reviews(  # noqa: D102
        self, number: int, users: list[str], teams: list[str]
    ) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Settings:
    """The run's inputs: which files are specs, where policies are, how strict to be."""

    globs: tuple[str, ...]
    policy_dir: str
    fail_on: FailOn
    now: dt.datetime
    ledger: LedgerView | None = None


@dataclass
class Prepared:
    """Everything evaluated for one run, before anything is written."""

    pull: PullInfo
    head_sha: str
    evaluator: Evaluator
    results: list[SpecResult]
    diffs: list[SpecDiff]
    comments: list[CommentInfo] | None = None
    approvers: list[Approvers] = field(default_factory=list)
    accepted: list[tuple[Evaluation, Candidate]] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    """Why the comment that triggered the run (a /budget-gate approve) was not accepted."""
    policy_change: PolicyChange | None = None
    """The head's policies checked and their impact, when the pull request changes them."""
    bindings: dict[str, str] = field(default_factory=dict)
    """Which commit each ``/budget-gate approve`` approved (``comment-<id>`` → head SHA):
    bound when first processed, kept in the ledger and the sticky comment."""
    outside: list[str] = field(default_factory=list)
    """Changed files that declare ``kind: Experiment`` but that the spec globs leave out."""


def prepare(gh: GitHub, event: Event, settings: Settings) -> Prepared:
    """Read the pull request, evaluate its changed specs, and judge its approvals."""
    assert event.number is not None
    pull = gh.pull(event.number)
    head = event.head_sha or pull.head_sha
    changed = gh.changed_files(pull.number)
    present, removed = select_specs(changed, settings.globs)
    base_files = _base_policies(gh, pull, settings.policy_dir)
    policies = PolicySet(settings.policy_dir, base_files)
    evaluator = Evaluator(
        policies=policies,
        catalog=load_catalog(),
        today=settings.now.date(),
        fail_on_warn=settings.fail_on is FailOn.WARN,
        ledger=settings.ledger,
        alternatives_for=frozenset({Outcome.VIOLATION, Outcome.APPROVAL_REQUIRED}),
        calibration=_base_calibration(gh, pull, settings.policy_dir),
        spender=spender(gh, pull.author, policies) if present else None,
    )
    evaluations: list[Evaluation] = []
    diffs: list[SpecDiff] = []
    for file in [*present, *removed]:
        head_eval = None if file.removed else _evaluate(evaluator, file.path, gh, head)
        base = _base_result(gh, evaluator, file, pull.base_sha)
        if head_eval is not None:
            evaluations.append(head_eval)
        if base is not None or head_eval is not None:
            diffs.append(compare(file.path, base, head_eval.result if head_eval else None))
    prepared = Prepared(pull, head, evaluator, [e.result for e in evaluations], diffs)
    prepared.outside = unjudged_specs(gh, changed, present, head)
    touched = policy_files(changed, settings.policy_dir)
    if touched:
        prepared.policy_change = assess(
            gh,
            changed=touched,
            policy_dir=settings.policy_dir,
            globs=settings.globs,
            refs=(pull.base_sha, head),
            base_files=base_files,
            catalog=evaluator.catalog,
            today=evaluator.today,
        )
    if any(e.result.outcome is Outcome.APPROVAL_REQUIRED for e in evaluations):
        _judge(gh, event, prepared, evaluations, settings.now)
    return prepared


def _base_policies(gh: GitHub, pull: PullInfo, policy_dir: str) -> dict[str, bytes]:
    files = gh.read_dir(policy_dir.strip("/") or ".", pull.base_sha)
    if files is None:
        raise InputError(
            f"policy directory {policy_dir!r} not found at the base commit "
            f"{pull.base_sha[:12]} ({pull.base_ref})",
            hint="pull requests are judged by the base branch's policies: add them there first",
        )
    return files


def _base_calibration(gh: GitHub, pull: PullInfo, policy_dir: str) -> Calibration | None:
    """The calibration committed beside the policies at the base commit, if there is one.

    NOTE: read from the base like the policies: a pull request cannot price itself with
    measurements it edits.
    """
    name = f"{policy_dir.strip('/') or '.'}/{CALIBRATION_FILE}"
    content = gh.read_file(name, pull.base_sha)
    return None if content is None else parse_calibration(load_bytes(content, name))


def _evaluate(evaluator: Evaluator, path: str, gh: GitHub, ref: str) -> Evaluation:
    try:
        content = gh.read_file(path, ref)
    except InputError as exc:
        return Evaluation(SpecResult(path, Outcome.INVALID, errors=(exc.problem,)))
    if content is None:
        problem = InputError(f"{path}: not found at the head commit {ref[:12]}").problem
        return Evaluation(SpecResult(path, Outcome.INVALID, errors=(problem,)))
    return evaluator.evaluate_spec(path, content)


def _base_result(
    gh: GitHub, evaluator: Evaluator, file: ChangedFile, base_sha: str
) -> SpecResult | None:
    if file.base_path is None:
        return None
    try:
        content = gh.read_file(file.base_path, base_sha)
    except InputError as exc:
        return SpecResult(file.path, Outcome.INVALID, errors=(exc.problem,))
    return None if content is None else evaluator.evaluate(file.path, content)


# --- approvals ------------------------------------------------------------------------------


def _judge(
    gh: GitHub,
    event: Event,
    prepared: Prepared,
    evaluations: list[Evaluation],
    now: dt.datetime,
) -> None:
    pull = prepared.pull
    prepared.comments = gh.comments(pull.number)
    prepared.bindings = _bindings(prepared, evaluations, event, now)
    found = candidates(gh.reviews(pull.number), prepared.comments, prepared.bindings)
    history = _History(gh, prepared.head_sha, pull.base_sha)
    access = _AccessCache(gh)
    command = event.command.comment_id if event.command else None
    command_reasons: list[str] = []
    accepted_command = False
    for index, evaluation in enumerate(evaluations):
        result = evaluation.result
        if result.outcome is not Outcome.APPROVAL_REQUIRED or evaluation.policy is None:
            continue
        approvers = evaluation.policy.approval.approvers
        prepared.approvers.append(approvers)
        owner = evaluation.spec.metadata.owner if evaluation.spec else None
        change = history.last_change(result.file)
        chosen: Candidate | None = None
        # NOTE: why the ledger's approvals do not count (approval.sources, a revocation) is
        # kept; that it holds none at all is no news on a pull request.
        ledger = result.approval.stale if result.approval else ()
        stale = [reason for reason in ledger if not reason.startswith(NO_APPROVAL)]
        for candidate in found:
            refusal = (
                timing_refusal(candidate, change)
                or identity_refusal(candidate, approvers, pull.author, owner)
                or _authority_refusal(candidate.login, approvers, access, gh.owner)
            )
            if candidate.via is Via.COMMENT and candidate.id == command:
                accepted_command |= refusal is None
                if refusal is not None:
                    command_reasons.append(f"{result.file}: {refusal}")
            if refusal is None:
                chosen = candidate
            else:
                stale.append(f"{candidate.describe()} does not count: {refusal}")
        if chosen is None:
            stale.append(
                f"approvers: {approvers.describe()} — approve the pull request or "
                "comment “/budget-gate approve <reason>”"
            )
        prepared.results[index] = _with_approval(result, evaluation, chosen, stale, prepared)
        if chosen is not None:
            prepared.accepted.append((evaluation, chosen))
    if command is not None and not accepted_command:
        prepared.refusals = command_reasons


def _bindings(
    prepared: Prepared, evaluations: list[Evaluation], event: Event, now: dt.datetime
) -> dict[str, str]:
    """The commit each approving comment approved, as first processed.

    This run's own comment binds to the head now, if it was posted moments ago. Earlier
    bindings come from the ledger (CI's records of the approvals it accepted), and, unless
    the ledger's records must be signed, from the bot's own sticky comments.
    """
    bound: dict[str, str] = {}
    ledger = prepared.evaluator.ledger
    trust = ledger.trusted() if ledger is not None else None
    if trust is None or not trust.signed:
        bot = [c for c in prepared.comments or () if c.is_bot]
        bound.update(found for c in bot for found in _BOUND.findall(c.body))
    if ledger is not None:
        for evaluation in evaluations:
            fp = evaluation.result.fingerprint
            if fp is not None and evaluation.result.outcome is Outcome.APPROVAL_REQUIRED:
                bound.update(_recorded(ledger.records(LedgerQuery(fingerprint=fp))))
    command = event.command
    if command is not None and f"comment-{command.comment_id}" not in bound:
        comment = next((c for c in prepared.comments or () if c.id == command.comment_id), None)
        if comment is not None and now - comment.created_at <= BIND_WITHIN:
            bound[f"comment-{command.comment_id}"] = prepared.head_sha
    return bound


def _recorded(records: Iterable[LedgerRecord]) -> dict[str, str]:
    return {
        r.event_id: r.head_sha
        for r in records
        if r.kind is RecordKind.APPROVAL
        and r.source is Source.GITHUB_COMMENT
        and r.event_id
        and r.head_sha
    }


def binding_lines(bindings: dict[str, str]) -> str:
    """The hidden lines of the sticky comment that keep the comments' bindings."""
    return "".join(
        f"<!-- budget-gate:bound:{key}:{sha} -->\n" for key, sha in sorted(bindings.items())
    )


def _authority_refusal(
    login: str, approvers: Approvers, access: _AccessCache, owner: str
) -> str | None:
    if listed(login, approvers):
        return None
    return access_refusal(login, approvers, access.of(login, approvers, owner))


def _with_approval(
    result: SpecResult,
    evaluation: Evaluation,
    chosen: Candidate | None,
    stale: list[str],
    prepared: Prepared,
) -> SpecResult:
    record = None if chosen is None else approval_record(evaluation, chosen, prepared.pull.number)
    findings = list(result.findings)
    if record is not None:
        findings = apply_approval(findings, record)
    outcome = decide(findings, fail_on_warn=prepared.evaluator.fail_on_warn)
    check = ApprovalCheck(record, tuple(stale))
    return dataclasses.replace(result, findings=tuple(findings), outcome=outcome, approval=check)


def approval_record(evaluation: Evaluation, chosen: Candidate, pr_number: int) -> LedgerRecord:
    """The GitHub approval as a ledger record: this version, its estimate, who, when."""
    result, spec = evaluation.result, evaluation.spec
    assert result.fingerprint is not None and result.estimate is not None and spec is not None
    return LedgerRecord(
        kind=RecordKind.APPROVAL,
        spec=evaluation.path or spec_path(result.file),
        fingerprint=result.fingerprint,
        experiment=spec.metadata.name,
        recorded_at=chosen.at,  # in this run's report; the ledger stamps its own write time
        currency=result.currency,
        worst_cost=result.estimate.worst.cost,
        expected_cost=result.estimate.expected.cost,
        team=spec.metadata.team,
        cost_center=spec.metadata.labels.get(COST_CENTER_LABEL),
        by=chosen.login,
        reason=chosen.reason or f"approved on GitHub ({chosen.via.value})",
        source=chosen.source,
        pr_number=pr_number,
        record_id=chosen.key,
        event_at=chosen.at,
        head_sha=chosen.commit_id,
        event_id=chosen.key,
    )


class _History:
    """When each spec last changed: a first-parent walk from the head, commits read once.

    # NOTE: the cut-down API has no "list commits"; each step is one repos/get-commit. A
    # spec not found within MAX_WALK commits (or before the base) is taken as changed at
    # the head, so only approvals of the head itself count: safe, if strict.
    """

    def __init__(self, gh: GitHub, head: str, base: str) -> None:
        self._gh, self._head, self._base = gh, head, base
        self._commits: dict[str, CommitInfo] = {}

    def _commit(self, sha: str) -> CommitInfo:
        if sha not in self._commits:
            self._commits[sha] = self._gh.commit(sha)
        return self._commits[sha]

    def last_change(self, path: str) -> SpecChange:
        since: list[str] = []
        sha = self._head
        for _ in range(MAX_WALK):
            commit = self._commit(sha)
            since.append(sha)
            if path in commit.paths:
                return SpecChange(sha, commit.date, frozenset(since))
            if not commit.parents or commit.parents[0] == self._base:
                break
            sha = commit.parents[0]
        head = self._commit(self._head)
        return SpecChange(head.sha, head.date, frozenset({head.sha}))


class _AccessCache:
    """Team memberships and repository roles, each asked of GitHub at most once per run."""

    def __init__(self, gh: GitHub) -> None:
        self._gh = gh
        self._members: dict[tuple[str, str, str], bool | None] = {}
        self._roles: dict[str, str | None] = {}

    def of(self, login: str, approvers: Approvers, owner: str) -> Access:
        teams: list[str] = []
        unreadable: list[str] = []
        for entry in approvers.teams:
            member = self._member(*team_ref(entry, owner), login)
            if member:
                teams.append(entry)
                break  # one team is enough
            if member is None:
                unreadable.append(entry)
        role = self._role(login) if approvers.permission and not teams else None
        return Access(tuple(teams), tuple(unreadable), role)

    def _member(self, org: str, slug: str, login: str) -> bool | None:
        key = (org, slug, login.casefold())
        if key not in self._members:
            self._members[key] = self._gh.team_member(org, slug, login)
        return self._members[key]

    def _role(self, login: str) -> str | None:
        if login.casefold() not in self._roles:
            self._roles[login.casefold()] = self._gh.role(login)
        return self._roles[login.casefold()]
