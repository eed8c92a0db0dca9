"""BG204 team-ownership: a spec's team must own its path, and a path's owner is its team."""

from __future__ import annotations

from gate.policy.model import Ownership, Severity
from gate.policy.rules import team_ownership
from gate.policy.rules.base import RuleContext, Violation
from tests.conftest import TODAY, make_estimate, make_policy, make_spec

NLP = Ownership(specs=["experiments/nlp/**"])
VISION = Ownership(specs=["experiments/vision/**", "!experiments/vision/shared/**"])
OWNERS = {"nlp": NLP, "vision": VISION}


def _run(path: str, team: str | None, owners=OWNERS) -> list[Violation]:
    spec = make_spec({"metadata": {"team": team}} if team else None)
    policy = make_policy()
    ctx = RuleContext(
        spec, make_estimate(spec, policy), policy, path, TODAY, None, tuple(owners), owners, path
    )
    return list(team_ownership.check(ctx))


def test_constants():
    assert (team_ownership.ID, team_ownership.SLUG) == ("BG204", "team-ownership")
    assert team_ownership.DEFAULT_SEVERITY is Severity.ERROR


def test_a_spec_in_its_teams_paths_passes():
    assert _run("experiments/nlp/a.yaml", "nlp") == []
    assert _run("experiments/vision/deep/b.yml", "vision") == []


def test_claiming_another_team_names_the_owner():
    [violation] = _run("experiments/nlp/a.yaml", "vision")
    assert violation.message == (
        "experiments/nlp/a.yaml is not one of team vision's specs (owns.specs: "
        "experiments/vision/**, !experiments/vision/shared/**); set metadata.team: nlp"
    )
    assert violation.path == ("metadata", "team")


def test_leaving_out_the_team_in_an_owned_path_fails():
    [violation] = _run("experiments/nlp/a.yaml", None)
    assert violation.message == (
        "experiments/nlp/a.yaml belongs to team nlp (owns.specs), but claims no team; "
        "set metadata.team: nlp"
    )
    assert violation.path == ("metadata",)


def test_a_team_without_ownership_cannot_take_an_owned_path():
    [violation] = _run("experiments/nlp/a.yaml", "speech")  # speech states no owns.specs
    assert violation.message.startswith("experiments/nlp/a.yaml belongs to team nlp (owns.")
    assert violation.message.endswith("but claims team speech; set metadata.team: nlp")


def test_a_path_nobody_owns_is_refused_to_an_owning_team():
    [violation] = _run("experiments/vision/shared/x.yaml", "vision")  # taken back by "!"
    assert violation.message.endswith(
        "; no team owns it — move it under the team's paths, or add it to its owns.specs"
    )


def test_unset_ownership_checks_nothing():
    assert _run("experiments/nlp/a.yaml", "vision", owners={}) == []
    assert _run("elsewhere/a.yaml", "speech") == []  # nobody's path, a team owning none
    assert _run("elsewhere/a.yaml", None) == []
