"""``check --base-ref`` and ``diff`` against a real git repository made in the test."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gate.cli import main
from gate.errors import InputError
from gate.integrations.git.repo import list_base, read_base
from tests.conftest import ROOT

SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {name: NAME, labels: {cost-center: cc-1, environment: research, workload-type: hpo}}
resources: {accelerator: A100-80GB, gpus_per_trial: 1, precision: bf16}
workload: {max_epochs: 10, epoch_minutes: 6}
search:
  strategy: grid
  parameters: {lr: {values: VALUES}}
quality_gate: [{metric: val_f1, op: ">=", value: 0.8}]
"""
POLICY = """\
apiVersion: budget-gate/v1
kind: Policy
prices: {overrides: {A100-80GB: {on-demand: 2}}}
"""


def spec(name: str, values: int) -> str:
    return SPEC.replace("NAME", name).replace("VALUES", str(list(range(values))))


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    proc = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    return proc.stdout


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository whose last commit is the base; the work tree holds the change."""
    root = tmp_path / "repo"
    (root / "policies").mkdir(parents=True)
    (root / "policies" / "default.yaml").write_text(POLICY)
    specs = root / "specs"
    (specs / "team").mkdir(parents=True)
    (specs / "grow.yaml").write_text(spec("grow", 12))
    (specs / "same.yaml").write_text(spec("same", 2))
    (specs / "team" / "old.yaml").write_text(spec("old", 3))
    (specs / "broken.yaml").write_text("apiVersion: [unclosed\n")
    (specs / "named-gone.yaml").write_text(spec("gone", 1))
    (specs / "notes.txt").write_text("not a spec")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "base")
    (specs / "grow.yaml").write_text(spec("grow", 48))
    (specs / "team" / "old.yaml").unlink()
    (specs / "new.yaml").write_text(spec("new", 4))
    (specs / "broken.yaml").write_text(spec("fixed", 1))
    (specs / "named-gone.yaml").unlink()
    monkeypatch.chdir(root)
    return root


def check_json(capsys, *args: str) -> tuple[int, dict]:
    code = main(["check", "--policy-dir", "policies", "--format", "json", *args])
    return code, json.loads(capsys.readouterr().out)


def test_base_ref_prices_each_spec_at_the_base_and_explains_the_change(repo, capsys):
    code, doc = check_json(capsys, "--base-ref", "main", "specs", "specs/named-gone.yaml")
    assert code == 0
    assert [r["file"] for r in doc["results"]] == [
        "specs/broken.yaml",
        "specs/grow.yaml",
        "specs/new.yaml",
        "specs/same.yaml",
    ]
    diffs = {d["file"]: d for d in doc["diff"]["specs"]}
    assert doc["diff"]["base_ref"] == "main"
    assert {f: d["change"] for f, d in diffs.items()} == {
        "specs/broken.yaml": "unpriced",
        "specs/grow.yaml": "changed",
        "specs/new.yaml": "added",
        "specs/same.yaml": "unchanged",
        "specs/team/old.yaml": "deleted",
        "specs/named-gone.yaml": "deleted",
    }
    grow = diffs["specs/grow.yaml"]
    assert grow["explanation"] == ["grid grew from 12 to 48 trials (×4)"]
    assert (grow["scenarios"]["worst"]["base_cost"], grow["scenarios"]["worst"]["head_cost"]) == (
        "24.00",
        "96.00",
    )
    assert diffs["specs/team/old.yaml"]["scenarios"]["worst"]["base_cost"] == "6.00"
    broken = diffs["specs/broken.yaml"]
    assert broken["reason"] == "the base version is invalid"
    assert broken["problems"][0]["text"].startswith("specs/broken.yaml:1:")


def test_base_ref_in_the_markdown_comment_and_text(repo, capsys):
    assert main(["check", "--policy-dir", "policies", "--base-ref", "main", "--format",
                 "markdown", "specs"]) == 0  # fmt: skip
    body = capsys.readouterr().out
    assert "**Cost change:** changed since main" in body
    assert "| worst | 24.00 → 96.00 USD (+72.00 USD, ×4) | 12.0 → 48.0 (+36.0, ×4) |" in body
    assert "- grid grew from 12 to 48 trials (×4)" in body
    assert "### 🗑️ Specs deleted since main" in body
    assert "| specs/team/old.yaml | 6.00 USD | 3.0 | deleted |" in body
    assert main(["check", "--policy-dir", "policies", "--base-ref", "main", "specs"]) == 0
    text = capsys.readouterr().out
    assert "  changed since main\n    worst     cost 24.00 → 96.00 USD (+72.00 USD, ×4)" in text
    assert "specs/team/old.yaml: deleted: only in main" in text


def test_without_base_ref_there_is_no_diff(repo, capsys):
    code, doc = check_json(capsys, "specs/grow.yaml")
    assert (code, doc["diff"]) == (0, None)


def test_a_ref_that_does_not_exist_is_exit_3(repo, capsys):
    assert main(["check", "--policy-dir", "policies", "--base-ref", "nope", "specs"]) == 3
    assert "--base-ref nope: no such commit" in capsys.readouterr().err


def test_a_ref_cannot_smuggle_a_git_option(repo, capsys):
    assert main(["check", "--policy-dir", "policies", "--base-ref=--output=x", "specs"]) == 3
    assert not (repo / "x").exists()


def test_outside_a_repository_is_exit_3(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(spec("s", 1))
    # The policies outside any repository too (this checkout may have no branch main: a clone)
    policies = str(shutil.copytree(ROOT / "policies", tmp_path / "policies"))
    assert main(["check", "--policy-dir", policies, "--base-ref", "main", "s.yaml"]) == 3
    assert "not in a git work tree" in capsys.readouterr().err


def test_read_base_from_another_directory_and_by_absolute_path(repo, monkeypatch):
    monkeypatch.chdir(repo / "specs")
    blobs = read_base("main", ["grow.yaml", str(repo / "specs" / "team" / "old.yaml"), "new.yaml"])
    assert blobs["grow.yaml"] == spec("grow", 12).encode()
    assert blobs[str(repo / "specs" / "team" / "old.yaml")] == spec("old", 3).encode()
    assert blobs["new.yaml"] is None


def test_read_base_of_a_directory_is_none(repo):
    assert read_base("main", ["specs/team"]) == {"specs/team": None}


def test_list_base_spells_paths_under_the_directory_given(repo):
    assert sorted(list_base("main", "specs", (".yaml",))) == [
        "specs/broken.yaml",
        "specs/grow.yaml",
        "specs/named-gone.yaml",
        "specs/same.yaml",
        "specs/team/old.yaml",
    ]
    assert list_base("main", ".", (".txt",)) == ["specs/notes.txt"]


def test_a_path_outside_the_repository_is_an_input_error(repo, tmp_path):
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text("x")
    with pytest.raises(InputError, match="not in a git work tree"):
        read_base("main", [str(outside)])


def test_diff_command_between_two_files(repo, capsys):
    git(repo, "show", "main:specs/grow.yaml")  # the repository is real
    (repo / "base.yaml").write_text(spec("grow", 12))
    assert main(["diff", "--policy-dir", "policies", "base.yaml", "specs/grow.yaml"]) == 0
    assert capsys.readouterr().out == (
        "specs/grow.yaml: changed since base.yaml\n"
        "  worst     cost 24.00 → 96.00 USD (+72.00 USD, ×4); GPU-hours 12.0 → 48.0 (+36.0, ×4)\n"
        "  expected  cost 24.00 → 96.00 USD (+72.00 USD, ×4); GPU-hours 12.0 → 48.0 (+36.0, ×4)\n"
        "  - grid grew from 12 to 48 trials (×4)\n"
        "  policy: default\n"
    )


def test_diff_command_added_deleted_and_invalid(repo, capsys):
    args = ["diff", "--policy-dir", "policies"]
    assert main([*args, os.devnull, "specs/new.yaml"]) == 0
    assert capsys.readouterr().out.startswith(f"specs/new.yaml: new: not in {os.devnull}\n")
    assert main([*args, "--format", "json", "specs/same.yaml", os.devnull]) == 0
    assert json.loads(capsys.readouterr().out)["diff"]["change"] == "deleted"
    (repo / "bad.yaml").write_text("apiVersion: [unclosed\n")
    assert main([*args, "bad.yaml", "specs/same.yaml"]) == 3
    out, err = capsys.readouterr()
    assert "not compared with bad.yaml: the base version is invalid" in out
    assert err.startswith("bad.yaml:1:")
    assert main([*args, os.devnull, os.devnull]) == 3


def test_a_path_with_a_line_break_is_refused(repo):
    with pytest.raises(InputError, match="line break"):
        read_base("main", ["specs/a\nb.yaml"])


def test_git_missing_from_path_is_an_input_error(repo, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(InputError, match="git is not installed"):
        read_base("main", ["specs/grow.yaml"])


def test_a_named_spec_in_a_deleted_directory_is_deleted(repo, capsys):
    (repo / "specs" / "team").rmdir()
    code, doc = check_json(capsys, "--base-ref", "main", "specs/team/old.yaml")
    assert (code, doc["results"]) == (0, [])
    assert [(d["file"], d["change"]) for d in doc["diff"]["specs"]] == [
        ("specs/team/old.yaml", "deleted")
    ]


def test_a_directory_linked_into_another_repository_is_refused(repo, tmp_path):
    other = tmp_path / "other"
    (other / "specs").mkdir(parents=True)
    git(other, "init", "-q")
    (repo / "linked").symlink_to(other / "specs")
    with pytest.raises(InputError, match="outside the git work tree"):
        list_base("main", "linked", (".yaml",))


def test_base_ref_judges_by_the_policies_at_the_base_not_the_working_tree(repo, capsys):
    # The change also loosens the policy in the work tree; the base's policy still applies.
    (repo / "policies" / "default.yaml").write_text(
        POLICY + "limits: {max_experiment_cost: 1000000}\n"
    )
    git(repo, "add", "policies")
    (repo / "policies" / "default.yaml").write_text(POLICY.replace("on-demand: 2", "on-demand: 0"))
    _, doc = check_json(capsys, "--base-ref", "main", "specs/grow.yaml")
    grow = doc["results"][0]
    # 48 trials × 1 GPU × 1 h × 2 USD at the base's price, not 0 USD from the work tree.
    assert grow["estimate"]["worst"]["cost"] == "96.00"


def test_base_ref_without_policies_at_the_base_is_an_input_error(repo, capsys):
    git(repo, "rm", "-q", "-r", "--cached", "policies")
    git(repo, "commit", "-q", "-m", "no policies")
    code = main(["check", "--policy-dir", "policies", "--base-ref", "main", "specs/grow.yaml"])
    assert code == 3
    assert "no policies in policies at main" in capsys.readouterr().err
