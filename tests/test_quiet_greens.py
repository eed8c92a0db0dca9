"""Issue 11 item 7: no quiet green — each case through the real CLI in a child process.

An empty directory, an abbreviated option, an approval ``check`` read but ignored, a second
ledger made by running from a subdirectory, and a reconcile that finds no runs of an edited
spec without saying where its runs went.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.ledger_kit import Team
from tests.reconcile_kit import GOOD, Lab

EXAMPLE = str(ROOT / "examples" / "cifar-sweep.yaml")


def cli(
    *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``budget-gate ARGS`` in a child process, without the caller's MLFLOW_TRACKING_URI."""
    base = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    base["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "gate", *args],
        cwd=cwd,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_an_empty_directory_is_invalid_unless_allowed(tmp_path):
    empty = tmp_path / "experiments"
    empty.mkdir()
    (empty / "notes.txt").write_text("not a spec\n", encoding="utf-8")
    proc = cli("check", str(empty), "--policy-dir", str(ROOT / "policies"))
    assert proc.returncode == 3
    assert f"no specs found in {empty}" in proc.stderr
    assert "--allow-empty" in proc.stderr
    assert "verdict: pass" not in proc.stdout

    allowed = cli("check", str(empty), "--allow-empty", "--policy-dir", str(ROOT / "policies"))
    assert allowed.returncode == 0, allowed.stderr
    assert "no specs — verdict: pass" in allowed.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["check", EXAMPLE, "--fail-on-w"],  # --fail-on error is a real option now
        ["check", EXAMPLE, "--quie"],
        ["check", EXAMPLE, "--policy", "policies"],
        ["estimate", EXAMPLE, "--sum"],
        ["reconcile", EXAMPLE, "--all-v"],
        ["ci", "--fail", "warn"],
    ],
    ids=lambda a: " ".join(a[2:] if a[0] != "ci" else a[1:]),
)
def test_abbreviated_options_are_usage_errors(args):
    proc = cli(*args)
    assert proc.returncode == 3, proc.stderr
    assert "unrecognized arguments" in proc.stderr


def test_check_counts_a_fresh_approval_whenever_it_reads_the_ledger(team: Team):
    team.policy(limits=", monthly_budget: 100000")
    spec = team.spec(10)  # 10 trials > 4: needs approval; the budget makes check read the ledger
    env = {"MLFLOW_TRACKING_URI": team.uri}
    before = cli("check", spec, "--policy-dir", team.policy_dir, env=env)
    assert before.returncode == 2, before.stderr
    assert team.cli("approve", spec, "--by", "alice", "--reason", "worth it")[0] == 0
    after = cli("check", spec, "--policy-dir", team.policy_dir, env=env)
    assert after.returncode == 0, after.stdout + after.stderr
    assert "approved by alice" in after.stdout


def test_the_default_ledger_is_at_the_repository_root(team: Team, tmp_path):
    repo = tmp_path / "repo"
    experiments = repo / "experiments"
    experiments.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    policies = repo / "policies"
    Path(team.policy_dir).rename(policies)
    spec = Path(team.spec(10)).rename(experiments / "sweep.yaml")

    approve = cli(
        "approve", "experiments/sweep.yaml", "--policy-dir", "policies",
        "--by", "alice", "--reason", "worth it", cwd=repo,
    )  # fmt: skip
    assert approve.returncode == 0, approve.stderr
    assert f"sqlite:///{repo.as_posix()}/mlflow.db" in approve.stdout

    verify = cli("verify", spec.name, "--policy-dir", "../policies", cwd=experiments)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert (repo / "mlflow.db").is_file()
    assert not (experiments / "mlflow.db").exists()


def test_reconcile_after_an_edit_names_the_other_versions_and_all_versions(lab: Lab):
    for trial in range(3):
        lab.log(trial=trial, start=trial, hours=1, metrics=GOOD)
    edited = Path(lab.spec).read_text(encoding="utf-8").replace("max_trials: 6", "max_trials: 7")
    Path(lab.spec).write_text(edited, encoding="utf-8")
    args = ("reconcile", lab.spec, "--policy-dir", lab.team.policy_dir)
    proc = cli(*args, "--tracking-uri", lab.team.uri, "--dry-run")
    assert proc.returncode == 1
    assert "no runs of this version" in proc.stderr
    assert "3 run(s) of 1 other version(s) are there — pass --all-versions" in proc.stderr

    every = cli(*args, "--tracking-uri", lab.team.uri, "--dry-run", "--all-versions")
    assert every.returncode == 0, every.stdout + every.stderr
    assert "no runs of this version" not in every.stderr


def test_fail_on_error_is_its_own_option_not_fail_on_warn():
    proc = cli("check", "--fail-on", "error", str(ROOT / "examples/llm-finetune-grid.yaml"))
    assert proc.returncode == 0, proc.stderr  # approvals do not fail under --fail-on error
    warned = cli("check", "--fail-on-warn", str(ROOT / "examples/llm-finetune-grid.yaml"))
    assert warned.returncode == 2
