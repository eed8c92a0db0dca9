"""The scheduled workflow that posts the monthly report: written by init, shown in the docs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gate.cli import main
from gate.commands.init import REPORT_WORKFLOW, planned_files

ROOT = Path(__file__).resolve().parent.parent


def test_init_report_workflow_writes_only_it_and_it_validates(tmp_path, capsys):
    assert main(["init", "--dir", str(tmp_path), "--report-workflow"]) == 0
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == [REPORT_WORKFLOW]
    path = tmp_path / REPORT_WORKFLOW
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            "vendor.github-workflows",
            str(path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    workflow = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert workflow[True]["schedule"] == [{"cron": "0 6 1 * *"}]  # YAML 1.1 reads on: as True
    steps = workflow["jobs"]["report"]["steps"]
    runs = "\n".join(step.get("run", "") for step in steps)
    assert "budget-gate report --issue" in runs and "gh " not in runs
    [post] = [step for step in steps if "budget-gate report --issue" in step.get("run", "")]
    assert post["env"]["GITHUB_TOKEN"] == "${{ github.token }}"
    # NOTE: a bare PyPI name installed whoever registers it, in a job that holds the
    # MLflow secrets and an issues: write token
    [install] = [line for line in runs.splitlines() if "pip install" in line]
    assert "budget-gate[mlflow,github] @ git+https://github.com/budget-gate/budget-gate@" in install
    assert workflow["jobs"]["report"]["permissions"] == {"contents": "read", "issues": "write"}
    assert workflow["concurrency"] == {"group": "budget-gate-report", "cancel-in-progress": False}
    assert main(["init", "--dir", str(tmp_path), "--report-workflow"]) == 3  # never overwrites


def test_init_with_kueue_too_writes_both_or_neither(tmp_path, capsys):
    """--kueue won: its manifests were written, --report-workflow dropped without a word."""
    from gate.commands.init import KUEUE_MANIFESTS

    assert main(["init", "--dir", str(tmp_path), "--report-workflow", "--kueue"]) == 0
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == sorted([REPORT_WORKFLOW, KUEUE_MANIFESTS])
    err = capsys.readouterr().err
    assert "kubectl apply" in err and "MLFLOW_TRACKING_URI" in err  # both next steps
    (tmp_path / REPORT_WORKFLOW).unlink()
    assert main(["init", "--dir", str(tmp_path), "--kueue", "--report-workflow"]) == 3
    assert not (tmp_path / REPORT_WORKFLOW).exists()  # one there: nothing is written


def test_plain_init_does_not_write_it():
    assert REPORT_WORKFLOW not in planned_files()


@pytest.mark.parametrize("page", ["README.md", "docs/report.md"])
def test_the_workflow_shown_is_the_one_init_writes(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    snippet = text.split("<!-- report-workflow:start -->\n```yaml\n", 1)[1].split("```\n", 1)[0]
    assert snippet == planned_files(report_workflow=True)[REPORT_WORKFLOW]
