"""BG206 budget-key: under a monthly budget, the spec names a key from the closed list."""

from __future__ import annotations

from gate.policy.model import Severity
from gate.policy.rules import budget_key
from gate.policy.rules.base import RuleContext, Violation
from tests.conftest import TODAY, make_estimate, make_policy, make_spec

TEAM_BUDGET = {"limits": {"monthly_budget": 1000}, "teams": ["nlp"]}
CC_BUDGET = {
    "limits": {"monthly_budget": 1000, "budget_scope": "cost-center"},
    "labels": {"allowed": {"cost-center": ["cc-1", "cc-2"]}},
}


def _run(metadata: dict, policy: dict, files=("vision",)) -> list[Violation]:
    spec = make_spec({"metadata": metadata})
    typed = make_policy(policy)
    ctx = RuleContext(spec, make_estimate(spec, typed), typed, "e.yaml", TODAY, None, files)
    return list(budget_key.check(ctx))


def test_constants():
    assert (budget_key.ID, budget_key.SLUG) == ("BG206", "budget-key")
    assert budget_key.DEFAULT_SEVERITY is Severity.ERROR


def test_known_keys_pass():
    assert _run({"team": "nlp"}, TEAM_BUDGET) == []  # listed in teams
    assert _run({"team": "vision"}, TEAM_BUDGET) == []  # has a policy file
    assert _run({"labels": {"cost-center": "cc-2"}}, CC_BUDGET) == []


def test_a_missing_team_spends_no_budget():
    [violation] = _run({}, TEAM_BUDGET)
    assert violation.message == (
        "metadata.team is missing, and the monthly budget is per team: the spec would spend "
        "no budget — set it to one of nlp, vision"
    )
    assert violation.path == ("metadata",)


def test_a_made_up_team_or_cost_center_has_no_budget():
    [team] = _run({"team": "ghost"}, TEAM_BUDGET)
    assert team.message == (
        "team 'ghost' has no monthly budget: it is not one of nlp, vision (a policy file or "
        "teams:) — use a known team"
    )
    assert team.path == ("metadata", "team")
    [cc] = _run({"labels": {"cost-center": "cc-made-up-42"}}, CC_BUDGET)
    assert cc.message.startswith("cost center 'cc-made-up-42' has no monthly budget: it is not ")
    assert "one of cc-1, cc-2 (labels.allowed.cost-center)" in cc.message
    assert cc.path == ("metadata", "labels", "cost-center")


def test_a_missing_cost_center_label_spends_no_budget():
    [violation] = _run({"team": "nlp"}, CC_BUDGET)
    assert violation.message.startswith("label cost-center is missing, and the monthly budget ")
    assert violation.path == ("metadata", "labels")


def test_unset_budget_checks_nothing():
    assert _run({}, {"teams": ["nlp"]}) == []
    assert _run({"team": "ghost"}, {}) == []


def test_with_no_key_listed_it_says_to_list_one_first():
    budget = {"limits": {"monthly_budget": 1000}}
    [missing] = _run({}, budget, files=())
    assert missing.message == (
        "metadata.team is missing, and the monthly budget is per team: the spec would spend "
        "no budget — list the teams (a policy file or teams:), then set it to one: none is "
        "listed yet"
    )
    [unknown] = _run({"team": "ml"}, budget, files=())
    assert unknown.message == (
        "team 'ml' has no monthly budget: no team is listed (a policy file or teams:) — use a "
        "known team once it is listed there"
    )
    [cc] = _run({}, {"limits": {"monthly_budget": 1000, "budget_scope": "cost-center"}})
    assert cc.message.endswith(
        "— list the cost centers (labels.allowed.cost-center), then set it to one: none is "
        "listed yet"
    )
