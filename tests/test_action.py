"""The Action's files: action.yml, the workflows and the documented workflow stay valid and safe.

Validated with check-jsonschema's vendored GitHub schemas (offline), plus the rules the schema
cannot express: inputs reach scripts only through ``env:``, third-party actions are pinned by
commit, and every output the action declares is one ``budget-gate ci`` writes.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gate.ci.decisions import outputs
from tests.conftest import ROOT
from tests.reporters.sample import sample_report

ACTION = ROOT / "action.yml"
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
# The workflow is shown in the README and on the Action's page; the page documents the
# inputs and outputs.
PAGES = ("README.md", "docs/github-action.md")
ACTION_PAGE = (ROOT / "docs" / "github-action.md").read_text(encoding="utf-8")
SNIPPETS = [
    re.search(
        r"<!-- workflow:start -->\n```yaml\n(.*?)```\n<!-- workflow:end -->",
        (ROOT / page).read_text(encoding="utf-8"),
        re.S,
    )
    for page in PAGES
]


def check_jsonschema(schema: str, *files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
    )


def load(path: Path) -> dict[str, Any]:
    # NOTE: YAML 1.1 reads the key "on" as True; workflows are read with BaseLoader (strings).
    return yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.BaseLoader)


def test_action_validates_against_githubs_schema() -> None:
    proc = check_jsonschema("vendor.github-actions", ACTION)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_workflows_and_the_documented_workflows_validate(tmp_path: Path) -> None:
    assert all(SNIPPETS) and WORKFLOWS
    shown = []
    for index, snippet in enumerate(SNIPPETS):
        assert snippet is not None
        shown.append(tmp_path / f"documented-workflow-{index}.yml")
        shown[-1].write_text(snippet.group(1), encoding="utf-8")
    proc = check_jsonschema("vendor.github-workflows", *WORKFLOWS, *shown)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_schema_check_can_fail(tmp_path: Path) -> None:
    broken = tmp_path / "action.yml"
    broken.write_text(ACTION.read_text().replace("using: composite", "using: compost"))
    assert check_jsonschema("vendor.github-actions", broken).returncode == 1


def test_inputs_reach_scripts_only_through_env() -> None:
    action = load(ACTION)
    steps = action["runs"]["steps"]
    scripts = [s for s in steps if "run" in s]
    assert scripts and all(s["shell"] == "bash" for s in scripts)
    for step in scripts:
        assert "${{" not in step["run"], f"{step['name']} interpolates into its script"
    passed = " ".join(
        str(v) for s in steps for v in {**s.get("env", {}), **s.get("with", {})}.values()
    )
    for name in action["inputs"]:
        assert f"inputs.{name}" in passed, f"input {name} reaches no step"
    run = next(s for s in scripts if s.get("id") == "gate")
    assert run["env"]["GITHUB_TOKEN"] == "${{ inputs.github-token }}"
    assert '"$GITHUB_ACTION_PATH[$extras]"' in scripts[0]["run"]  # installs itself


def test_every_declared_output_is_written_by_budget_gate_ci() -> None:
    declared = load(ACTION)["outputs"]
    assert set(declared) == set(outputs(sample_report(), "r.json"))
    for name, output in declared.items():
        assert output["value"] == f"${{{{ steps.gate.outputs.{name} }}}}"
        assert f"| `{name}` |" in ACTION_PAGE


def test_the_action_page_documents_every_input() -> None:
    for name in load(ACTION)["inputs"]:
        assert f"| `{name}` |" in ACTION_PAGE


@pytest.mark.parametrize("path", [ACTION, *WORKFLOWS], ids=lambda p: p.name)
def test_actions_are_pinned_by_commit(path: Path) -> None:
    doc = load(path)
    jobs = doc["jobs"].values() if "jobs" in doc else [doc["runs"]]
    uses = [step["uses"] for job in jobs for step in job["steps"] if "uses" in step]
    assert uses
    for ref in uses:
        assert ref == "./" or re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", ref), ref


@pytest.mark.parametrize(
    "workflow",
    [
        WORKFLOWS[0].read_text(encoding="utf-8"),
        *(snippet.group(1) if snippet else "" for snippet in SNIPPETS),
    ],
    ids=["dogfood", "readme", "action-page"],
)
def test_workflow_triggers_permissions_and_concurrency(workflow: str) -> None:
    doc = yaml.load(workflow, Loader=yaml.BaseLoader)
    assert doc["on"] == {
        "pull_request": {"types": ["opened", "synchronize", "reopened", "labeled", "edited"]},
        "pull_request_review": {"types": ["submitted", "dismissed"]},
        "issue_comment": {"types": ["created", "edited", "deleted"]},
    }
    assert doc["permissions"] == {}
    (job,) = doc["jobs"].values()
    # NOTE: an ordinary edit (a title) must not start a run: in the concurrency group it
    # would cancel a waiting one, such as the run that withdraws an approval
    assert "(github.event.action != 'edited' || github.event.changes.base)" in " ".join(
        job["if"].split()
    )
    assert job["permissions"] == {
        "contents": "read",
        "pull-requests": "write",
        "issues": "write",
        "statuses": "write",
    }
    group = job["concurrency"]["group"]
    assert "github.event.pull_request.number" in group and "github.event.issue.number" in group
