"""BG203 unknown-team: metadata.team without a policy file, not in the policy's teams."""

from __future__ import annotations

import pytest

from gate.policy.model import Policy, Severity
from gate.policy.rules import unknown_team
from gate.policy.rules.base import RuleContext, Violation
from gate.spec.experiment import Experiment
from tests.conftest import TODAY, make_estimate, make_policy, make_spec, run_rule

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


def test_a_typo_of_a_known_team_is_an_error_with_did_you_mean():
    # A swap of two letters is one edit from atlas: a typo, not another team.
    [violation] = _run("atlsa")
    assert violation.message == (
        "team 'atlsa' has no policy file (atlsa.yaml): the default policy applies"
        " — did you mean 'atlas'?"
    )
    assert violation.path == PATH
    assert violation.severity is Severity.ERROR


@pytest.mark.parametrize(
    ("team", "files", "error"),
    [
        ("nlpp", ("nlp",), True),  # one insertion
        ("nl", ("nlp",), True),  # one deletion
        ("nlx", ("nlp",), True),  # one substitution
        ("nxx", ("nlp",), False),  # two edits of a three-letter name: another team
        ("visoin", ("vision",), True),  # one swap
        ("vsiin", ("vision",), True),  # two edits of a six-letter name
        ("vzzzon", ("vision",), False),  # three edits
        ("speech", ("nlp", "vision"), False),
    ],
)
def test_only_a_near_miss_of_a_known_team_is_an_error(team, files, error):
    [violation] = _run(team, files=files)
    assert (violation.severity is Severity.ERROR) is error, violation.message


def test_a_far_off_team_is_a_warning():
    [violation] = _run("speech")
    assert violation.severity is None  # the rule's default: warn
    assert "did you mean" not in violation.message


def test_with_listed_teams_and_nothing_close_the_fix_is_said():
    [violation] = _run("speech", make_policy({"teams": []}))
    assert violation.severity is Severity.ERROR
    assert violation.message.endswith("add it to the policy's teams: or create speech.yaml")


def test_with_listed_teams_an_unknown_team_is_an_error():
    [violation] = _run("nlpp", make_policy({"teams": ["nlp", "speech"]}))
    assert violation.severity is Severity.ERROR
    assert "is not in the policy's teams" in violation.message
    assert violation.message.endswith("did you mean 'nlp'?")


def test_nothing_close_gives_no_suggestion():
    [violation] = _run("zzz")
    assert "did you mean" not in violation.message


def test_team_default_is_named_as_the_default_policy_not_a_missing_file():
    """``default.yaml`` exists: the finding says that ``default`` is no team's name."""
    [violation] = run_rule(
        unknown_team, make_spec({"metadata": {"team": "default"}}), make_policy()
    )
    assert violation.message == (
        "team 'default' names the default policy, not a team: the default policy applies — "
        "name the team that owns the spec, or leave team: out"
    )
    assert violation.severity is None  # a warning, as for any team the policy does not list
