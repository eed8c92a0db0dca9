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
