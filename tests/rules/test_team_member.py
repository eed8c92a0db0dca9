"""BG205 team-member: on a pull request the author must be in one of the team's GitHub teams."""

from __future__ import annotations

from gate.policy.model import Severity
from gate.policy.rules import team_member
from gate.policy.rules.base import RuleContext, Spender, Violation
from tests.conftest import TODAY, make_estimate, make_policy, make_spec

OWNS = {"owns": {"github_teams": ["acme/nlp", "nlp-leads"]}}


def _run(spender: Spender | None, policy=OWNS, team: str | None = "nlp") -> list[Violation]:
    spec = make_spec({"metadata": {"team": team}} if team else None)
    typed = make_policy(policy)
    ctx = RuleContext(spec, make_estimate(spec, typed), typed, "e.yaml", TODAY, spender=spender)
    return list(team_member.check(ctx))


def test_constants():
    assert (team_member.ID, team_member.SLUG) == ("BG205", "team-member")
    assert team_member.DEFAULT_SEVERITY is Severity.ERROR


def test_a_member_of_one_team_passes():
    assert _run(Spender("dora", frozenset({"nlp-leads"}))) == []


def test_a_non_member_fails():
    [violation] = _run(Spender("mallory"))
    assert violation.message == (
        "@mallory (the pull request's author) is in none of team nlp's GitHub teams "
        "(acme/nlp, nlp-leads), so cannot spend its budget — a member must open the pull "
        "request, or the team's owns.github_teams must list them"
    )
    assert violation.path == ("metadata", "team")


def test_membership_github_would_not_tell_is_a_refusal():
    [violation] = _run(Spender("dora", unknown=frozenset({"acme/nlp"})))
    assert violation.message.startswith(
        "GitHub would not say whether @dora (the pull request's author) is in acme/nlp"
    )
    assert violation.message.endswith("read the organization's teams (read:org)")


def test_unset_checks_nothing():
    assert _run(None) == []  # not a pull request
    assert _run(Spender("mallory"), policy={}) == []  # the policy lists no GitHub teams
    assert _run(Spender("mallory"), team=None) == []  # no team claimed
