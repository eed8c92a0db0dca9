"""Issue 21, items 2 and 4, through the real ``budget-gate ci`` against the fake GitHub.

A ``/budget-gate approve`` approves the head it was processed against, whatever the commit
dates say: a costlier push dated before the comment makes it stale, a push that leaves the
spec alone does not. A GitHub approval recorded after its review is stamped with its write
time, so a month's budget read through snapshots counts it as a full scan does.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from decimal import Decimal

from gate.cli import main
from gate.integrations.mlflow.client import MlflowLedger
from gate.integrations.mlflow.snapshots import roll
from gate.ledger.budget import BudgetScope, month_start
from gate.ledger.records import LedgerQuery, LedgerRecord, RecordKind, Source
from gate.ledger.snapshot import SETTLE
from tests.budget_reference import reference_status
from tests.conftest import make_policy
from tests.github.ci_kit import NUMBER, POLICY, SPEC, T0, PullRequestStory, fresh, grid_spec
from tests.ledger_kit import UNSIGNED, seed_record, unique

HOUR = dt.timedelta(hours=1)
UTC = dt.timezone.utc


def _opened(story: PullRequestStory, text: str | None = None) -> None:
    story.change(SPEC, text or grid_spec(4), at=T0 + HOUR)
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 0, ran.stderr


def test_a_comment_approval_does_not_survive_a_costlier_push_dated_before_it(story):
    _opened(story)
    approved = story.head
    ran = story.run(
        "issue_comment", story.comment_event("alice", "/budget-gate approve ok", at=fresh())
    )
    assert ran.code == 0, ran.stderr
    assert story.status() == ("success", "approved by alice · worst case 580.27 USD")
    # The author pushes a grid twice the size, its commit dated (GIT_COMMITTER_DATE) before
    # the comment: dates order nothing, the commit graph does.
    story.push({SPEC: grid_spec(8)}, at=fresh() - 2 * HOUR)
    story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    assert story.status() == ("pending", "approval required · worst case 1,160.53 USD")
    (comment,) = story.bot_comments()
    assert f"it approved commit {approved[:7]}, from before the spec's last change" in (
        comment.replace("\n", " ")
    )


def test_a_comment_approval_survives_a_push_that_leaves_the_spec_alone(story):
    _opened(story)
    story.run("issue_comment", story.comment_event("alice", "/budget-gate approve ok", at=fresh()))
    (comment,) = story.bot_comments()
    assert "<!-- budget-gate:bound:comment-" in comment and story.head in comment
    story.push({"README.md": "more words\n"}, at=fresh())
    story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    assert story.status() == ("success", "approved by alice · worst case 580.27 USD")


def test_another_bots_lines_bind_no_comment_and_its_marker_is_left_alone(story):
    """Any bot (a branch's own workflow, an App that echoes text) can post budget-gate's
    hidden lines: only the account budget-gate posts as (bot-login) is read."""
    _opened(story)
    story.run("issue_comment", story.comment_event("alice", "/budget-gate approve ok", at=fresh()))
    assert story.status()[0] == "success"
    (alice,) = [c for c in story.repo.comments_on(NUMBER) if c.author == "alice"]
    new = story.push({SPEC: grid_spec(8)}, at=fresh())
    story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    assert story.status()[0] == "pending"
    (ours,) = story.bot_comments()
    marker = ours.split("\n", 1)[0]
    story.fake.add_user("other-app[bot]", type="Bot")
    forged = f"{marker}\n<!-- budget-gate:bound:comment-{alice.id}:{new} -->\nhello"
    story.repo.add_comment(NUMBER, "other-app[bot]", forged)
    ran = story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    assert story.status() == ("pending", "approval required · worst case 1,160.53 USD")
    assert [c.body for c in story.repo.comments_on(NUMBER) if c.author == "other-app[bot]"] == [
        forged
    ]  # neither updated nor read
    assert "::warning title=budget-gate::comment" in ran.stdout
    warned = "by other-app[bot] starts with budget-gate's marker but is not by the account"
    assert warned in ran.stdout
    # Where budget-gate does post as that App, saying so makes its comments ours.
    ran = story.run(
        "pull_request.synchronize",
        story.pull_request_event("synchronize"),
        BUDGET_GATE_BOT_LOGIN="other-app[bot]",
    )
    assert ran.code == 0, ran.stderr
    assert story.status() == ("success", "approved by alice · worst case 1,160.53 USD")


def test_a_comment_processed_long_after_it_was_posted_approves_nothing(story):
    _opened(story)
    late = story.comment_event("alice", "/budget-gate approve ok", at=fresh() - 2 * HOUR)
    story.run("issue_comment", late)  # a re-run, a queued runner: the head may have moved
    assert story.status()[0] == "pending"
    assert "the commit it approved is unknown; comment again" in story.comments()[-1]


def test_a_late_github_approval_is_counted_by_the_snapshot_reads(story, mlflow_server, tmp_path):
    """100 settled records, a snapshot, then CI records a review given 30 minutes ago."""
    team = unique("ci")
    story.extra_env = {"MLFLOW_TRACKING_URI": mlflow_server.uri}
    budgeted = POLICY.replace("limits: {", "limits: {monthly_budget: 100000, ").replace(
        "kind: Policy\n", f"kind: Policy\nteams: [{team}]\n"
    )  # a budget's key comes from a closed list (BG206)
    story.repo.put_file("policies/default.yaml", budgeted, ref=story.repo.pull(2).base_sha)
    now = dt.datetime.now(UTC)
    settled = max(month_start(now), now - SETTLE - dt.timedelta(minutes=5))
    for n in range(100):
        seed_record(
            mlflow_server.uri,
            LedgerRecord(
                RecordKind.APPROVAL, f"experiments/old-{n}.yaml", f"sha256:old-{team}-{n}", "old",
                settled - dt.timedelta(seconds=n), "USD", worst_cost=Decimal(1), team=team,
                record_id=uuid.uuid4().hex,
            ),
        )  # fmt: skip
    writer = MlflowLedger(mlflow_server.uri, UNSIGNED)
    experiment = writer.experiment_id(create=False)
    assert experiment is not None
    if now - SETTLE > month_start(now) + dt.timedelta(minutes=1):  # a month's first minutes
        assert roll(writer, experiment, f"team:{team}", now) is not None
    _opened(story, grid_spec(4).replace("team: nlp", f"team: {team}"))
    reviewed = fresh() - dt.timedelta(minutes=30)
    ran = story.run("pull_request_review", story.review_event("alice", at=reviewed))
    assert ran.code == 0 and "budget-gate: recorded approval by alice" in ran.stdout, ran.stderr
    (approval,) = [
        r for r in writer.query(LedgerQuery(team=team)) if r.source is Source.GITHUB_REVIEW
    ]
    assert approval.event_at == reviewed and now - approval.recorded_at < dt.timedelta(minutes=5)

    # check, through the snapshot and the tail, against a full scan of the same records
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "default.yaml").write_text(budgeted, encoding="utf-8")
    other = tmp_path / "other.yaml"
    other.write_text(grid_spec(4, name="other").replace("team: nlp", f"team: {team}"))
    args = ["check", str(other), "--policy-dir", str(policies), "--format", "json"]
    out = _run_json([*args, "--tracking-uri", mlflow_server.uri])
    budget = out["results"][0]["budget"]
    records = writer.query(LedgerQuery(team=team, since=month_start(now)))
    expected = reference_status(
        records,
        policy=make_policy({"limits": {"monthly_budget": 100000}}),
        scope=BudgetScope("team", team),
        now=dt.datetime.now(UTC),
        spec="other.yaml",
        fingerprint="-",
    )
    assert budget["committed"] == f"{expected.committed:.2f}" == "680.27"  # 100 + 580.27


def _run_json(argv: list[str]) -> dict:
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        main(argv)
    return json.loads(buffer.getvalue())


def test_a_comment_that_names_the_head_it_reviewed_approves_that_head_only(story):
    """The author pushes in the moments between alice's comment and its workflow run: a
    comment that names the commit alice reviewed does not approve the push."""
    _opened(story)
    reviewed = story.head
    story.push({SPEC: grid_spec(8)}, at=fresh())
    named = story.comment_event("alice", f"/budget-gate approve {reviewed} ok", at=fresh())
    assert story.run("issue_comment", named).code == 0
    assert story.status() == ("pending", "approval required · worst case 1,160.53 USD")
    said = " ".join(story.comments()[-1].split())
    assert f"it approved commit {reviewed[:7]}, from before the spec's last change" in said
    story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    assert story.status()[0] == "pending"  # and no later run binds it to the head
    head = story.head.upper()  # any case
    story.run(
        "issue_comment", story.comment_event("alice", f"/budget-gate approve {head}", at=fresh())
    )
    assert story.status() == ("success", "approved by alice · worst case 1,160.53 USD")


def test_a_comment_that_names_a_commit_by_a_prefix_is_refused(story):
    """A 7-digit prefix of the reviewed head is matched by a costlier commit made to share it
    (a few seconds of hashing): only the full SHA names a commit."""
    _opened(story)
    prefix = story.head[:7]
    story.run(
        "issue_comment", story.comment_event("alice", f"/budget-gate approve {prefix}", at=fresh())
    )
    assert story.status()[0] == "pending"
    said = " ".join(story.comments()[-1].split())
    assert f"it names commit {prefix} by a prefix, which a commit made to share it" in said


def test_a_comment_naming_the_head_counts_though_its_own_run_was_cancelled(story):
    """GitHub cancels a run still waiting when a newer event of the pull request queues: a
    comment that names the head by its full SHA is bound by whichever run reads it."""
    _opened(story)
    named = story.comment_event("alice", f"/budget-gate approve {story.head} ok", at=fresh())
    story.fake.seed_from_event(named)  # posted; its run never runs
    unnamed = story.comment_event("alice", "/budget-gate approve ok", at=fresh())
    story.fake.seed_from_event(unnamed)
    other = story.comment_event("mallory", "/budget-gate approve", at=fresh())
    assert story.run("issue_comment", other).code == 0
    assert story.status() == ("success", "approved by alice · worst case 580.27 USD")
    # NOTE: a named comment binds itself in every run: the sticky keeps no line for it
    assert f"comment-{named['comment']['id']}:" not in story.bot_comments()[0]
    assert f"comment-{unnamed['comment']['id']}:" not in story.bot_comments()[0]
