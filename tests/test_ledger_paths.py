"""Red team: paths. An approval is bound to one path, and a revocation stays on that path; a
launch run from outside the repository reads the repository's ledger, not an empty one.

Through the real CLI and launch API, against the session's real MLflow tracking server or
the repository's own sqlite ledger (the default).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import gate
from gate.cli import main
from tests.ledger_kit import Team
from tests.test_base_ref import git


def test_revoking_a_copy_leaves_the_approval_of_the_original(team: Team, tmp_path: Path):
    """Two paths of one spec version, each approved: revoking the copy revoked both, so the
    original's launch was refused (exit 2) by a revocation that never named it."""
    spec = team.spec(8)  # 80 USD, needs an approval
    copy = str(tmp_path / "copy.yaml")
    shutil.copy(spec, copy)
    for path in (spec, copy):
        assert team.cli("approve", path, "--by", "alice", "--reason", "ok")[0] == 0
    code, out, _ = team.cli("revoke", copy, "--by", "bob", "--reason", "not this one")
    assert code == 0
    assert out.count("cancels approval by alice") == 1, out
    assert team.cli("verify", copy, "--dry-run")[0] == 2
    code, out, _ = team.cli("verify", spec, "--dry-run")
    assert code == 0, out


def test_revoking_a_path_with_no_approval_of_its_own_says_so(team: Team, tmp_path: Path):
    spec = team.spec(8)
    copy = str(tmp_path / "copy.yaml")
    shutil.copy(spec, copy)
    assert team.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    code, _, err = team.cli("revoke", copy, "--by", "bob", "--reason", "no")
    assert code == 3
    assert "copy.yaml: no approval of this version" in err
    assert team.cli("verify", spec, "--dry-run")[0] == 0


@pytest.fixture
def outside(team: Team, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """A repository whose monthly budget of 100 USD holds a launch of 80, and a directory
    outside it: a 40 USD spec breaks the budget, as judged from the repository."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("BUDGET_GATE_LAUNCH_KEY", raising=False)
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    at_root = Team(root, "", team.capsys, team.name, team.cost_center)
    at_root.policy(trials_over=40, limits=", monthly_budget: 100")
    monkeypatch.chdir(root)
    assert main(["verify", at_root.spec(8, file="big.yaml")]) == 0  # commits 80
    spec = at_root.spec(4, file="small.yaml")  # 40 USD: over what is left
    assert main(["verify", spec, "--dry-run"]) == 1
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    team.capsys.readouterr()
    return str(root / spec), elsewhere


def test_verify_from_outside_the_repository_reads_its_ledger(
    outside: tuple[str, Path], capsys: pytest.CaptureFixture[str]
):
    """Run from another directory, verify judged the repository's spec by the repository's
    policies (found from the spec) against an empty ledger in the current directory: the
    month read as empty, the spec passed its budget (exit 0) and its launch went to a
    stray ledger no other command reads."""
    spec, elsewhere = outside
    code = main(["verify", spec])
    out, err = capsys.readouterr()
    assert code == 1, out + err
    assert "BG120" in out and "spent 80.00 USD" in out
    assert not (elsewhere / "mlflow.db").exists()


def test_the_launch_api_from_outside_the_repository_reads_its_ledger(
    outside: tuple[str, Path],
):
    spec, elsewhere = outside
    with pytest.raises(gate.PolicyViolation, match="BG120"):
        gate.require_approval(spec)
    assert not (elsewhere / "mlflow.db").exists()


def _repo_and_elsewhere(
    team: Team, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, str, Path]:
    """A repository with the team's policies and an 80 USD spec that needs an approval (its
    absolute path), and a directory outside it; no tracking URI in the environment."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("BUDGET_GATE_LAUNCH_KEY", raising=False)
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    at_root = Team(root, "", team.capsys, team.name, team.cost_center)
    at_root.policy()
    monkeypatch.chdir(root)
    spec = str(root / at_root.spec(8))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return root, spec, elsewhere


def test_a_guard_opened_from_outside_the_repository_refreshes_from_its_ledger(
    team: Team, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The guard's ceiling is re-read from the ledger its launch was cleared against."""
    root, spec, elsewhere = _repo_and_elsewhere(team, tmp_path, monkeypatch)
    monkeypatch.chdir(root)
    assert main(["approve", spec, "--by", "alice", "--reason", "ok"]) == 0
    monkeypatch.chdir(elsewhere)
    guard = gate.open_guard(spec)
    refresh = guard._refresh
    assert refresh is not None and refresh() == guard.ceiling
    assert not (elsewhere / "mlflow.db").exists()


def test_naming_the_policy_directory_from_outside_reads_its_ledger_too(
    outside: tuple[str, Path], capsys: pytest.CaptureFixture[str]
):
    """``--policy-dir /repo/policies`` kept the current directory's (empty) ledger: the
    budget passed (exit 0) and the launch went to a stray file, as if the fix were unsaid."""
    spec, elsewhere = outside
    policies = str(Path(spec).parent / "policies")
    assert main(["verify", spec, "--policy-dir", policies]) == 1
    assert "BG120" in capsys.readouterr().out
    with pytest.raises(gate.PolicyViolation, match="BG120"):
        gate.require_approval(spec, policy_dir=policies)
    assert not (elsewhere / "mlflow.db").exists()


def test_every_command_run_from_outside_uses_the_one_ledger_of_the_policies(
    team: Team, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """Only verify and the launch API read the repository's ledger from outside: approve
    wrote a stray one there (verify then refused, exit 2), and revoke from outside found no
    approval to revoke while verify from the same place cleared it."""
    root, spec, elsewhere = _repo_and_elsewhere(team, tmp_path, monkeypatch)
    monkeypatch.chdir(elsewhere)
    assert main(["approve", spec, "--by", "alice", "--reason", "ok"]) == 0
    assert main(["verify", spec, "--dry-run"]) == 0
    monkeypatch.chdir(root)
    assert main(["verify", spec, "--dry-run"]) == 0  # the same ledger from the root
    monkeypatch.chdir(elsewhere)
    assert main(["revoke", spec, "--by", "bob", "--reason", "stop"]) == 0
    assert main(["verify", spec, "--dry-run"]) == 2
    capsys.readouterr()
    assert not (elsewhere / "mlflow.db").exists() and (root / "mlflow.db").exists()
