"""Where users stand (issue 22): a subdirectory, a typo, a cap, a tiny spec, the first ``init``.

Each test is a reproduction from the issue, run through the real CLI (``gate.cli.main`` in
the directory a user would be in) or the public Python API, in a repository built in
``tmp_path``.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

import gate
from gate.cli import main
from gate.cli.parser import EXITS, build_parser
from gate.errors import PolicyViolation
from gate.spec import globs
from tests.conftest import ROOT

LABELS = "{cost-center: cc-1, environment: research, workload-type: hpo, model: bert}"
SPEC = f"""\
apiVersion: budget-gate/v1
kind: Experiment
metadata:
  name: tiny
  team: nlp
  labels: {LABELS}
resources: {{accelerator: L4, gpus_per_trial: 1, precision: bf16}}
workload: {{max_epochs: 10, epoch_minutes: 6}}
search: {{strategy: random, max_trials: 2}}
quality_gate: [{{metric: val_f1, op: ">=", value: 0.8}}]
"""
DEFAULT = """\
apiVersion: budget-gate/v1
kind: Policy
prices: {overrides: {L4: {on-demand: 1}, A100-80GB: {spot: 1, on-demand: 3}}}
limits: {max_trial_hours: 100}
"""
NLP = "apiVersion: budget-gate/v1\nkind: Policy\nlimits: {max_experiment_cost: 1}\n"


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "repo"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=30)
    return root


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- item 2: the same verdict from any directory -------------------------------------------


def test_check_and_verify_in_a_subdirectory_judge_by_the_root_policies(
    tmp_path, monkeypatch, capsys
):
    # issue 22: `cd experiments && check` judged by the built-in default (BG104 lost)
    root = _repo(
        tmp_path,
        {
            "policies/default.yaml": DEFAULT,
            "policies/nlp.yaml": NLP,
            "experiments/tiny.yaml": SPEC,
        },
    )
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(root)
    code, top, _ = _cli(capsys, "check", "experiments/tiny.yaml")
    assert code == 1 and "error BG104" in top and "(policy: nlp ← default)" in top
    monkeypatch.chdir(root / "experiments")
    for command in ("check", "verify"):
        code, out, err = _cli(capsys, command, "tiny.yaml")
        assert code == 1, out + err
        assert "tiny.yaml — tiny (policy: nlp ← default)" in out
        assert "error BG104" in out and "built-in default" not in out + err
        assert "has no policy file" not in out  # the team's file is found


def test_verify_from_outside_the_repository_judges_by_the_specs_policies(
    tmp_path, monkeypatch, capsys
):
    """A launch script run from /tmp judged the repository's spec by the built-in default."""
    root = _repo(
        tmp_path,
        {"policies/default.yaml": DEFAULT, "policies/nlp.yaml": NLP, "experiments/t.yaml": SPEC},
    )
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(outside)
    code, out, err = _cli(capsys, "verify", "--dry-run", str(root / "experiments" / "t.yaml"))
    assert code == 1, out + err
    assert "(policy: nlp ← default)" in out and "error BG104" in out
    assert "built-in default" not in out + err


def test_check_judges_a_subfolder_projects_specs_by_its_policies_as_verify_does(
    tmp_path, monkeypatch, capsys
):
    """``init --dir a/b`` in a larger repository: from the root, check of a/b's specs found
    no policies/ and passed them under the built-in default, while verify failed them."""
    root = _repo(
        tmp_path,
        {
            "a/b/policies/default.yaml": DEFAULT,
            "a/b/policies/nlp.yaml": NLP,
            "a/b/experiments/t.yaml": SPEC,
            "x.yaml": SPEC,
        },
    )
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(root)
    verify = _cli(capsys, "verify", "--dry-run", "a/b/experiments/t.yaml")
    for argv in (["a/b/experiments/t.yaml"], ["a/b/experiments"]):
        code, out, err = _cli(capsys, "check", *argv)
        assert (code, "error BG104" in out) == (verify[0], True), out + err
        assert "built-in default" not in out + err
    code, out, err = _cli(capsys, "check", "a/b/experiments/t.yaml", "x.yaml")
    assert code == 3
    assert "the specs given lie under different policy directories" in err
    assert "the built-in default" in err


def test_require_approval_from_outside_the_repository_finds_its_policies(tmp_path, monkeypatch):
    root = _repo(
        tmp_path,
        {"policies/default.yaml": DEFAULT, "policies/nlp.yaml": NLP, "experiments/t.yaml": SPEC},
    )
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(tmp_path / "elsewhere")
    with pytest.raises(PolicyViolation, match="BG104"):  # not cleared by the built-in default
        gate.require_approval(root / "experiments" / "t.yaml")


def test_require_approval_in_a_subdirectory_finds_the_same_policies(tmp_path, monkeypatch):
    # issue 22: the Python API raised "policy directory not found" where the CLI judged
    root = _repo(
        tmp_path,
        {"policies/default.yaml": DEFAULT, "policies/nlp.yaml": NLP, "experiments/t.yaml": SPEC},
    )
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(root / "experiments")
    with pytest.raises(PolicyViolation, match="BG104"):
        gate.require_approval("t.yaml")


def test_policy_test_in_a_subdirectory_runs_the_root_fixtures(tmp_path, monkeypatch, capsys):
    fixture = SPEC.replace("  team: nlp\n", "") + "expect: {verdict: pass}\n"
    root = _repo(
        tmp_path,
        {"policies/default.yaml": DEFAULT, "policies/tests/ok.yaml": fixture, "src/x.py": ""},
    )
    monkeypatch.chdir(root / "src")
    code, out, err = _cli(capsys, "policy", "test")
    assert code == 0, out + err
    assert "ok.yaml" in out


def test_a_mistyped_policy_dir_offers_the_one_beside_it(tmp_path, monkeypatch, capsys):
    root = _repo(tmp_path, {"policies/default.yaml": DEFAULT, "experiments/t.yaml": SPEC})
    monkeypatch.chdir(root)
    code, _, err = _cli(capsys, "check", "--policy-dir", "polices", "experiments/t.yaml")
    assert code == 3
    assert err == ("budget-gate: policy directory 'polices' not found — did you mean 'policies'?\n")


# --- item 5: BG307 names the cap that binds and proposes the fix ---------------------------

LONG = f"""\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {{name: long, labels: {LABELS}}}
resources:
  accelerator: A100-80GB
  gpus_per_trial: 1
  capacity: spot
  precision: bf16
  checkpoint_every_minutes: 30
workload: {{max_epochs: 10, epoch_minutes: 300}}
search: {{strategy: random, max_trials: 2}}
stopping: {{max_trial_hours: 24}}
quality_gate: [{{metric: val_f1, op: ">=", value: 0.8}}]
"""


def test_bg307_names_max_trial_hours_when_it_binds_and_offers_to_raise_it(
    tmp_path, monkeypatch, capsys
):
    # issue 22: A100 spot, max_trial_hours 24, no max_trial_cost: BG307 named max_trial_cost
    root = _repo(tmp_path, {"policies/default.yaml": DEFAULT, "experiments/long.yaml": LONG})
    monkeypatch.chdir(root)
    code, out, _ = _cli(capsys, "check", "experiments/long.yaml")
    assert code == 1
    # 10 epochs × 300 min = 50 h, plus spot recompute: 0.01 preemptions an hour × 50 h ×
    # half a 30 min checkpoint interval = 0.125 h; 24 h buys 24 ÷ 5.0125 = 4.79 epochs
    [line] = [x for x in out.splitlines() if "BG307" in x]
    assert line == (
        "experiments/long.yaml:12:29: error BG307 no trial finishes its epochs: max_trial_hours "
        "24 h stops even the furthest one after 4.79 of 10 epochs (24.00 h held; a whole trial "
        "needs 50.13 h), so no finished model"
    )
    assert "max_trial_cost" not in out
    fixes = out.split(line, 1)[1].split("→", 1)[0]
    assert "  fix: stopping.max_trial_hours: 50.2 " in fixes  # 50.125 h rounded up


# --- item 6: words that agree with the numbers ---------------------------------------------


def _estimate_out(tmp_path, monkeypatch, capsys, spec: str, *extra: str) -> str:
    root = _repo(tmp_path, {"policies/default.yaml": DEFAULT, "experiments/s.yaml": spec})
    monkeypatch.chdir(root)
    code, out, err = _cli(capsys, "check", *extra, "experiments/s.yaml")
    assert code in (0, 1, 2), out + err
    return out


def test_a_cap_that_ends_trials_is_not_called_nothing_stopping_early(tmp_path, monkeypatch, capsys):
    spec = SPEC.replace("search:", "stopping: {max_trial_hours: 0.5}\nsearch:")
    out = _estimate_out(tmp_path, monkeypatch, capsys, spec)
    assert (
        "no early stopping: trials run until max_trial_hours stops them, before all 10 epochs"
        in out
    )
    assert "but a cap ends them" not in out and "nothing stops early: trials would" not in out


def test_early_stopping_past_the_last_epoch_says_every_trial_runs_them_all(
    tmp_path, monkeypatch, capsys
):
    # issue 22: "ends trials at epoch 3 instead of 3"
    spec = SPEC.replace("max_epochs: 10", "max_epochs: 3").replace(
        "search:", "stopping: {early_stopping: {monitor: val_loss, patience: 2}}\nsearch:"
    )
    out = _estimate_out(tmp_path, monkeypatch, capsys, spec)
    assert "instead of 3" not in out
    assert re.search(r"would end trials after epoch \d+, so every trial runs all 3 epochs", out)


def test_fractional_rung_counts_are_said_to_be_averages(capsys, monkeypatch):
    # issue 22: "rungs at 2/6/18 epochs with 40/13.3/6.0 trials"
    monkeypatch.chdir(ROOT)
    code, out, _ = _cli(
        capsys, "estimate", "--policy-dir", "policies", "examples/asha-bert-spot.yaml"
    )
    assert code == 0
    assert "rungs: 40 trials to epoch 2, 13.3 to epoch 6, 5.8 to epoch 18 (on average)" in out
    assert "/13.3/" not in out


def test_plans_that_cost_more_are_not_headed_cheaper(capsys, monkeypatch):
    # issue 22: Hyperband offered under "cheaper plans" at a higher cost
    monkeypatch.chdir(ROOT)
    argv = ["estimate", "--alternatives", "--policy-dir", "policies"]
    code, out, _ = _cli(capsys, *argv, "examples/asha-bert-spot.yaml")
    assert code == 0
    assert "other plans (expected / worst cost" in out and "cheaper plans" not in out
    assert re.search(r"Hyperband: [\d.,]+ USD / [\d.,]+ USD, costs [\d.,]+ USD", out)
    code, out, _ = _cli(capsys, *argv, "examples/cifar-sweep.yaml")
    assert "cheaper plans (expected / worst cost" in out and ", costs " not in out


def test_a_tiny_spec_shows_its_cost_not_zero(tmp_path, monkeypatch, capsys):
    # issue 22: "0.00 USD / 0.0 h" where reconcile shows 0.00276
    tiny = SPEC.replace("max_epochs: 10, epoch_minutes: 6", "max_epochs: 1, epoch_minutes: 0.1")
    out = _estimate_out(tmp_path, monkeypatch, capsys, tiny)
    # 2 trials × 0.1 min = 0.2 min = 0.00333 GPU-h at 1 USD/GPU-h, one after the other
    [worst] = [line for line in out.splitlines() if line.startswith("  worst")]
    assert " ".join(worst.split()) == "worst 2 0.00333 0.00333 USD 0.00167 USD 0.00333 h 0.00167 h"


def test_check_lists_its_assumptions_as_short_bullets(capsys, monkeypatch):
    # issue 22: check's "assumes" lines ran 600–900 characters
    monkeypatch.chdir(ROOT)
    code, out, _ = _cli(capsys, "check", "--policy-dir", "policies", "examples/")
    assert code in (1, 2, 3)
    assert "  assumes (both cases):\n    - " in out
    bullets = [line for line in out.splitlines() if line.startswith("    - ")]
    assert len(bullets) > 20
    assumes = [line for line in out.splitlines() if line.lstrip().startswith("assumes")]
    assert all(line.endswith(":") for line in assumes), assumes  # headings, nothing after
    # one assumption a bullet, as estimate prints them (the joined lines ran to 900)
    assert max(len(line) for line in bullets) < 450


def test_the_failure_rate_is_said_once_when_measured(tmp_path, monkeypatch, capsys):
    # issue 22: "5% of attempts fail … (measured failure rate 5%…)" in one line
    calibration = {
        "apiVersion": "budget-gate/v1",
        "kind": "Calibration",
        "created": "2026-12-01",
        "entries": [
            {
                "key": {"model": "bert", "accelerator": "L4", "gpus": 1, "precision": "bf16"},
                "runs": 20,
                "finished": 19,
                "failed": 1,
                "first": "2026-11-01",
                "last": "2026-11-30",
                "failure_rate": 0.05,
                "failure_point": 0.5,
            }
        ],
    }
    policy = DEFAULT + "reliability: {failure_rate: 0.1, max_retries: 2}\n"
    root = _repo(
        tmp_path,
        {
            "policies/default.yaml": policy,
            "policies/calibration.json": json.dumps(calibration),
            "experiments/s.yaml": SPEC.replace("team: nlp", "team: x"),
        },
    )
    monkeypatch.chdir(root)
    code, out, _ = _cli(capsys, "estimate", "experiments/s.yaml")
    assert code == 0, out
    for line in out.splitlines():
        assert len(re.findall(r"\b5(?:\.0+)? ?%", line)) <= 1, line
    assert "failed attempts stop 50% of the way through and are retried up to 2×" in out


# --- item 7: smaller breaks ----------------------------------------------------------------


def test_init_adds_mlflow_db_to_an_existing_gitignore_once(tmp_path, capsys):
    (tmp_path / ".gitignore").write_text("__pycache__/", encoding="utf-8")  # no newline
    code, _, err = _cli(capsys, "init", "--dir", str(tmp_path))
    assert code == 0, err
    assert (tmp_path / ".gitignore").read_text() == (
        "__pycache__/\n\n# budget-gate: the local ledger (MLflow's sqlite store)\n/mlflow.db\n"
    )
    assert f"added mlflow.db to {tmp_path / '.gitignore'}" in err
    assert (tmp_path / "policies" / "tests" / "sample-passes.yaml").is_file()
    code, out, err = _cli(capsys, "policy", "test", str(tmp_path / "policies"))
    assert code == 0, out + err


def test_the_workflow_init_writes_judges_yml_specs_too():
    # issue 22: the workflow's specs: dropped *.yml
    workflow = (ROOT / "gate" / "data" / "workflow.yml").read_text()
    [specs] = re.findall(r"^\s+specs: (.+)$", workflow, re.MULTILINE)
    patterns = specs.split()
    for path in ("experiments/a.yaml", "experiments/deep/b.yml", "experiments/C.YML"):
        assert globs.matches(patterns, path) and globs.is_spec_file(path), path


def test_tracking_uri_help_says_what_each_command_reads_there():
    # issue 22: calibrate and reconcile described --tracking-uri as the approvals ledger
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]

    def help_of(name: str) -> str:
        [action] = [a for a in commands[name]._actions if "--tracking-uri" in a.option_strings]
        return str(action.help)

    assert help_of("calibrate").startswith("MLflow tracking store of the training runs to learn")
    assert help_of("reconcile").startswith("MLflow tracking store of the training runs, where")
    assert help_of("approve").startswith("MLflow tracking store of the approvals ledger")
    assert "ledger" not in help_of("calibrate")


@pytest.mark.parametrize(
    ("argv", "codes"),
    [
        (["estimate"], "exit codes: 0 pass, 3 invalid input"),
        (["check"], "exit codes: 0 pass, 1 policy violation, 2 approval required, 3 invalid "),
        (["revoke"], "exit codes: 0 pass, 3 invalid input, 4 backend failure"),
        (["policy", "check"], "exit codes: 0 pass, 3 invalid input"),
    ],
)
def test_each_help_lists_only_the_exit_codes_its_command_returns(argv, codes, capsys):
    # issue 22: every --help ended with all five exit codes
    assert main([*argv, "--help"]) == 0
    epilog = " ".join(capsys.readouterr().out.split()).rsplit("exit codes: ", 1)[1]
    assert f"exit codes: {epilog}".startswith(codes)


def test_every_command_has_an_entry_in_the_exit_code_table():
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert set(commands) <= set(EXITS)
    assert all(0 in codes and 3 in codes for codes in EXITS.values())  # pass and bad input


def test_expiry_date_parsing_is_the_end_of_that_day_in_utc():
    from gate.ledger.records import expiry_after

    now = dt.datetime(2026, 12, 2, 1, 0, tzinfo=dt.timezone.utc)
    end = expiry_after("2026-12-31", now)
    assert end == dt.datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=dt.timezone.utc)
    assert expiry_after("14d", now) == now + dt.timedelta(days=14)


def test_no_fix_is_proposed_for_a_finding_an_approval_covers():
    from gate.ledger.records import LedgerRecord, RecordKind
    from gate.policy.findings import Edit, Finding, Fix
    from gate.policy.model import Severity
    from gate.policy.verdict import apply_approval

    fix = Fix(edits=(Edit(("search", "max_trials"), 4),), summary="4 trials")
    finding = Finding("BG110", Severity.APPROVAL, "8 trials", None, fixes=(fix,))
    approval = LedgerRecord(
        kind=RecordKind.APPROVAL,
        spec="s.yaml",
        fingerprint="sha256:0",
        experiment="ledger",
        recorded_at=dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc),
        currency="USD",
        by="alice",
    )
    [covered] = apply_approval([finding], approval)
    assert covered.approved_by == "alice" and covered.fixes == ()


def test_no_advice_on_failed_runs_when_none_failed():
    from gate.reconcile.waste import FAILED_ADVICE, RunWaste, failed_waste

    def run(failed: bool) -> RunWaste:
        return RunWaste(failed, Decimal(1), Decimal(1), 10, None, Decimal(0), Decimal(0), None)

    none = failed_waste([run(False)] * 12, 0, 0)
    assert none.advice == "none: no run failed or was killed"
    assert none.cost == 0 and "0 of 12 run(s) failed" in none.detail
    assert failed_waste([run(True), run(False)], 0, 0).advice == FAILED_ADVICE


def test_the_user_docs_cite_no_file_outside_the_repository():
    # issue 22: the README cited a DOMAIN.md section that is not in the repository
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    citing = [page.name for page in pages if "DOMAIN.md" in page.read_text(encoding="utf-8")]
    assert citing == []


def test_a_backtest_of_one_experiment_says_why_nothing_is_scored_yet():
    # issue 22: `--backtest` with one experiment printed two tables of dashes
    from collections import Counter

    from gate.calibrate.backtest import Case, CostCase
    from gate.commands.backtest import Backtest, render

    only = CostCase("e", "sha256:0", "s.yaml", "nlp", Decimal(10), None, (Decimal(9), Decimal(12)))
    epoch = Case("e", "nlp", 5.0, None, (4.0, 6.0))
    text = render(Backtest(1, (only,), (epoch,), Counter(), 5))
    assert "---" not in text and "MAPE" not in text
    why = "nothing to score yet: each experiment is scored against the calibration"
    assert text.count(why) == 2
    assert "(1 experiment, none with earlier runs of its key)" in text


def test_the_pull_request_comment_heads_costlier_plans_other_plans(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    argv = ["check", "--format", "markdown", "--policy-dir", "policies"]
    code, out, _ = _cli(capsys, *argv, "examples/asha-bert-spot.yaml")
    assert code == 2  # the comment prices other plans for a spec that needs approval
    assert "<summary>Other plans</summary>" in out and "Cheaper plans" not in out


def test_run_tags_name_the_spec_by_its_path_in_the_repository(tmp_path, monkeypatch):
    """A launcher in experiments/ tagged sweep.yaml, which the report could not find."""
    from gate import tracking

    root = _repo(tmp_path, {"policies/default.yaml": DEFAULT, "experiments/t.yaml": SPEC})
    monkeypatch.chdir(root / "experiments")
    assert tracking.run_tags("t.yaml", trial_id=3)[tracking.SPEC] == "experiments/t.yaml"
    monkeypatch.chdir(tmp_path)
    assert tracking.run_tags("repo/experiments/t.yaml")[tracking.SPEC] == "experiments/t.yaml"


def test_verify_names_a_missing_or_foreign_policy_dir_not_a_nested_repository(
    tmp_path, monkeypatch, capsys
):
    """--policy-dir /nonexist, or a folder outside the spec's repository, was reported as the
    spec lying in "a nested git repository or submodule"."""
    root = _repo(
        tmp_path,
        {"policies/default.yaml": DEFAULT, "policies/nlp.yaml": NLP, "experiments/t.yaml": SPEC},
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "default.yaml").write_text(DEFAULT, encoding="utf-8")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(root)
    missing = str(tmp_path / "nonexist")
    code, _, err = _cli(
        capsys, "verify", "--dry-run", "experiments/t.yaml", "--policy-dir", missing
    )
    assert code == 3 and f"policy directory {missing!r} not found" in err
    with pytest.raises(gate.InputError, match="not found"):
        gate.require_approval(root / "experiments" / "t.yaml", policy_dir=missing)
    code, _, err = _cli(
        capsys, "verify", "--dry-run", "experiments/t.yaml", "--policy-dir", str(elsewhere)
    )
    assert code == 3, err
    assert f"lies in the git repository {root}, and the policies in use lie outside it" in err
    assert "nested git repository" not in err
