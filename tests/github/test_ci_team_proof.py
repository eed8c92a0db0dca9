"""On a pull request a team is proven by the spec's path and by its author's GitHub teams.

Issue 21 #9 through the Action: the base branch's ``policies/nlp.yaml`` caps an experiment
at 100 USD and owns ``experiments/nlp/**``; ``policies/vision.yaml`` caps it at 100,000 and
owns ``experiments/vision/**``. A pull request whose ``experiments/nlp/a.yaml`` says
``team: vision`` used to pass under vision's cap; now BG204 fails it and names nlp. And
nlp's ``owns.github_teams`` lets only members of ``Octocoders/nlp-researchers`` change
nlp's specs (BG205): the fake GitHub answers the membership questions.
"""

from __future__ import annotations

import datetime as dt

from tests.github.ci_kit import NUMBER, T0, PullRequestStory, grid_spec

HOUR = dt.timedelta(hours=1)
NLP_SPEC = "experiments/nlp/a.yaml"
SMALL = grid_spec(1)  # 16 trials, 145.07 USD: over nlp's 100, far under vision's 100,000
NLP = """\
apiVersion: budget-gate/v1
kind: Policy
limits: {{max_experiment_cost: {cap}}}
owns:
  specs: [experiments/nlp/**]
{members}"""
VISION = """\
apiVersion: budget-gate/v1
kind: Policy
limits: {max_experiment_cost: 100000}
owns: {specs: [experiments/vision/**]}
"""


def _teams(story: PullRequestStory, *, cap: int = 100, members: str = "") -> None:
    """The base branch's team policies (the pull request cannot change what judges it)."""
    base = story.repo.pull(NUMBER).base_sha
    story.repo.put_file("policies/nlp.yaml", NLP.format(cap=cap, members=members), ref=base)
    story.repo.put_file("policies/vision.yaml", VISION, ref=base)


def test_a_spec_cannot_claim_a_team_that_does_not_own_it(story: PullRequestStory) -> None:
    _teams(story)
    story.push({NLP_SPEC: SMALL.replace("team: nlp", "team: vision")}, at=T0 + HOUR)
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 1, ran.stderr
    assert story.status() == ("failure", "breaks policy · worst case 145.07 USD")
    (result,) = ran.report["results"]
    assert result["policy"] == "vision ← default"
    (finding,) = [f for f in result["findings"] if f["rule_id"] == "BG204"]
    assert finding["message"] == (
        f"{NLP_SPEC} is not one of team vision's specs (owns.specs: experiments/vision/**); "
        "set metadata.team: nlp"
    )
    (comment,) = story.bot_comments()
    assert "BG204" in comment and "set metadata.team: nlp" in comment
    assert f"::error file={NLP_SPEC},line=" in ran.stdout  # annotated at metadata.team


def test_only_members_of_the_teams_github_teams_may_change_its_specs(
    story: PullRequestStory,
) -> None:
    _teams(story, cap=1000, members="  github_teams: [Octocoders/nlp-researchers]\n")
    story.fake.add_team("Octocoders", "nlp-researchers", members={"Codertocat": "pending"})
    story.push({NLP_SPEC: SMALL}, at=T0 + HOUR)  # team: nlp, within nlp's 1,000 USD
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 1, ran.stderr
    (finding,) = [f for f in ran.report["results"][0]["findings"] if f["rule_id"] == "BG205"]
    assert finding["message"] == (
        "@Codertocat (the pull request's author) is in none of team nlp's GitHub teams "
        "(Octocoders/nlp-researchers), so cannot spend its budget — a member must open the "
        "pull request, or the team's owns.github_teams must list them"
    )  # a pending invitation is not a membership
    assert story.fake.requests_for("teams/get-membership-for-user-in-org")
    story.fake.add_team("Octocoders", "nlp-researchers", members=["Codertocat"])
    ran = story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    assert ran.code == 0, ran.stdout + ran.stderr
    assert story.status()[0] == "success"
    assert not [f for f in ran.report["results"][0]["findings"] if f["rule_id"] == "BG205"]
