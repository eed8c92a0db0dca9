"""Why a running search's approval no longer holds, as the guard's stop says it.

Every withdrawal read "revoked in the ledger": a ledger deleted, emptied or renamed under a
running search sent its operator looking for a revoker who did not exist. The stop now
names the revocation (who, when, why), or says that the approval's record is gone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import gate
from gate.guard.limits import Ceiling
from gate.guard.model import StopKind
from tests.ledger_kit import Team


@pytest.fixture
def team(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch) -> Team:
    monkeypatch.delenv("BUDGET_GATE_LAUNCH_KEY", raising=False)  # open_guard exports one
    team = Team(tmp_path, f"sqlite:///{tmp_path / 'mlflow.db'}", capsys)
    team.policy()
    return team


def _approved_guard(team: Team) -> tuple[gate.Guard, str]:
    spec = team.spec(6)  # over the team's 4 trials: needs an approval; 60 USD at worst
    assert team.cli("approve", spec, "--by", "alice", "--reason", "worth it")[0] == 0
    guard = gate.open_guard(spec, policy_dir=team.policy_dir, tracking_uri=team.uri)
    assert guard._refresh is not None and isinstance(guard._refresh(), Ceiling)
    return guard, spec


def _refreshed(guard: gate.Guard) -> str:
    guard._refreshed -= 3600  # an hour later: the refresh is due
    decision = guard.check()
    assert decision.stop_search and decision.kind is StopKind.APPROVAL
    return decision.reason


def test_a_revocation_is_named_with_its_revoker_and_reason(team):
    guard, spec = _approved_guard(team)
    code, _, err = team.cli("revoke", spec, "--by", "bob", "--reason", "too dear")
    assert code == 0, err
    reason = _refreshed(guard)
    assert reason.startswith("the approval of 60.00 USD no longer holds (revoked in the ledger, ")
    assert "revocation by bob on " in reason and reason.endswith(": too dear)")


def test_a_ledger_gone_from_under_a_search_is_said_not_called_a_revocation(team, tmp_path):
    guard, _ = _approved_guard(team)
    (tmp_path / "mlflow.db").unlink()  # deleted (MLflow makes an empty store at the next read)
    reason = _refreshed(guard)
    assert "revoked" not in reason
    assert " is no longer in the ledger at sqlite:///" in reason
    assert reason.endswith(": deleted, emptied or renamed)")
