"""``pip install .`` without the mlflow extra: every ledger command exits 3 and names the fix.

Each case runs the real CLI in a child process whose ``import mlflow`` fails, as it does in
a virtual environment without the extra: a finder at the front of ``sys.meta_path`` refuses
``mlflow`` and its submodules before any other finder is asked. Nothing of ours is patched.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.ledger_kit import Team

FIX = "install the ledger extra: pip install 'budget-gate[mlflow]'"
_NO_MLFLOW = """\
import sys

class NoMlflow:
    def find_spec(self, name, path=None, target=None):
        if name == "mlflow" or name.startswith("mlflow."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoMlflow())
"""
_CLI = _NO_MLFLOW + "from gate.cli import main\nsys.exit(main(sys.argv[1:]))\n"
_LAUNCH = (
    _NO_MLFLOW
    + """\
import gate
try:
    gate.require_approval(sys.argv[1], policy_dir=sys.argv[2])
except gate.MissingExtra as exc:
    print(type(exc).__name__, exc.exit_code, exc)
"""
)


def _run(code: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def bare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Team:
    """A team policy with a monthly budget (so even ``check`` reads the ledger); no server."""
    team = Team(tmp_path, "", capsys)
    team.policy(limits=", monthly_budget: 1000")
    return team


def test_the_child_really_cannot_import_mlflow(tmp_path):
    proc = _run(_NO_MLFLOW + "import mlflow\n", cwd=tmp_path)
    assert proc.returncode == 1
    assert "ModuleNotFoundError: No module named 'mlflow'" in proc.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["verify"],
        ["request-approval"],
        ["reconcile"],
        ["check"],
        ["approve", "--by", "alice", "--reason", "worth it"],
    ],
    ids=lambda c: c[0],
)
def test_ledger_commands_exit_3_and_name_the_extra(bare, tmp_path, command):
    spec = bare.spec(10)  # 10 trials > 4: needs approval, so verify reads the ledger
    if command[0] == "reconcile":
        # NOTE: a store that is not there is refused before anything (exit 3, no MLflow
        # needed to say so); one the SQL reader does not know (MLflow's tables, an older
        # schema's columns) is MLflow's client's to read
        import sqlite3

        db = sqlite3.connect(tmp_path / "mlflow.db")
        db.execute("CREATE TABLE experiments (experiment_id INTEGER, name TEXT)")
        db.execute("CREATE TABLE runs (run_uuid TEXT)")
        db.commit()
        db.close()
    proc = _run(_CLI, command[0], spec, "--policy-dir", bare.policy_dir, *command[1:], cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert FIX in proc.stderr
    assert "internal error" not in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_reconcile_of_a_store_that_is_not_there_says_so_without_mlflow(bare, tmp_path):
    proc = _run(_CLI, "reconcile", bare.spec(10), "--policy-dir", bare.policy_dir, cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert f"no MLflow store at {tmp_path / 'mlflow.db'}" in proc.stderr
    assert not (tmp_path / "mlflow.db").exists()


def test_check_without_a_budget_or_ledger_needs_no_mlflow(tmp_path):
    proc = _run(_CLI, "check", str(ROOT / "examples" / "cifar-sweep.yaml"), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert FIX not in proc.stderr


def test_require_approval_raises_the_projects_error_with_the_same_words(bare, tmp_path):
    spec = bare.spec(10)
    proc = _run(_LAUNCH, spec, bare.policy_dir, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("MissingExtra 3 ")
    assert FIX in proc.stdout


def test_a_tracking_server_is_read_and_written_without_mlflow(team, tmp_path):
    """Over HTTP the ledger needs no MLflow at all: approve records, verify then passes."""
    spec = team.spec(10)
    where = ("--policy-dir", team.policy_dir, "--tracking-uri", team.uri)
    approve = _run(_CLI, "approve", spec, *where, "--by", "alice", "--reason", "ok", cwd=tmp_path)
    assert approve.returncode == 0, approve.stderr
    verify = _run(_CLI, "verify", spec, *where, cwd=tmp_path)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "approved by alice" in verify.stdout
