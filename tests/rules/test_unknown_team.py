"""BG203 unknown-team: metadata.team without a policy file, not in the policy's teams."""

from __future__ import annotations

from gate.policy.model import Policy, Severity
from gate.policy.rules import unknown_team
from gate.policy.rules.base import RuleContext, Violation
from gate.spec.experiment import Experiment
from tests.conftest import TODAY, make_estimate, make_policy, make_spec

PATH = ("metadata", "team")


def _run(team: str | None, policy: Policy | None = None, files=("atlas",)) -> list[Violation]:
    spec: Experiment = make_spec({"metadata": {"team": team}} if team else None)
    policy = policy or make_policy()
    ctx = RuleContext(
        spec, make_estimate(spec, policy), policy, "exp/spec.yaml", TODAY, None, tuple(files)
    )
    return list(unknown_team.check(ctx))


def test_constants():
    assert (unknown_team.ID, unknown_team.SLUG) == ("BG203", "unknown-team")
    assert unknown_team.DEFAULT_SEVERITY is Severity.WARN


def test_team_with_its_own_policy_file_passes():
    assert _run("atlas") == []


def test_team_listed_in_the_policy_passes():
    assert _run("nlp", make_policy({"teams": ["nlp"]})) == []


def test_no_team_is_not_checked():
    assert _run(None) == []


def test_typo_is_a_warning_with_did_you_mean():
    [violation] = _run("atlsa")
    assert violation.message == (
        "team 'atlsa' has no policy file (atlsa.yaml): the default policy applies"
        " — did you mean 'atlas'?"
    )
    assert violation.path == PATH
    assert violation.severity is None  # the rule's default: warn


def test_with_listed_teams_an_unknown_team_is_an_error():
    [violation] = _run("nlpp", make_policy({"teams": ["nlp", "speech"]}))
    assert violation.severity is Severity.ERROR
    assert "is not in the policy's teams" in violation.message
    assert violation.message.endswith("did you mean 'nlp'?")


def test_nothing_close_gives_no_suggestion():
    [violation] = _run("zzz")
    assert "did you mean" not in violation.message
