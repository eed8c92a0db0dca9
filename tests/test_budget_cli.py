"""Monthly team budgets in ``check`` against a real MLflow ledger: spend, BG120, BG121."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from tests.ledger_kit import Team, unique

UTC = dt.timezone.utc
BUDGET = ", monthly_budget: 1000"


@pytest.fixture
def team(team: Team) -> Team:
    """The shared team, with a monthly budget of 1,000 USD and approvals over 35 trials."""
    team.policy(trials_over=35, limits=BUDGET)
    return team


def test_check_reports_spend_and_fires_the_warning_then_the_error(team):
    approved = team.spec(40)  # 400 USD, needs approval (40 > 35)
    assert team.cli("approve", approved, "--by", "alice", "--reason", "ok")[0] == 0
    team.reconcile(team.spec(1), "300")

    warned = team.spec(30)  # 300 USD: fits the 300 left, but 1,000 is 100 % > 80 %
    code, out, _ = team.cli("check", warned)
    assert code == 0
    month = dt.datetime.now(UTC).strftime("%Y-%m")
    assert (
        f"  budget: team {team.name}, {month}: 700.00 USD of 1,000.00 USD spent (approved, "
        "not reconciled 400.00; reconciled 300.00), 300.00 USD left before this spec"
    ) in out
    assert f"warn BG121 team {team.name} would use 100 % of its monthly budget" in out

    over = team.spec(31)  # 310 USD > 300 left
    code, out, _ = team.cli("check", over)
    assert code == 1
    assert (
        f"error BG120 worst-case cost 310.00 USD exceeds the 300.00 USD left of team {team.name}'s"
        in out
    )

    team.reconcile(approved, "350")  # the approved run cost less than approved
    assert team.cli("check", over)[0] == 0  # 650 spent, 350 left

    code, out, _ = team.cli("check", "--format", "json", over)
    budget = json.loads(out)["results"][0]["budget"]
    assert budget == {
        "scope": "team",
        "key": team.name,
        "month": month,
        "currency": "USD",
        "budget": "1000.00",
        "spent": "650.00",
        "committed": "0.00",
        "actual": "650.00",
        "remaining": "350.00",
        "warn_at": "0.8",
        "other_currency_records": 0,
    }


def test_a_specs_own_approval_does_not_count_against_it(team):
    spec = team.spec(90)  # 900 USD: needs approval, fits the budget, 90 % > 80 %
    assert team.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    code, out, _ = team.cli("verify", spec)
    assert code == 0
    assert "1,000.00 USD left before this spec" in out
    assert "warn BG121" in out
    assert team.cli("check", team.spec(20))[0] == 1  # 200 > the 100 left after the approval


def test_budget_is_per_month(team):
    team.reconcile(team.spec(1), "990")
    spec = team.spec(2)
    assert team.cli("check", spec)[0] == 1
    now = dt.datetime.now(UTC)
    next_month = (now.replace(day=1) + dt.timedelta(days=32)).replace(day=2)
    assert team.cli("check", spec, "--as-of", next_month.date().isoformat())[0] == 0
    before = (now - dt.timedelta(seconds=5)).isoformat()
    assert team.cli("check", spec, "--as-of", before)[0] == 0  # the record is newer


def test_revoked_approvals_release_the_money(team):
    big = team.spec(95)
    assert team.cli("approve", big, "--by", "alice", "--reason", "ok")[0] == 0
    small = team.spec(10)
    assert team.cli("check", small)[0] == 1
    assert team.cli("revoke", big, "--by", "bob", "--reason", "not now")[0] == 0
    assert team.cli("check", small)[0] == 0


def test_cost_center_scope(team):
    centers = f"labels: {{allowed: {{cost-center: [{team.cost_center}]}}}}\n"
    team.policy(limits=BUDGET + ", budget_scope: cost-center, budget_warn_at: 0.5", extra=centers)
    team.reconcile(team.spec(1), "600", team=unique("other-team"))
    code, out, _ = team.cli("check", team.spec(1))
    assert code == 0
    assert f"budget: cost-center {team.cost_center}, " in out
    assert "600.00 USD of 1,000.00 USD spent" in out
    assert "warn BG121" in out and "warn_at 50 %" in out


def test_other_currencies_are_not_added(team):
    team.reconcile(team.spec(1), "900", currency="EUR")
    code, out, _ = team.cli("check", team.spec(1))
    assert code == 0
    assert "0.00 USD of 1,000.00 USD spent" in out
    assert "1 record(s) in other currencies not counted" in out


def test_without_a_team_no_budget_applies_and_the_spec_fails(team):
    spec = Path(team.spec(1))
    spec.write_text(spec.read_text().replace(f"team: {team.name}, ", ""))
    team.reconcile(str(spec), "2000")
    code, out, _ = team.cli("check", str(spec))
    assert "budget:" not in out  # no team: no budget to read
    assert code == 1 and "error BG206 metadata.team is missing" in out  # so it cannot pass
