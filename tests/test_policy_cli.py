"""No silent way around the gate (issue 11, items 1, 2, 3, 5): the real CLI in a subprocess.

Each test builds a small repository in ``tmp_path`` (policies/, experiments/), runs
``python -m gate`` there as a user would, and reads what it printed and how it exited.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT
from tests.signing_kit import Keys

SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata:
  name: tiny
  team: TEAM
resources: {accelerator: L4, gpus_per_trial: 1, precision: bf16}
workload: {max_epochs: 10, epoch_minutes: 6}
search: {strategy: random, max_trials: 2}
quality_gate: [{metric: val_f1, op: ">=", value: 0.8}]
"""
NO_TEAM = SPEC.replace("  team: TEAM\n", "")
DEFAULT = """\
apiVersion: budget-gate/v1
kind: Policy
prices: {overrides: {L4: {on-demand: 1}}}
limits: {max_experiment_cost: 1}
"""
ATLAS = "apiVersion: budget-gate/v1\nkind: Policy\nlimits: {max_trial_hours: 20}\n"


def gate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m gate ARGS`` in ``cwd``, with this checkout importable."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("MLFLOW_TRACKING_URI", None)
    proc = subprocess.run(
        [sys.executable, "-m", "gate", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc


def repo(tmp_path: Path, files: dict[str, str], *, git: bool = False) -> Path:
    """Write ``files`` under ``tmp_path/repo`` (optionally a git work tree) and return it."""
    root = tmp_path / "repo"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if git:
        subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=30)
    return root


# --- item 1: an unknown team is never silent --------------------------------------------------


def test_a_typo_of_a_known_team_is_an_error_another_team_a_warning(tmp_path: Path) -> None:
    # issue 22: `team: nlpp` with --fail-on error (the pre-commit hook) passed
    cheap = DEFAULT.replace("max_experiment_cost: 1", "max_experiment_cost: 100")
    root = repo(
        tmp_path,
        {
            "policies/default.yaml": cheap,
            "policies/atlas.yaml": ATLAS,
            "experiments/x.yaml": SPEC.replace("TEAM", "atlsa"),
            "experiments/y.yaml": SPEC.replace("TEAM", "zebra"),
        },
    )
    proc = gate("check", "--fail-on", "error", "experiments/x.yaml", cwd=root)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # one swap from atlas: an error
    assert (
        "experiments/x.yaml:5:9: error BG203 team 'atlsa' has no policy file (atlsa.yaml): "
        "the default policy applies — did you mean 'atlas'?"
    ) in proc.stdout
    assert "(policy: default)" in proc.stdout
    far = gate("check", "--fail-on", "error", "experiments/y.yaml", cwd=root)
    assert far.returncode == 0, far.stdout + far.stderr  # close to no known team: a warning
    assert "warn BG203 team 'zebra' has no policy file (zebra.yaml)" in far.stdout


def test_unknown_team_is_an_error_once_the_policy_lists_its_teams(tmp_path: Path) -> None:
    listed = DEFAULT.replace("max_experiment_cost: 1", "max_experiment_cost: 100")
    root = repo(
        tmp_path,
        {
            "policies/default.yaml": listed + "teams: [nlp, speech]\n",
            "policies/atlas.yaml": ATLAS,
            "experiments/typo.yaml": SPEC.replace("TEAM", "atlsa"),
            "experiments/nlp.yaml": SPEC.replace("TEAM", "nlp"),
        },
    )
    proc = gate("check", "experiments/typo.yaml", cwd=root)
    assert proc.returncode == 1
    assert "error BG203 team 'atlsa' has no policy file (atlsa.yaml) and is not in the" in (
        proc.stdout
    )
    assert "did you mean 'atlas'?" in proc.stdout
    known = gate("check", "experiments/nlp.yaml", cwd=root)
    assert known.returncode == 0 and "BG203" not in known.stdout  # listed: default on purpose


# --- item 2: default is the implicit base; extends: none is reported ---------------------------


def test_team_policy_without_extends_keeps_the_default_limits(tmp_path: Path) -> None:
    root = repo(
        tmp_path,
        {
            "policies/default.yaml": DEFAULT,
            "policies/atlas.yaml": ATLAS,  # no extends:
            "experiments/x.yaml": SPEC.replace("TEAM", "atlas"),
        },
    )
    proc = gate("check", "experiments/x.yaml", cwd=root)
    assert proc.returncode == 1
    assert "(policy: atlas ← default)" in proc.stdout
    assert "error BG104 worst-case cost 2.00 USD exceeds max_experiment_cost 1.00 USD" in (
        proc.stdout
    )


@pytest.mark.parametrize("name", ["atlas.yml", "atlas.YAML", "Atlas.yaml"])
def test_a_team_policy_under_another_file_name_is_an_error_not_ignored(
    tmp_path: Path, name: str
) -> None:
    """Only ``atlas.yaml`` is read: ``atlas.yml`` silently left the team on the default."""
    files = {"policies/default.yaml": DEFAULT}
    files |= {f"policies/{name}": ATLAS, "experiments/x.yaml": SPEC.replace("TEAM", "atlas")}
    root = repo(tmp_path, files)
    said = f"policies/{name}: not read — a policy file is named <team>.yaml"
    for command in (["check", "experiments/x.yaml"], ["policy", "check"]):
        proc = gate(*command, cwd=root)
        assert proc.returncode == 3, proc.stdout
        assert said in proc.stdout + proc.stderr
        assert "rename it to atlas.yaml" in proc.stdout + proc.stderr


def test_extends_none_leaves_default_and_says_so(tmp_path: Path) -> None:
    solo = ATLAS.replace("kind: Policy\n", "kind: Policy\nextends: none\n")
    solo += "prices: {overrides: {L4: {on-demand: 1}}}\n"
    root = repo(
        tmp_path,
        {
            "policies/default.yaml": DEFAULT,
            "policies/atlas.yaml": solo,
            "experiments/x.yaml": SPEC.replace("TEAM", "atlas"),
        },
    )
    proc = gate("check", "experiments/x.yaml", cwd=root)
    assert proc.returncode == 0, proc.stdout
    assert "BG104" not in proc.stdout  # the default's limit really is gone ...
    assert (
        "policies/atlas.yaml:3:10: warn BG903 policy atlas says extends: none: the default "
        "policy's limits, prices and approvers do not apply"
    ) in proc.stdout  # ... and the output says so
    listed = gate("policy", "check", cwd=root)
    assert listed.returncode == 0
    assert "policies/atlas.yaml: ok (atlas)" in listed.stdout
    assert "note: policies/atlas.yaml:3:10: extends: none" in listed.stdout


# --- item 3: waiver globs match the path from the repository root -----------------------------

WAIVED = DEFAULT + (
    "waivers:\n"
    "  - {rule: BG104, specs: 'experiments/cifar10-*.yaml', reason: board approved, "
    "expires: 2099-12-31}\n"
)


@pytest.mark.parametrize("git", [True, False], ids=["git-top-level", "policy-dir-parent"])
def test_waiver_applies_however_the_path_is_spelled(tmp_path: Path, git: bool) -> None:
    root = repo(
        tmp_path,
        {
            "policies/default.yaml": WAIVED,
            "experiments/cifar10-a.yaml": NO_TEAM,
            "experiments/deep/cifar10-b.yaml": NO_TEAM,
        },
        git=git,
    )
    spec = root / "experiments" / "cifar10-a.yaml"
    spellings = [
        (root, ["experiments/cifar10-a.yaml"]),
        (root, ["./experiments/cifar10-a.yaml"]),
        (root, [str(spec)]),
        (root / "experiments", ["--policy-dir", "../policies", "cifar10-a.yaml"]),
        (tmp_path, ["--policy-dir", str(root / "policies"), str(spec)]),
    ]
    for cwd, args in spellings:
        proc = gate("check", *args, cwd=cwd)
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
        assert "(waived: board approved)" in proc.stdout
    deeper = gate("check", "experiments/deep/cifar10-b.yaml", cwd=root)
    assert deeper.returncode == 1  # * stays in one directory
    assert "error BG104" in deeper.stdout


def test_launch_api_applies_the_waiver_to_an_absolute_path(tmp_path: Path) -> None:
    root = repo(
        tmp_path,
        {"policies/default.yaml": WAIVED, "experiments/cifar10-a.yaml": NO_TEAM},
        git=True,
    )
    script = (
        "import gate, sys\n"
        "cleared = gate.require_approval(sys.argv[1], policy_dir=sys.argv[2])\n"
        "print('cleared', [f.waived_by for f in cleared.result.findings])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    spec, policies = root / "experiments" / "cifar10-a.yaml", root / "policies"
    proc = subprocess.run(
        [sys.executable, "-c", script, str(spec), str(policies)],
        cwd=root / "experiments",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "cleared ['board approved']" in proc.stdout


# --- item 5: policy check and policy test ------------------------------------------------------


def test_policy_check_finds_a_broken_policy_no_spec_uses(tmp_path: Path) -> None:
    root = repo(
        tmp_path,
        {
            "policies/default.yaml": DEFAULT + "severity: {BG999: error}\n",
            "policies/nlp.yaml": ATLAS.replace("max_trial_hours: 20", "max_trial_hours: -1"),
            "policies/tests/ignored.yaml": "not: a policy\n",
        },
    )
    proc = gate("policy", "check", cwd=root)
    assert proc.returncode == 3
    lines = proc.stderr.splitlines()
    assert (
        "policies/default.yaml:5:12: severity: BG999 is not a rule — budget-gate rules lists "
        "the rule ids"
    ) in lines
    assert any(line.startswith("policies/nlp.yaml:3:27: limits.max_trial_hours") for line in lines)
    assert "tests/ignored.yaml" not in proc.stderr  # fixtures are not policies


def test_policy_check_of_a_file_or_a_missing_directory_says_what_to_pass(tmp_path: Path) -> None:
    root = repo(tmp_path, {"policies/default.yaml": DEFAULT})
    proc = gate("policy", "check", "policies/default.yaml", cwd=root)
    assert proc.returncode == 3
    assert proc.stderr == (
        "budget-gate: policy directory 'policies/default.yaml' is not a directory — pass the "
        "directory that holds it: policies\n"
    )
    os.mkfifo(root / "pipe")  # said "not found"
    proc = gate("policy", "check", "pipe", cwd=root)
    assert proc.returncode == 3 and "policy directory 'pipe' is not a directory" in proc.stderr
    proc = gate("policy", "check", "nowhere", cwd=root)
    assert proc.returncode == 3
    assert "(--policy-dir DIR, or policy check DIR)" in proc.stderr


def test_policy_test_reports_mismatches_and_unfired_rules(tmp_path: Path) -> None:
    good = NO_TEAM + "expect: {verdict: violation, rules: [BG104]}\n"
    wrong = NO_TEAM + "expect: {verdict: pass, rules: []}\n"
    root = repo(
        tmp_path,
        {
            "policies/default.yaml": DEFAULT,
            "policies/tests/over.yaml": good,
            "policies/tests/wrong.yaml": wrong,
        },
    )
    proc = gate("policy", "test", cwd=root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout.splitlines()
    assert "ok    policies/tests/over.yaml: violation [BG104]" in out
    assert "FAIL  policies/tests/wrong.yaml: expected pass [], got violation [BG104]" in out
    assert "2 fixtures: 1 passed, 1 failed" in out
    assert "  BG101 gpus-per-trial" in out  # listed: no fixture makes it fire
    (root / "policies/tests/wrong.yaml").unlink()
    assert gate("policy", "test", cwd=root).returncode == 0


def test_policy_test_runs_every_fixture_check_would_read_as_a_spec(tmp_path: Path) -> None:
    """A .json fixture (check reads .json specs) was skipped: "1 fixtures: 1 passed"."""
    good = NO_TEAM + "expect: {verdict: violation, rules: [BG104]}\n"
    wrong = json.dumps({**yaml.safe_load(NO_TEAM), "expect": {"verdict": "pass", "rules": []}})
    calibration = '{"apiVersion": "budget-gate/v1", "kind": "Calibration", "created": "2026-12-01"}'
    root = repo(
        tmp_path,
        {
            "policies/default.yaml": DEFAULT,
            "policies/tests/over.yaml": good,
            "policies/tests/upper.YML": good,
            "policies/tests/wrong.json": wrong,
            "policies/tests/calibration.json": calibration,  # what they are judged with
        },
    )
    proc = gate("policy", "test", cwd=root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout.splitlines()
    assert "ok    policies/tests/upper.YML: violation [BG104]" in out
    assert "FAIL  policies/tests/wrong.json: expected pass [], got violation [BG104]" in out
    assert "3 fixtures: 2 passed, 1 failed" in out


def test_policy_test_refuses_a_fixture_without_expect(tmp_path: Path) -> None:
    root = repo(
        tmp_path,
        {"policies/default.yaml": DEFAULT, "policies/tests/x.yaml": NO_TEAM},
    )
    proc = gate("policy", "test", cwd=root)
    assert proc.returncode == 3
    assert proc.stderr.startswith("policies/tests/x.yaml:1:1: ")
    assert "needs an expect: block" in proc.stderr


def test_the_projects_own_policies_pass_their_fixtures() -> None:
    proc = gate("policy", "test", cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    unfired = proc.stdout.split("rules no fixture makes fire:")[1].split()
    assert [w for w in unfired if w.startswith("BG")] == [
        "BG120",
        "BG121",
        "BG205",
        "BG206",
        "BG901",
        "BG902",
        "BG903",
    ]  # each needs a ledger, a pull request, a budget, waivers or extends: none


def test_policy_test_judges_waivers_at_the_fixtures_path_and_date(tmp_path: Path) -> None:
    waived = NO_TEAM + (
        "expect: {verdict: pass, rules: [BG104], path: experiments/cifar10-a.yaml, "
        "as_of: 2099-01-01}\n"
    )
    expired = NO_TEAM + (
        "expect: {verdict: violation, rules: [BG104, BG901], path: experiments/cifar10-a.yaml, "
        "as_of: 2100-01-01}\n"
    )
    elsewhere = NO_TEAM + "expect: {verdict: violation, rules: [BG104]}\n"
    root = repo(
        tmp_path,
        {
            "policies/default.yaml": WAIVED,
            "policies/tests/waived.yaml": waived,
            "policies/tests/expired.yaml": expired,
            "policies/tests/elsewhere.yaml": elsewhere,  # policies/tests/... is not waived
        },
    )
    proc = gate("policy", "test", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 fixtures: 3 passed, 0 failed" in proc.stdout
    assert "  BG902 unused-waiver\n" in proc.stdout  # waivers exist, but none went unused


def test_accelerator_names_no_spec_can_match_are_refused(tmp_path: Path) -> None:
    """A spec writes H200 as the catalog does: ``h200`` in approval.accelerators never fired
    its approval, and an ``a100-80gb`` override never priced an A100-80GB spec."""
    team = (
        "apiVersion: budget-gate/v1\nkind: Policy\n"
        "approval: {accelerators: [h200, B200, H100-80G, MI999]}\n"
        "prices: {overrides: {a100-80gb: {on-demand: 40}, MI999: {on-demand: 9}}, "
        "owned: {'H100 ': {purchase_price: 30000, amortization_years: 3, power_kw: 1, "
        "electricity_per_kwh: 0.1, "
        "utilization: 0.5}}}\n"
    )
    root = repo(tmp_path, {"policies/default.yaml": DEFAULT, "policies/nlp.yaml": team})
    proc = gate("policy", "check", cwd=root)
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[:3] == [
        "policies/nlp.yaml:3:27: approval.accelerators: 'h200' is no accelerator the catalog "
        "or the policy's prices name, so no spec ever matches it — did you mean 'H200'?",
        "policies/nlp.yaml:3:39: approval.accelerators: 'H100-80G' is no accelerator the "
        "catalog or the policy's prices name, so no spec ever matches it — did you mean "
        "'A100-80GB'?",
        "policies/nlp.yaml:4:22: prices.overrides: 'a100-80gb' is the catalog's 'A100-80GB' in "
        "another case or with spaces, so a spec that names A100-80GB is not priced by it — write "
        "A100-80GB",
    ]
    assert "prices.owned: 'H100 ' is the catalog's 'H100' in another case or with spaces" in (
        proc.stderr
    )
    assert "MI999" not in proc.stderr  # an accelerator the policy prices itself


def test_a_policy_in_another_currency_without_a_rate_is_said_and_refused_at_its_currency(
    tmp_path,
) -> None:
    """A red team's EUR policy passed policy check silently, then failed every spec at the
    spec's line; one that prices its accelerators itself must keep working."""
    policy = "apiVersion: budget-gate/v1\nkind: Policy\ncurrency: EUR\n"
    root = repo(tmp_path, {"policies/default.yaml": policy})
    (root / "spec.yaml").write_text((ROOT / "examples" / "cifar-sweep.yaml").read_text())
    proc = gate("policy", "check", "policies", cwd=root)
    assert proc.returncode == 0
    assert "note: currency EUR without prices.usd_exchange_rate" in proc.stdout
    proc = gate("check", "spec.yaml", cwd=root)
    assert proc.returncode == 3
    assert "policies/default.yaml:3:11: policy currency is EUR but catalog prices are in USD" in (
        proc.stdout + proc.stderr
    )
    priced = policy + "prices:\n  overrides:\n    A100-80GB: {on-demand: 3.10, spot: 1.20}\n"
    (root / "policies" / "default.yaml").write_text(priced)
    proc = gate("check", "spec.yaml", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3.10000 EUR/GPU-h for A100-80GB" in proc.stdout


def test_policy_check_reads_the_signers_file_every_ledger_reader_parses(
    tmp_path: Path, keys: Keys
) -> None:
    """A broken allowed_signers file passed ``policy check`` and failed every ledger read."""
    root = repo(tmp_path, {"policies/default.yaml": DEFAULT})
    signers = root / "policies" / "allowed_signers"
    signers.write_text(keys.signers("alice"), encoding="ascii")
    proc = gate("policy", "check", "policies", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert "policies/allowed_signers: ok (1 signer key)" in proc.stdout
    signers.write_bytes(b"\xef\xbb\xbf" + keys.signers("alice").encode())  # an editor's BOM
    proc = gate("policy", "check", "policies", cwd=root)
    assert proc.returncode == 3
    assert "policies/allowed_signers:1:1: the signers file is not ASCII" in proc.stderr
