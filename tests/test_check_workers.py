"""``check`` over many specs in worker processes gives what one process gives, byte for byte.

The specs are variants of the examples (some invalid, some over their limits, with fixes),
checked with ``--jobs 1`` and ``--jobs 3`` in real processes; a broken policy, a bad spec
and a policy with a monthly budget (whose ledger only the parent may read) must come out
the same too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from gate.commands.workers import (
    _FRAME,
    MAX_BATCHES,
    MIN_PER_WORKER,
    _Lost,
    _Worker,
    batch_size,
    evaluate_all,
    workers_for,
)
from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="workers fork on Linux only")


def _specs(root: Path, count: int) -> None:
    """``count`` specs under experiments/vision: the examples, edited, one of them broken."""
    examples = [
        yaml.safe_load((ROOT / "examples" / name).read_text())
        for name in ("cifar-sweep.yaml", "imagenet-bruteforce.yaml", "llm-finetune-grid.yaml")
    ]
    folder = root / "experiments" / "vision"
    folder.mkdir(parents=True)
    for i in range(count):
        spec = examples[i % len(examples)]
        spec["metadata"]["name"] = f"spec-{i:03d}"
        spec["metadata"]["team"] = "vision"
        spec["workload"]["max_epochs"] = 10 + i
        text = yaml.safe_dump(spec, sort_keys=False)
        if i == count // 2:
            text = text.replace("max_epochs: ", "max_epochs: many ", 1)
        (folder / f"spec-{i:03d}.yaml").write_text(text)


def _check(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gate", "check", "experiments", "--policy-dir", "policies", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


@pytest.fixture
def batch(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "policies", tmp_path / "policies")
    _specs(tmp_path, 3 * MIN_PER_WORKER + 7)
    return tmp_path


@pytest.mark.parametrize("fmt", ["json", "text", "sarif"])
def test_workers_give_what_one_process_gives(batch, fmt):
    one = _check(batch, "--format", fmt, "--jobs", "1")
    three = _check(batch, "--format", fmt, "--jobs", "3")
    assert one.returncode == 3  # the broken spec: invalid input wins
    assert (three.returncode, three.stdout, three.stderr) == (
        one.returncode,
        one.stdout,
        one.stderr,
    )
    assert one.stdout.count("spec-") >= 3 * MIN_PER_WORKER


def test_a_broken_policy_fails_as_in_one_process(batch):
    policy = batch / "policies" / "vision.yaml"
    policy.write_text(policy.read_text().replace("max_trial_cost: 400", "max_trial_cost: lots"))
    one, three = _check(batch, "--jobs", "1"), _check(batch, "--jobs", "3")
    assert one.returncode == 3 and "vision.yaml" in one.stderr
    assert (three.returncode, three.stdout, three.stderr) == (
        one.returncode,
        one.stdout,
        one.stderr,
    )


def test_with_a_monthly_budget_the_ledger_is_read_once_in_one_process(batch):
    policy = batch / "policies" / "vision.yaml"
    policy.write_text(
        policy.read_text().replace("# monthly_budget: 60000", "monthly_budget: 60000")
    )
    uri = f"sqlite:///{batch / 'mlflow.db'}"
    one = _check(batch, "--jobs", "1", "--format", "json", "--tracking-uri", uri)
    three = _check(batch, "--format", "json", "--tracking-uri", uri)
    assert (three.returncode, three.stdout) == (one.returncode, one.stdout)
    assert '"ledger": {' in one.stdout


def test_a_spec_that_is_no_regular_file_is_read_in_one_process(batch):
    """A pipe reads once, and ``/dev/fd/4`` in a worker may be the workers' own pipe: read
    there, it hung the check (the worker waited on itself) or stole another's results."""
    folder = batch / "experiments" / "vision"
    for fd in range(3, 9):
        (folder / f"fd-{fd}.yaml").symlink_to(f"/dev/fd/{fd}")
    for name in ("stdin-a.yaml", "stdin-b.yaml"):
        (folder / name).symlink_to("/dev/stdin")
    spec = (ROOT / "examples" / "cifar-sweep.yaml").read_text()

    def check(jobs: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "gate", "check", "experiments", "--policy-dir", "policies",
             "--jobs", jobs, "--format", "json"],
            input=spec, capture_output=True, text=True, check=False, cwd=batch, timeout=120,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip

    one, three = check("1"), check("3")
    assert one.returncode == 3, one.stderr
    assert (three.returncode, three.stdout, three.stderr) == (
        one.returncode,
        one.stdout,
        one.stderr,
    )
    assert one.stdout.count("cifar10-resnet18-sweep") == 1  # the first link read stdin


def test_a_payload_cut_short_is_a_failed_worker_not_a_crash():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # a worker whose results another process half read
        os.write(write, _FRAME.pack(100) + b"\x80\x05garbage")
        os._exit(0)
    os.close(write)
    results = [None]
    with pytest.raises(_Lost):
        _Worker(pid, read).take(results, wait=True)


def test_a_garbled_message_is_a_lost_worker_not_a_crash():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write, _FRAME.pack(7) + b"garbage")
        os._exit(0)
    os.close(write)
    with pytest.raises(_Lost):
        _Worker(pid, read).take([None], wait=True)


def test_a_worker_killed_mid_way_makes_the_parent_evaluate_them_all():
    parent = os.getpid()
    paths = [f"p{i}" for i in range(8 * MIN_PER_WORKER)]

    def evaluate(path: str) -> str:
        time.sleep(0.002)
        if os.getpid() != parent and path == "p20":
            os.kill(os.getpid(), 9)  # a worker killed by the OOM killer, mid-batch
        return path.upper()

    assert evaluate_all(evaluate, paths, 3) == [p.upper() for p in paths]


def test_the_batches_fill_no_more_than_any_pipe_holds():
    assert batch_size(1000, 2) == 8  # 125 batches of 8: the processes end together
    assert batch_size(10, 2) == 1
    for count in (1, 999, 10**6):
        for workers in (2, 64, 4096):
            size = batch_size(count, workers)
            assert -(-count // size) <= MAX_BATCHES


def test_workers_only_for_enough_specs_each():
    assert workers_for(MIN_PER_WORKER * 2 - 1, None) == 1
    assert workers_for(MIN_PER_WORKER * 8, 3) == 3
    assert workers_for(MIN_PER_WORKER * 2, 8) == 2


def test_results_come_back_in_the_order_given():
    paths = [f"p{i}" for i in range(7 * MIN_PER_WORKER)]
    assert evaluate_all(str.upper, paths, 4) == [p.upper() for p in paths]

    def slow(path: str) -> tuple[str, int]:
        time.sleep(0.005)
        return path, os.getpid()

    done = evaluate_all(slow, paths, 4)
    assert [path for path, _ in done] == paths
    assert len({pid for _, pid in done}) == 4  # three workers and this process share the queue


def test_a_slow_process_claims_fewer_specs():
    """The specs are claimed, not dealt: a worker on costly specs leaves the rest to others."""
    parent = os.getpid()
    paths = [f"p{i}" for i in range(4 * MIN_PER_WORKER)]

    def evaluate(path: str) -> int:
        time.sleep(0.02 if os.getpid() != parent else 0.002)
        return os.getpid()

    pids = evaluate_all(evaluate, paths, 2)
    assert pids.count(parent) > len(paths) * 3 // 4


def test_a_worker_that_fails_makes_the_parent_raise_the_first_failure():
    paths = [f"p{i}" for i in range(4 * MIN_PER_WORKER)]

    def evaluate(path: str) -> str:
        if path in ("p5", "p9"):  # p5 falls to a worker, p9 to another (every 4th)
            raise ValueError(path)
        return path

    with pytest.raises(ValueError, match="p5"):
        evaluate_all(evaluate, paths, 4)


def test_jobs_must_be_a_whole_number_from_one(batch):
    proc = _check(batch, "--jobs", "0")
    assert proc.returncode == 3 and "--jobs" in proc.stderr


def test_a_report_through_a_pipe_is_whole_and_a_reader_that_leaves_early_is_no_crash(batch):
    """``check`` leaves without the interpreter's teardown once its output is flushed: every
    byte still reaches the reader, and one that stops reading (``| head``) gets no traceback."""
    argv = [sys.executable, "-m", "gate", "check", "experiments", "--policy-dir", "policies",
            "--format", "json"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    whole = subprocess.run(argv, capture_output=True, cwd=batch, env=env, check=False)
    assert whole.returncode == 3 and whole.stdout.endswith(b"}\n")
    assert len(json.loads(whole.stdout)["results"]) == 3 * MIN_PER_WORKER + 7
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=batch, env=env
    )
    assert proc.stdout is not None and proc.stderr is not None
    with proc.stderr:
        assert proc.stdout.read(10) == whole.stdout[:10]
        proc.stdout.close()  # the reader leaves
        assert b"Traceback" not in proc.stderr.read()
    assert proc.wait(timeout=60) in (3, 141)  # the verdict, or "no verdict written" (not 0)


def test_no_descriptor_left_for_a_worker_means_fewer_workers_not_a_crash(tmp_path):
    """At a high ``-j`` a pipe or a fork can fail (no descriptors, EAGAIN): the processes
    there are share the queue, and the results are the same."""
    script = tmp_path / "few_fds.py"
    script.write_text(
        "import os, resource, sys\n"
        "from gate.commands.workers import MIN_PER_WORKER, evaluate_all\n"
        "paths = [f'p{i}' for i in range(40 * MIN_PER_WORKER)]\n"
        "free = max(fd for fd in range(64) if os.path.exists(f'/proc/self/fd/{fd}')) + 6\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (free, free))\n"
        "done = evaluate_all(lambda p: (p.upper(), os.getpid()), paths, 40)\n"
        "assert [p for p, _ in done] == [p.upper() for p in paths]\n"
        "print(len({pid for _, pid in done}))\n"
    )
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert 1 <= int(proc.stdout) < 40  # some workers, not forty
