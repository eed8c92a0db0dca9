"""A pull request that changes policies/: the Action validates them and shows the impact.

Through the real ``budget-gate ci`` against the fake GitHub (issue 11, item 5): the specs of
the repository are read at the head, priced under the base's and the head's policies, and
each one whose verdict or worst-case cost moves is listed, before → after.
"""

from __future__ import annotations

import datetime as dt

from tests.github.ci_kit import POLICY, T0, PullRequestStory, grid_spec

HOUR = dt.timedelta(hours=1)
STRICTER = POLICY.replace("max_experiment_cost: 20000", "max_experiment_cost: 500")


def _repository_specs(story: PullRequestStory) -> None:
    """Two specs already on the branch, untouched by the pull request."""
    story.repo.put_file("experiments/llm-grid.yaml", grid_spec(4), ref=story.head)  # 580.27 USD
    story.repo.put_file("experiments/deep/small.yaml", grid_spec(1, name="small"), ref=story.head)


def test_policy_change_comments_every_spec_it_moves(story: PullRequestStory) -> None:
    story.change("policies/default.yaml", STRICTER, at=T0 + HOUR, before=POLICY)
    _repository_specs(story)
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 0, ran.stderr
    assert story.status() == ("success", "policies valid · 1 spec changes under them")
    (comment,) = story.bot_comments()
    assert "### Policy change" in comment
    assert "This pull request changes `policies/default.yaml`." in comment
    assert "Of 2 specs in the repository, 1 changes verdict or worst-case cost" in comment
    assert (
        "| `experiments/llm-grid.yaml` | approval-required → **violation** "
        "| 580.27 USD → 580.27 USD |"
    ) in comment
    assert "small.yaml" not in comment  # 145 USD: under both limits, so not listed
    assert "CODEOWNERS" in comment
    assert "experiments/llm-grid.yaml: approval-required → violation" in ran.stdout
    assert "### Policy change" in ran.summary


def test_invalid_head_policies_fail_the_status(story: PullRequestStory) -> None:
    broken = "apiVersion: budget-gate/v1\nkind: Policy\nlimits: {max_trial_hours: -1}\n"
    story.change("policies/nlp.yaml", broken, at=T0 + HOUR)
    story.repo.put_file("policies/default.yaml", POLICY, ref=story.head)  # unchanged
    _repository_specs(story)
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 3
    assert story.status() == ("failure", "invalid policies at the head: see the job's annotations")
    assert "::error file=policies/nlp.yaml,line=3,col=27,title=invalid policy::" in ran.stdout
    assert "limits.max_trial_hours: input should be greater than or equal to 0.000001" in ran.stdout
    (comment,) = story.bot_comments()
    assert "**The policies at the head do not load**" in comment
    assert "policies/nlp.yaml:3:27" in comment


def test_a_pull_request_without_policy_changes_gets_no_policy_section(
    story: PullRequestStory,
) -> None:
    story.change("experiments/llm-grid.yaml", grid_spec(1), at=T0 + HOUR)
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 0, ran.stderr
    (comment,) = story.bot_comments()
    assert "Policy change" not in comment
    assert story.status() == ("success", "within policy · worst case 145.07 USD")


def test_fixing_a_broken_base_policy_shows_specs_leaving_invalid(story: PullRequestStory) -> None:
    broken = "apiVersion: budget-gate/v1\nkind: Policy\nseverity: {BG999: error}\n"
    fixed = "apiVersion: budget-gate/v1\nkind: Policy\nseverity: {BG304: error}\n"
    story.change("policies/nlp.yaml", fixed, at=T0 + HOUR, before=broken)
    story.repo.put_file("policies/default.yaml", POLICY, ref=story.head)
    _repository_specs(story)  # both specs are team nlp
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 0, ran.stderr
    (comment,) = story.bot_comments()
    assert "| `experiments/llm-grid.yaml` | invalid → **approval-required** | — → 580.27 USD |" in (
        comment
    )
    assert story.status() == ("success", "policies valid · 2 specs change under them")


def test_a_file_name_with_line_breaks_cannot_start_a_workflow_command(
    story: PullRequestStory,
) -> None:
    """The runner runs any output line that starts with ``::``: a path's breaks are escaped."""
    evil = "experiments/x\n::error title=budget-gate::approved\n::stop-commands::zz\n.yaml"
    story.change("policies/default.yaml", STRICTER, at=T0 + HOUR, before=POLICY)
    story.repo.put_file(evil, grid_spec(4), ref=story.head)
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 0, ran.stderr
    lines = (ran.stdout + ran.stderr).splitlines()
    assert not [line for line in lines if line.startswith("::") and "approved" in line]
    assert "::stop-commands::zz" not in lines
    shown = "experiments/x\\n::error title=budget-gate::approved\\n::stop-commands::zz\\n.yaml"
    assert f"  {shown}: approval-required → violation, worst case 580.27 USD" in ran.stdout
