"""A team is proven, not declared: issue 21 #9, #10 and #11 through the real entry points.

- #9: ``policies/nlp.yaml`` limits an experiment to 100 USD, ``policies/vision.yaml`` to
  100,000; ``experiments/nlp/a.yaml`` failed as ``team: nlp`` and passed as ``team:
  vision``. With ``owns.specs`` it is an error naming nlp, in ``check``, ``verify`` and
  ``gate.require_approval`` (the Action and SkyPilot: ``tests/github/test_ci_team_proof.py``,
  ``tests/skypilot_trust_cases.py``).
- #10: under a team-scoped monthly budget a spec failing BG120 passed once its ``team:``
  line was deleted; now BG206 refuses it.
- #11: with ``budget_scope: cost-center``, a made-up cost center read "0.00 of 1,000.00
  spent" and passed; now the policy must list its cost centers, and a made-up one fails.
The budget cases read a real MLflow ledger (``tests/mlflow_server.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import gate
from gate.cli import main
from gate.errors import PolicyViolation
from tests.conftest import ROOT
from tests.ledger_kit import Team

SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {{name: a, {team}labels: {{cost-center: cc-1}}}}
resources: {{accelerator: L4, gpus_per_trial: 1, precision: bf16}}
workload: {{max_epochs: 10, epoch_minutes: 6}}
search: {{strategy: random, max_trials: 20}}
quality_gate: [{{metric: val_f1, op: ">=", value: 0.8}}]
"""  # 20 trials × 1 GPU-h at 10 USD = 200 USD
DEFAULT = "apiVersion: budget-gate/v1\nkind: Policy\nprices: {overrides: {L4: {on-demand: 10}}}\n"
TEAM = "apiVersion: budget-gate/v1\nkind: Policy\nlimits: {{max_experiment_cost: {cap}}}\n{owns}"


def _repo(tmp_path: Path, *, owns: bool = True) -> Path:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "default.yaml").write_text(DEFAULT)
    for team, cap in (("nlp", 100), ("vision", 100_000)):
        owned = f"owns: {{specs: [experiments/{team}/**]}}\n" if owns else ""
        (policies / f"{team}.yaml").write_text(TEAM.format(cap=cap, owns=owned))
    (tmp_path / "experiments" / "nlp").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    return tmp_path


def _spec(root: Path, team: str | None) -> str:
    path = root / "experiments" / "nlp" / "a.yaml"
    path.write_text(SPEC.format(team=f"team: {team}, " if team else ""))
    return str(path)


def _check(root: Path, capsys, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["check", "--policy-dir", str(root / "policies"), *args])
    return code, capsys.readouterr().out


def _check_stdin(root: Path, text: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``budget-gate check -`` of ``text`` under the repository's policies, run in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "gate", "check", "--policy-dir", str(root / "policies"), "-"],
        input=text,
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )


def test_a_spec_cannot_borrow_a_richer_teams_policy(tmp_path, capsys):
    root = _repo(tmp_path)
    spec = _spec(root, "nlp")
    code, out = _check(root, capsys, spec)
    assert code == 1 and "error BG104 worst-case cost 200.00 USD exceeds" in out
    _spec(root, "vision")
    code, out = _check(root, capsys, spec)
    assert code == 1
    assert (
        "error BG204 experiments/nlp/a.yaml is not one of team vision's specs (owns.specs: "
        "experiments/vision/**); set metadata.team: nlp"
    ) in out
    assert "BG104" not in out  # vision's 100,000 USD cap applied: the team is what fails
    _spec(root, None)  # no team: the default policy has no cap at all
    code, out = _check(root, capsys, spec)
    assert code == 1
    assert "error BG204 experiments/nlp/a.yaml belongs to team nlp (owns.specs), but claims " in out


def test_a_backslash_in_a_file_name_is_not_a_separator(tmp_path, capsys):
    """``a\\..\\..\\vision\\b.yaml`` is one file in nlp's directory, not vision's ``b.yaml``."""
    root = _repo(tmp_path)
    spec = _spec(root, "vision")
    sneaky = root / "experiments" / "nlp" / "a\\..\\..\\vision\\b.yaml"
    sneaky.write_text(Path(spec).read_text())
    code, out = _check(root, capsys, str(sneaky))
    assert code == 1
    assert r"error BG204 experiments/nlp/a\..\..\vision\b.yaml is not one of team vision" in out


def test_a_spec_from_stdin_proves_no_team_wherever_it_is_checked(tmp_path, capsys):
    """Read from stdin, a spec lies in no directory: not vision's, even run from inside it."""
    root = _repo(tmp_path)
    text = Path(_spec(root, "vision")).read_text()
    (root / "experiments" / "vision").mkdir()
    for where in (root, root / "experiments" / "vision"):
        proc = _check_stdin(root, text, where)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "error BG204 <stdin> is not one of team vision's specs" in proc.stdout
    named = root / "experiments" / "nlp" / "<x>"  # a file so named is a file like any other
    named.write_text(text)
    code, out = _check(root, capsys, str(named))
    assert code == 1
    assert "error BG204 experiments/nlp/<x> is not one of team vision's specs" in out


def test_a_spec_with_no_path_in_the_repository_says_no_ownership_was_applied(tmp_path, capsys):
    """A team that owns no paths (``nlp`` here claims none) passed from stdin, from
    ``<(cat …)`` or from a copy elsewhere, the same bytes that drew BG204 at their path under
    vision's ``owns.specs``, and nothing said that no path was matched."""
    root = _repo(tmp_path)
    (root / "policies" / "nlp.yaml").write_text(TEAM.format(cap=100_000, owns=""))
    (root / "experiments" / "vision").mkdir()
    placed = root / "experiments" / "vision" / "a.yaml"
    placed.write_text(SPEC.format(team="team: nlp, "))
    code, out = _check(root, capsys, str(placed))
    assert code == 1 and "error BG204 experiments/vision/a.yaml belongs to team vision" in out
    elsewhere = tmp_path.parent / f"{tmp_path.name}-copy.yaml"  # outside the repository
    elsewhere.write_text(placed.read_text())
    code, out = _check(root, capsys, str(elsewhere))
    assert code == 0
    assert "note: owns.specs and waivers not applied: the spec was read from " in out
    assert "outside the repository" in out
    proc = _check_stdin(root, placed.read_text(), root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "owns.specs and waivers not applied: the spec was read from stdin" in proc.stdout
    code, out = _check(root, capsys, str(placed).replace("a.yaml", "../vision/a.yaml"))
    assert "owns.specs and waivers not applied" not in out  # a path in the repository


def test_a_copy_outside_named_by_a_relative_path_is_not_the_repositorys_file(
    tmp_path, capsys, monkeypatch
):
    """From a directory outside the repository, ``experiments/vision/a.yaml`` named a copy
    there, yet read as the repository's path: it drew BG204 as vision's (and would have taken
    a waiver of that file), with no word that it lies outside."""
    root = _repo(tmp_path)
    (root / "policies" / "nlp.yaml").write_text(TEAM.format(cap=100_000, owns=""))
    outside = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    (outside / "experiments" / "vision").mkdir(parents=True)
    copy = outside / "experiments" / "vision" / "a.yaml"
    copy.write_text(SPEC.format(team="team: nlp, "))
    monkeypatch.chdir(outside)
    code, out = _check(root, capsys, "experiments/vision/a.yaml")
    assert code == 0, out
    assert "BG204" not in out
    assert f"the spec was read from {copy.as_posix()}, outside the repository" in out


def test_every_launch_path_refuses_the_borrowed_team(tmp_path, capsys, monkeypatch):
    root = _repo(tmp_path)
    spec = _spec(root, "vision")
    monkeypatch.chdir(root)
    capsys.readouterr()
    assert main(["verify", "--policy-dir", "policies", "experiments/nlp/a.yaml"]) == 1
    assert (
        "BG204 experiments/nlp/a.yaml is not one of team vision's specs" in capsys.readouterr().out
    )
    with pytest.raises(PolicyViolation, match=r"BG204 .* set metadata\.team: nlp"):
        gate.require_approval(spec, policy_dir="policies")
    with pytest.raises(PolicyViolation, match="BG204"):
        gate.open_guard(spec, policy_dir="policies")


def test_without_ownership_the_team_is_taken_as_declared_and_said(tmp_path, capsys):
    root = _repo(tmp_path, owns=False)
    spec = _spec(root, "vision")
    code, out = _check(root, capsys, spec)
    assert code == 0  # today's behaviour, kept
    assert (
        "  note: team vision is taken as the spec declares it: no policy states which specs "
        "it owns (owns.specs in vision.yaml), so any spec may claim it"
    ) in out
    code, out = _check(root, capsys, "--format", "json", spec)
    assert '"notes": [\n        "team vision is taken as the spec declares it' in out


@pytest.fixture
def budget_team(team: Team) -> Team:
    team.policy(limits=", monthly_budget: 50")
    return team


def test_a_spec_without_its_team_spends_no_budget_no_more(budget_team):
    spec = Path(budget_team.spec(2))  # 20 USD
    budget_team.reconcile(budget_team.spec(1), "40")  # 40 of 50 spent: 20 does not fit
    code, out, _ = budget_team.cli("check", str(spec))
    assert code == 1 and "error BG120" in out
    spec.write_text(spec.read_text().replace(f"team: {budget_team.name}, ", ""))
    code, out, _ = budget_team.cli("check", str(spec))
    assert code == 1
    assert (
        "error BG206 metadata.team is missing, and the monthly budget is per team: the spec "
        f"would spend no budget — set it to one of {budget_team.name}"
    ) in out


def test_a_made_up_cost_center_gets_no_fresh_budget(team):
    limits = ", monthly_budget: 1000, budget_scope: cost-center"
    team.policy(limits=limits)
    code, _, err = team.cli("check", team.spec(1))
    assert code == 3
    assert "limits.budget_scope: cost-center needs the list of cost centers that have a " in err
    assert err.rstrip().endswith("list them: labels: {allowed: {cost-center: [cc-1042, ...]}}")
    team.policy(
        limits=limits, extra=f"labels: {{allowed: {{cost-center: [{team.cost_center}]}}}}\n"
    )
    team.reconcile(team.spec(1), "658.73")
    spec = Path(team.spec(1))
    code, out, _ = team.cli("check", str(spec))
    assert code == 0 and "658.73 USD of 1,000.00 USD spent" in out
    spec.write_text(spec.read_text().replace(team.cost_center, "cc-made-up-42"))
    code, out, _ = team.cli("check", str(spec))
    assert code == 1
    assert "0.00 USD of 1,000.00 USD spent" in out  # its own fresh budget, but:
    assert "error BG206 cost center 'cc-made-up-42' has no monthly budget: it is not one of " in out
    assert "error BG202 label cost-center='cc-made-up-42' is not one of " in out


@pytest.mark.parametrize(
    ("files", "said"),
    [
        ({"default.yaml": DEFAULT + "owns: {specs: ['**']}\n"},
         "default.yaml:4:1: the default policy cannot own specs: it is no team's"),
        ({"default.yaml": DEFAULT + "limits: {monthly_budget: 10, budget_scope: cost-center}\n"},
         "default.yaml:4:44: limits.budget_scope: cost-center needs the list of cost centers"),
        ({"default.yaml": DEFAULT, "nlp.yaml": TEAM.format(cap=1, owns="owns: {specs: ['#x']}")},
         "nlp.yaml:4:16: owns.specs[0]: '#x' is not a usable glob"),
    ],
)  # fmt: skip
def test_policy_check_refuses_ownership_and_budgets_it_cannot_prove(tmp_path, files, said):
    (tmp_path / "policies").mkdir()
    for name, text in files.items():
        (tmp_path / "policies" / name).write_text(text)
    proc = subprocess.run(
        [sys.executable, "-m", "gate", "policy", "check", "policies"],
        cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert said in proc.stderr and "Traceback" not in proc.stderr


def test_a_spec_naming_no_team_is_told_the_default_policy_judged_it(tmp_path, capsys):
    """Without ``team``, nlp's 100 USD cap was not applied and nothing said so (review 4 #3)."""
    root = _repo(tmp_path, owns=False)
    elsewhere = root / "experiments" / "misc"
    elsewhere.mkdir()
    spec = elsewhere / "a.yaml"
    spec.write_text(SPEC.format(team=""))
    code, out = _check(root, capsys, str(spec))
    assert code == 0 and "(policy: default)" in out
    assert (
        "  note: the spec names no team, so the default policy judged it, not a team's "
        "(nlp, vision): write team: NAME under metadata"
    ) in out
    code, out = _check(root, capsys, "--format", "json", str(spec))
    assert '"the spec names no team, so the default policy judged it' in out


def test_no_note_of_a_missing_team_where_no_team_has_a_policy(tmp_path, capsys):
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "default.yaml").write_text(DEFAULT)
    spec = tmp_path / "a.yaml"
    spec.write_text(SPEC.format(team=""))
    code, out = _check(tmp_path, capsys, str(spec))
    assert code == 0 and "names no team" not in out


def test_ownership_is_not_inherited(tmp_path, capsys):
    root = _repo(tmp_path)
    (root / "policies" / "nlp-research.yaml").write_text(
        "apiVersion: budget-gate/v1\nkind: Policy\nextends: nlp\n"
    )
    (root / "experiments" / "elsewhere").mkdir()
    other = root / "experiments" / "elsewhere" / "b.yaml"
    other.write_text(SPEC.format(team="team: nlp-research, "))
    code, out = _check(root, capsys, str(other))
    assert "error BG104 worst-case cost 200.00 USD exceeds" in out  # nlp's limits are inherited
    assert code == 1 and "BG204" not in out  # nlp's owns.specs are not
    assert "note: team nlp-research is taken as the spec declares it" in out


CLOUD_SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {{name: c, labels: {{cost-center: cc-1}}}}
resources: {{accelerator: H100, gpus_per_trial: 8, precision: bf16{cloud}}}
workload: {{max_epochs: 3, epoch_minutes: 20}}
search: {{strategy: random, max_trials: 8}}
quality_gate: [{{metric: val_f1, op: ">=", value: 0.8}}]
"""


@pytest.mark.parametrize(
    ("prices", "cloud", "said"),
    [
        ("prices: {cloud: aws}\n", ", cloud: lambda", "not at the policy's prices.cloud aws"),
        ("", ", cloud: lambda", "not at the dearest cloud's, the policy naming none"),
        ("prices: {cloud: aws}\n", ", cloud: aws", None),
        ("prices: {cloud: aws}\n", "", None),
    ],
)
def test_a_cloud_the_spec_names_over_the_policys_is_said(tmp_path, capsys, prices, cloud, said):
    """A cheaper cloud halves the price on the spec's word alone: the output says so."""
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "default.yaml").write_text(f"apiVersion: budget-gate/v1\nkind: Policy\n{prices}")
    spec = tmp_path / "c.yaml"
    spec.write_text(CLOUD_SPEC.format(cloud=cloud))
    main(["check", str(spec), "--policy-dir", str(policies), "--format", "json"])
    notes = json.loads(capsys.readouterr().out)["results"][0]["notes"]
    clouds = [n for n in notes if "resources.cloud" in n]
    if said is None:
        assert clouds == []
    else:
        assert clouds == [
            f"priced at lambda's catalog price as resources.cloud says, {said}"
            + (" (prices.cloud)" if not prices else "")
            + ": the spec's word, held at launch by the SkyPilot policy only"
        ]


def test_a_slashless_glob_takes_no_copy_outside_the_repository(tmp_path, capsys):
    """``owns.specs: ['*.yaml']`` matches a name at any depth: a copy outside, named by its
    absolute path, read as that team's spec, and drew its BG204."""
    root = _repo(tmp_path)
    (root / "policies" / "nlp.yaml").write_text(TEAM.format(cap=100_000, owns=""))
    (root / "policies" / "vision.yaml").write_text(
        TEAM.format(cap=100_000, owns="owns: {specs: ['*.yaml']}\n")
    )
    elsewhere = tmp_path.parent / f"{tmp_path.name}-slashless.yaml"
    elsewhere.write_text(SPEC.format(team="team: nlp, "))
    code, out = _check(root, capsys, str(elsewhere))
    assert code == 0, out
    assert "BG204" not in out and "outside the repository" in out
