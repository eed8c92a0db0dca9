"""The pull-request flow, read side: changed specs → evaluations → GitHub approvals judged.

Stateless: every run derives everything from GitHub (the file list, the base commit's
policies, reviews and ``/budget-gate approve`` comments, commit history), so any event can
be replayed and gives the same answer. Policies and the base versions of specs are read
from the pull request's *base* commit through the API, never from the checkout, which the
pull request controls; head versions are read at the head commit the same way.

The approvals are judged by :mod:`gate.ci.judging`, and writes live in
:mod:`gate.ci.publish`; GitHub is reached through the :class:`GitHub` protocol, which
:class:`gate.integrations.github.client.GitHubClient` implements.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

from gate.calibrate.model import Calibration
from gate.calibrate.model import parse as parse_calibration
from gate.ci.approvals import Candidate, standing, withdrawn
from gate.ci.contributors import ledger_refusal
from gate.ci.decisions import select_specs
from gate.ci.event import Event
from gate.ci.history import SpecHistory
from gate.ci.judging import judge_approvals
from gate.ci.model import ChangedFile, CommentInfo, CommitInfo, PullInfo, ReviewInfo
from gate.ci.policy_change import PolicyChange, assess, policy_files
from gate.ci.scope import Outside, spender, unjudged_specs
from gate.errors import InputError
from gate.estimate.prices import load_catalog
from gate.evaluation.diff import SpecDiff, compare
from gate.evaluation.evaluate import Evaluation, Evaluator
from gate.evaluation.report import SpecResult
from gate.ledger.approvers import Approvers
from gate.ledger.records import LedgerRecord, RecordKind
from gate.ledger.repository import repository_refusal
from gate.ledger.signing import CI_PRINCIPAL, Signer, signs_as
from gate.ledger.view import LedgerView
from gate.policy.findings import Outcome
from gate.policy.loader import CALIBRATION_FILE, PolicySet
from gate.policy.verdict import FailOn
from gate.spec.loader import load_bytes


class GitHub(Protocol):
    """What the flow needs from GitHub (see the facade for each method's contract)."""

    owner: str

    def pull(self, number: int) -> PullInfo: ...  # noqa: D102
    def changed_files(self, number: int) -> list[ChangedFile]: ...  # noqa: D102
    def read_file(self, path: str, ref: str) -> bytes | None: ...  # noqa: D102
    def read_dir(self, path: str, ref: str) -> dict[str, bytes] | None: ...  # noqa: D102
    def list_files(self, path: str, ref: str, limit: int) -> list[str] | None: ...  # noqa: D102
    def commit(self, sha: str) -> CommitInfo: ...  # noqa: D102
    def base_moved_at(self, number: int) -> dt.datetime | None: ...  # noqa: D102
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
    sticky: bool = True
    """The run writes its report as a comment, which keeps which commit a comment approved."""
    signer: Signer | None = None
    """CI's signing key (``BUDGET_GATE_SIGNING_KEY``): its records keep which commit a
    comment approved, under a signed ledger only if the signers file lists it for CI."""


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
    bindings: dict[str, str] | None = None
    """Which commit each ``/budget-gate approve`` approved (``comment-<id>`` → head SHA):
    bound when first processed, kept in the ledger and the sticky comment; ``None`` when
    no approval was judged this run (the sticky keeps the lines it holds)."""
    outside: list[str] = field(default_factory=list)
    """Changed specs (``kind: Experiment``, or an engine's file) the spec globs leave out."""
    outside_read: Outside = field(default_factory=Outside)
    """The read of the changed spec files outside the globs: the specs (as in ``outside``),
    and those it could not read or did not (past the cap), each of which may be a spec."""
    shown: frozenset[str] | None = None
    """The approvals GitHub shows now (``review-<id>``, ``comment-<id>``), when a ledger is
    read: its copies of this pull request's others were withdrawn on GitHub."""
    base_moved_at: dt.datetime | None = None
    """When the base was last edited, when a ledger is read: its copies of this pull
    request's approvals from before then lapsed."""


def prepare(gh: GitHub, event: Event, settings: Settings) -> Prepared:
    """Read the pull request, evaluate its changed specs, and judge its approvals."""
    assert event.number is not None
    pull = gh.pull(event.number)
    head = event.head_sha or pull.head_sha
    changed = gh.changed_files(pull.number)
    if pull.changed_files is not None and len(changed) < pull.changed_files:
        raise InputError(
            f"pull request #{pull.number} changes {pull.changed_files:,} files, but GitHub "
            f"lists only {len(changed):,} of them (3,000 at most): a spec among the rest "
            "would go unjudged",
            hint="split the pull request so that each changes fewer than 3,000 files",
        )
    present, removed = select_specs(changed, settings.globs)
    shown, activity = None, None
    # NOTE: commits read once, by the ledger's rule too; a base edit may not be listed yet
    history = SpecHistory(gh, pull, head, settings.now if event.base_from else None)
    base_files = _base_policies(gh, pull, settings.policy_dir)
    policies = PolicySet(settings.policy_dir, base_files)
    if settings.ledger is not None and present:
        activity = _activity(gh, pull)
        shown = standing(*activity)
        settings.ledger.withdrawn = _ledger_rule(event, pull, shown, policies, history)
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
    evaluations, diffs = _evaluate_files(gh, evaluator, [*present, *removed], head, pull.base_sha)
    prepared = Prepared(pull, head, evaluator, [e.result for e in evaluations], diffs)
    prepared.shown = shown
    prepared.base_moved_at = history.base_moved_at() if shown is not None else None
    if activity is not None:
        prepared.comments = activity[1]  # the sticky comment is found among them too
    prepared.outside_read = unjudged_specs(gh, changed, present, head)
    prepared.outside = prepared.outside_read.specs
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
        found = activity or _activity(gh, pull)
        _judge(gh, event, prepared, evaluations, settings, found, history)
    return prepared


def _ledger_rule(
    event: Event, pull: PullInfo, shown: frozenset[str], policies: PolicySet, history: SpecHistory
) -> Callable[[LedgerRecord], str | None]:
    """Which ledger approvals do not count on this pull request (:func:`_not_here`).

    NOTE: GitHub says which of this pull request's approvals stand; the ledger's copies of
    the others no longer count, here and (revoked) at launch. Nor do the ledger's approvals
    by the author or by whoever changed the spec, nor another repository's.
    """
    return partial(_not_here, pull, shown, policies, history, event.repository)


def _not_here(
    pull: PullInfo,
    shown: frozenset[str],
    policies: PolicySet,
    history: SpecHistory,
    repository: str,
    record: LedgerRecord,
) -> str | None:
    """Why a ledger approval does not count on this pull request, or None.

    NOTE: another repository's GitHub approval (a ledger and CI key shared by an
    organization) counted here when the spec's path and content matched: its pull request's
    number differed, so it was not this one's to withdraw, and nothing read its repository.
    """
    if record.kind is not RecordKind.APPROVAL:
        return None
    elsewhere = repository_refusal(record, repository)
    if elsewhere is not None:
        return f"{record.summary()} {elsewhere}"
    approvers = policies.for_team(record.team).policy.approval.approvers
    moved = history.base_moved_at()
    return withdrawn(record, pull.number, shown, moved) or ledger_refusal(
        record.by or "", pull.author, approvers, record.spec, history.last_change(record.spec)
    )


def _evaluate_files(
    gh: GitHub, evaluator: Evaluator, files: list[ChangedFile], head: str, base_sha: str
) -> tuple[list[Evaluation], list[SpecDiff]]:
    """Each changed spec judged at the head, and compared with its base version."""
    evaluations: list[Evaluation] = []
    diffs: list[SpecDiff] = []
    for file in files:
        head_eval = None if file.removed else _evaluate(evaluator, file.path, gh, head)
        base = _base_result(gh, evaluator, file, base_sha)
        if head_eval is not None:
            evaluations.append(head_eval)
        if base is not None or head_eval is not None:
            diffs.append(compare(file.path, base, head_eval.result if head_eval else None))
    return evaluations, diffs


def _activity(gh: GitHub, pull: PullInfo) -> tuple[list[ReviewInfo], list[CommentInfo]]:
    """The pull request's reviews and comments: what approves it, read once per run."""
    return gh.reviews(pull.number), gh.comments(pull.number)


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


def _judge(
    gh: GitHub,
    event: Event,
    prepared: Prepared,
    evaluations: list[Evaluation],
    settings: Settings,
    activity: tuple[list[ReviewInfo], list[CommentInfo]],
    history: SpecHistory,
) -> None:
    """The pull request's approvals judged (:mod:`gate.ci.judging`), kept in ``prepared``."""
    judged = judge_approvals(
        gh,
        event,
        evaluations,
        prepared.pull,
        prepared.head_sha,
        prepared.evaluator,
        settings.now,
        activity,
        history,
        sticky=settings.sticky,
        signs=_signs(settings, prepared.evaluator.ledger),
    )
    prepared.results = judged.results
    prepared.comments = judged.comments
    prepared.bindings = judged.bindings
    prepared.approvers = judged.approvers
    prepared.accepted = judged.accepted
    prepared.refusals = judged.refusals


def _signs(settings: Settings, ledger: LedgerView | None) -> bool:
    """Whether this run's ledger records count as CI's: a key the signers file lists for it."""
    trust = ledger.trusted() if ledger is not None else None
    return signs_as(settings.signer, trust, CI_PRINCIPAL, settings.now)
