"""A run's tagged spec path is its writer's word: only the repository's files are read.

``budget_gate.spec: /proc/kmsg`` (a file that never ends for root) hung ``report``, and any
file of the host was read whole; a copy of a spec outside the repository priced runs.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from gate.integrations.git.spec_versions import SpecVersions
from gate.spec.experiment import Experiment
from gate.spec.fingerprint import fingerprint
from gate.spec.loader import load_bytes
from gate.spec.validation import validate

SPEC = b"""\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {name: a, team: ml}
resources: {accelerator: L4, gpus_per_trial: 1, precision: bf16}
workload: {max_epochs: 10, epoch_minutes: 6}
search: {strategy: random, max_trials: 2}
"""


def _fingerprint(content: bytes) -> str:
    return fingerprint(validate(Experiment, load_bytes(content, "a.yaml")))


def test_only_files_inside_the_repository_are_read(tmp_path: Path) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "elsewhere"
    (repo / "experiments").mkdir(parents=True)
    outside.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "experiments" / "a.yaml").write_bytes(SPEC)
    (outside / "a.yaml").write_bytes(SPEC)
    (repo / "experiments" / "link.yaml").symlink_to(outside / "a.yaml")
    wanted = _fingerprint(SPEC)
    versions = SpecVersions(cwd=repo)
    assert versions.find("experiments/a.yaml", wanted) is not None
    assert versions.find(str(repo / "experiments" / "a.yaml"), wanted) is not None
    for named in (str(outside / "a.yaml"), "../elsewhere/a.yaml", "experiments/link.yaml"):
        assert versions.find(named, wanted) is None, named
    assert versions.find("/proc/self/status", wanted) is None  # read no further than a stat


def test_git_history_is_searched_for_a_bounded_number_of_paths(tmp_path: Path) -> None:
    """Runs tagged with 20,000 made-up paths cost the report a ``git log`` each (minutes):
    past the budget, no more paths are looked up, and the reader says so."""
    repo = tmp_path / "repo"
    (repo / "experiments").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "experiments" / "old.yaml").write_bytes(SPEC)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "spec"], check=True)
    subprocess.run([*git, "rm", "-q", "experiments/old.yaml"], check=True)
    subprocess.run([*git, "commit", "-qm", "gone"], check=True)
    wanted = _fingerprint(SPEC)
    versions = SpecVersions(cwd=repo, budget=2)
    assert versions.find("experiments/old.yaml", wanted) is not None  # in history: one path
    assert versions.find("experiments/made-up-1.yaml", wanted) is None
    assert not versions.exhausted
    assert versions.find("experiments/made-up-2.yaml", wanted) is None
    assert versions.exhausted
    assert versions.find("experiments/old.yaml", wanted) is not None  # looked up already


def test_a_backtest_past_the_budget_says_its_spec_was_not_searched_for(
    tmp_path: Path, monkeypatch
) -> None:
    """Past the budget, "no spec at its fingerprint" would be a guess, not a finding."""
    import argparse
    import datetime as dt

    from gate.calibrate.backtest import Replay
    from gate.commands.backtest import NO_SPEC, UNSEARCHED, CostBacktest
    from gate.commands.common import make_evaluator
    from gate.reconcile.actuals import RunFacts

    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.chdir(repo)
    evaluator = make_evaluator(argparse.Namespace(policy_dir=None))
    now = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
    costs = CostBacktest(evaluator, now, SpecVersions(cwd=repo, home=repo, budget=1))
    for n, wanted in ((1, NO_SPEC), (2, UNSEARCHED)):
        tags = {"budget_gate.spec": f"made-up-{n}.yaml", "budget_gate.fingerprint": f"f{n}"}
        costs.add(RunFacts(run_id=str(n), status="FINISHED", start_ms=0, end_ms=1, tags=tags), "e")
        unread = Replay("e", f"f{n}", (), calibration=None)  # type: ignore[arg-type]
        assert costs.case(unread) == wanted  # (no spec: its calibration is never read)
