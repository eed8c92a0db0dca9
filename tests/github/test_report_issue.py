"""``report --issue``: the Markdown report as the month's one issue, edited when run again.

Through the fake GitHub over real HTTP (every request and answer checked against GitHub's
OpenAPI description) and a real sqlite MLflow store.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gate import tracking
from gate.cli import main
from gate.reporters.report_markdown import MARKER
from tests import report_kit

REPO = "Codertocat/Hello-World"


@pytest.fixture
def in_workflow(github_env, monkeypatch):
    for key, value in github_env().items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def month(tmp_path):
    """One spec and one finished 2-hour run in March 2025: 20.00 USD."""
    kit = report_kit.one_spec(tmp_path)
    tags = tracking.run_tags(str(kit.spec), trial_id=0)
    report_kit.log_run(kit.client, kit.experiment, tags, name="r0", start=1, hours=2)
    return kit


def report(kit, capsys, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(
        ["report", "--policy-dir", kit.policy_dir, "--tracking-uri", kit.uri,
         "--month", report_kit.MONTH, "--issue", *args]
    )  # fmt: skip
    return code, capsys.readouterr().err


def issues(fake_github):
    return sorted(fake_github.repo(REPO).issues.values(), key=lambda i: i.number)


def bot_issues(fake_github):
    return [i for i in issues(fake_github) if i.author == "github-actions[bot]"]


def test_the_month_becomes_one_issue_edited_on_a_rerun(month, fake_github, in_workflow, capsys):
    code, err = report(month, capsys)
    assert code == 0, err
    [posted] = bot_issues(fake_github)
    assert posted.title == "budget-gate report 2025-03"
    marker, rest = posted.body.split("\n", 1)
    assert marker.startswith("<!-- budget-gate:report:") and marker.endswith(" -->")
    assert rest.startswith(MARKER + "\n\n## budget-gate report 2025-03")
    assert "20.00 USD actual" in rest
    assert f"opened the issue {fake_github.web_url}/{REPO}/issues/{posted.number}" in err

    tags = tracking.run_tags(str(month.spec), trial_id=1)
    report_kit.log_run(month.client, month.experiment, tags, name="r1", start=5, hours=3)
    code, err = report(month, capsys)
    assert code == 0, err
    [edited] = bot_issues(fake_github)  # the same issue, not a second one
    assert edited.number == posted.number and "50.00 USD actual" in edited.body
    assert f"updated the issue {fake_github.web_url}/{REPO}/issues/{posted.number}" in err
    assert len(fake_github.requests_for("issues/create")) == 1
    assert len(fake_github.requests_for("issues/update")) == 1


def test_another_month_or_team_gets_its_own_issue(month, fake_github, in_workflow, capsys):
    assert report(month, capsys)[0] == 0
    assert report(month, capsys, "--team", month.team)[0] == 0
    capsys.readouterr()
    code = main(
        ["report", "--policy-dir", month.policy_dir, "--tracking-uri", month.uri,
         "--month", "2025-02..2025-03", "--issue"]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    titles = [i.title for i in bot_issues(fake_github)]
    assert titles == [
        "budget-gate report 2025-03",
        f"budget-gate report 2025-03 for team {month.team}",
        "budget-gate report 2025-02..2025-03",
    ]
    assert len({i.body.split("\n", 1)[0] for i in bot_issues(fake_github)}) == 3


def test_an_issue_someone_else_opened_with_the_marker_is_left_alone(
    month, fake_github, in_workflow, capsys
):
    """A planted marker must not make the tool write into an attacker's issue."""
    assert report(month, capsys)[0] == 0
    [ours] = bot_issues(fake_github)
    repo = fake_github.repo(REPO)
    marker = ours.body.split("\n", 1)[0]
    planted = repo.add_issue(90, author="mallory", title=ours.title, body=f"{marker}\nmine")
    pull = repo.add_pull(91, author="github-actions[bot]", body=f"{marker}\nbump")
    quoting = repo.add_issue(92, author="github-actions[bot]", body=f"as in {marker}")
    ours.body = f"{marker}\nold"
    assert report(month, capsys)[0] == 0
    assert planted.body == f"{marker}\nmine" and pull.body == f"{marker}\nbump"
    assert quoting.body == f"as in {marker}"
    assert bot_issues(fake_github)[0].number == ours.number and "20.00 USD" in ours.body
    assert len(fake_github.requests_for("issues/create")) == 1
    repo.issues.pop(ours.number)  # ours deleted: the planted one is still not taken over
    assert report(month, capsys)[0] == 0
    assert planted.body == f"{marker}\nmine"
    assert len(fake_github.requests_for("issues/create")) == 2


def test_a_closed_issue_is_edited_and_stays_closed(month, fake_github, in_workflow, capsys):
    assert report(month, capsys)[0] == 0
    [posted] = bot_issues(fake_github)
    posted.state = "closed"
    posted.body = posted.body.split("\n", 1)[0] + "\nold"
    assert report(month, capsys)[0] == 0
    [edited] = bot_issues(fake_github)
    assert edited.state == "closed" and "20.00 USD actual" in edited.body


def test_an_old_issue_is_found_past_the_first_page(month, fake_github, in_workflow, capsys):
    assert report(month, capsys)[0] == 0
    [posted] = bot_issues(fake_github)
    repo = fake_github.repo(REPO)
    for n in range(105):  # newer issues the workflow's bot opened since
        repo.add_issue(1000 + n, author="github-actions[bot]", title=f"other {n}", body="x")
    before = len(fake_github.requests)
    assert report(month, capsys)[0] == 0
    assert len(bot_issues(fake_github)) == 106
    assert len(fake_github.requests_for("issues/create")) == 1
    asked = [r.operation_id for r in fake_github.requests[before:]]
    # two pages of the list, the match completed once, the edit: no request per issue
    assert asked == ["issues/list-for-repo"] * 2 + ["issues/get", "issues/update"]
    [query, _] = [r.query for r in fake_github.requests_for("issues/list-for-repo")[-2:]]
    assert query["creator"] == ["github-actions[bot]"] and query["state"] == ["all"]
    assert query["since"] == ["2025-02-28T00:00:00Z"]  # the period's start, less a day
    assert posted.body.count(MARKER) == 1


def test_a_token_of_another_account_is_named_with_the_fix(month, fake_github, github_env,
                                                          monkeypatch, capsys):  # fmt: skip
    """A GitHub App's token posts as its own bot: said, so the next run does not open another."""
    fake_github.add_token("ghs_app", "my-app[bot]")
    for key, value in github_env(token="ghs_app").items():
        monkeypatch.setenv(key, value)
    code, err = report(month, capsys)
    assert code == 0
    assert "the issue was posted as my-app[bot]" in err
    assert "BUDGET_GATE_BOT_LOGIN=my-app[bot]" in err
    monkeypatch.setenv("BUDGET_GATE_BOT_LOGIN", "My-App[bot]")  # GitHub logins ignore case
    code, err = report(month, capsys)
    assert code == 0 and "updated the issue" in err and "posted as" not in err
    assert len(fake_github.requests_for("issues/create")) == 1


def test_a_token_that_may_not_write_issues_says_which_permission(
    month, fake_github, in_workflow, capsys
):
    fake_github.read_only = True
    code, err = report(month, capsys)
    assert code == 4
    assert "(403)" in err and "give the job permissions: issues: write" in err


def test_without_a_token_nothing_is_read_or_written(month, github_env, monkeypatch, capsys):
    env = github_env()
    monkeypatch.setenv("GITHUB_REPOSITORY", env["GITHUB_REPOSITORY"])
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    target = month.root / "report.md"
    code, err = report(month, capsys, "--format", f"markdown={target}")
    assert code == 3
    assert "cannot write to GitHub: GITHUB_TOKEN not set" in err
    assert not target.exists()
    monkeypatch.setenv("GITHUB_TOKEN", "t")
    monkeypatch.delenv("GITHUB_REPOSITORY")
    code, err = report(month, capsys, "--format", f"markdown={target}")
    assert code == 3 and "GITHUB_REPOSITORY not set — set GITHUB_REPOSITORY to owner/name" in err


def test_a_failed_post_exits_4_after_the_files_are_written(month, fake_github, in_workflow, capsys):
    fake_github.fail_next("issues/create", 422, "Validation Failed")
    target = month.root / "focus.csv"
    code, err = report(month, capsys, "--format", f"focus={target}")
    assert code == 4
    assert "GitHub at" in err and "answered 422 while writing the issue" in err
    assert target.read_text(encoding="utf-8").count("\n") == 2  # the header and the run
    assert fake_github.token not in err
    assert bot_issues(fake_github) == []


MISSING_PYGITHUB = """\
import sys
sys.modules["github"] = None  # as if installed without the [github] extra
from gate.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_ci_without_the_github_extra_says_which_to_install(github_env, tmp_path):
    env = {**github_env(), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path.cwd())}
    done = subprocess.run(
        [sys.executable, "-c", MISSING_PYGITHUB, "ci"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=False,
    )
    assert done.returncode == 3, done.stderr
    assert "budget-gate ci needs PyGithub, and github is not installed" in done.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "--issue", "--tracking-uri", "sqlite:///nowhere.db"],
        ["reconcile", "--pr", "2", "spec.yaml"],
    ],
    ids=["report --issue", "reconcile --pr"],
)
def test_without_the_github_extra_it_says_which_to_install(argv, tmp_path):
    (tmp_path / "spec.yaml").write_text(Path("examples/cifar-sweep.yaml").read_text())
    env = {"GITHUB_TOKEN": "t", "GITHUB_REPOSITORY": "a/b", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", MISSING_PYGITHUB, *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(Path.cwd())},
        check=False,
    )
    assert done.returncode == 3, done.stderr
    assert "needs PyGithub, and github is not installed" in done.stderr
    assert "pip install 'budget-gate[github]'" in done.stderr
    assert "Traceback" not in done.stderr
