"""A pull request that changes a W&B sweep, Katib Experiment, SkyPilot task or Hydra config.

The Action judges it as it judges a spec, through the real ``budget-gate ci`` against the
fake GitHub (ci_kit.py): a sticky comment that names the format and where each field came
from, the commit status, the label and the review request, the cost against the base
version of the same file, and an approval that clears it. The globs select the files
(the ``specs`` input); which globs match is the Action's own business, not tested here.

Each file runs trials of one H100 at the base policy's 8 USD/GPU-hour, 10 epochs of 3
minutes: 0.5 h and 4.00 USD a trial; 12 trials at the base, 36 at the head (above the
policy's approval trigger of 32 trials).
"""

from __future__ import annotations

import datetime as dt

import pytest

from gate.formats.model import Format
from gate.reporters.markup import escape
from tests.github.ci_kit import T0, PullRequestStory

HOUR = dt.timedelta(hours=1)
PER_TRIAL = 1 * 0.5 * 8  # GPUs × hours × USD/GPU-hour
BASE_TRIALS, HEAD_TRIALS = 12, 36

WANDB = """\
method: grid
parameters:
  lr: {values: [0.1, 0.01, 0.001]}
  batch_size: {values: [16, 32, 64, 128]}
  epochs: {value: 10}
# x-budget-gate: {accelerator: H100, gpus_per_trial: 1, epoch_minutes: 3}
"""
KATIB = """\
apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: lr-search
  annotations:
    budget-gate/accelerator: H100
    budget-gate/gpus_per_trial: "1"
    budget-gate/max_epochs: "10"
    budget-gate/epoch_minutes: "3"
spec:
  maxTrialCount: {trials}
  parallelTrialCount: 3
  algorithm: {{algorithmName: random}}
  objective: {{type: minimize, objectiveMetricName: loss}}
  parameters:
    - name: lr
      parameterType: double
      feasibleSpace: {{min: "0.01", max: "0.1"}}
  trialTemplate:
    trialSpec:
      apiVersion: batch/v1
      kind: Job
      spec:
        template:
          spec:
            containers:
              - {{name: train, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}
"""
SKYPILOT = """\
name: train
resources: {{accelerators: "H100:1"}}
envs:
  X_BUDGET_GATE_MAX_TRIALS: {trials}
  X_BUDGET_GATE_MAX_EPOCHS: 10
  X_BUDGET_GATE_EPOCH_MINUTES: 3
run: python train.py
"""
HYDRA = """\
defaults:
  - override hydra/sweeper: optuna
hydra:
  sweeper:
    n_trials: {trials}
    n_jobs: 2
    params:
      lr: interval(0.001, 0.1)
x-budget-gate: {{accelerator: H100, gpus_per_trial: 1, max_epochs: 10, epoch_minutes: 3}}
"""

CASES = {
    # format: (path, base text, head text, the head line that sets the trial count)
    Format.WANDB: (
        "sweeps/lr.yaml",
        WANDB,
        WANDB.replace("  epochs:", "  seed: {values: [1, 2, 3]}\n  epochs:"),
        "  seed: {values: [1, 2, 3]}",
    ),
    Format.KATIB: (
        "katib/lr.yaml",
        KATIB.format(trials=BASE_TRIALS),
        KATIB.format(trials=HEAD_TRIALS),
        f"  maxTrialCount: {HEAD_TRIALS}",
    ),
    Format.SKYPILOT: (
        "sky/train.yaml",
        SKYPILOT.format(trials=BASE_TRIALS),
        SKYPILOT.format(trials=HEAD_TRIALS),
        f"  X_BUDGET_GATE_MAX_TRIALS: {HEAD_TRIALS}",
    ),
    Format.HYDRA: (
        "conf/config.yaml",
        HYDRA.format(trials=BASE_TRIALS),
        HYDRA.format(trials=HEAD_TRIALS),
        f"    n_trials: {HEAD_TRIALS}",
    ),
}


def usd(amount: float) -> str:
    return f"{amount:,.2f} USD"


@pytest.mark.parametrize("fmt", list(CASES), ids=lambda f: f.name.lower())
def test_an_engine_file_is_judged_like_a_spec(story: PullRequestStory, fmt: Format) -> None:
    path, base, head, trials_line = CASES[fmt]
    story.specs = "experiments/**/*.yaml sweeps/*.yaml katib/*.yaml sky/*.yaml conf/*.yaml"
    story.change(path, head, before=base, at=T0 + HOUR)
    opened = story.run("pull_request.opened", story.pull_request_event())
    assert opened.code == 0, opened.stderr
    worst = usd(HEAD_TRIALS * PER_TRIAL)
    assert story.status() == ("pending", f"approval required · worst case {worst}")
    assert "budget-approval-required" in story.labels
    assert "alice" in story.requested[0]  # the policy's approver is asked for a review
    assert opened.outputs["needs-approval"] == "true"

    (comment,) = story.bot_comments()
    assert f"### ✋ {escape(path)}" in comment
    assert f"Read as a **{escape(fmt.value)}**" in comment
    line = head.splitlines().index(trials_line) + 1
    assert f"| line {line}:" in comment  # the trial count traced to its line in the file
    # the base version of the same file, priced the same way: 12 → 36 trials
    before, after = BASE_TRIALS * PER_TRIAL, HEAD_TRIALS * PER_TRIAL
    change = f"{before:,.2f} → {after:,.2f} USD (+{after - before:,.2f} USD, ×3)"
    assert escape(change) in comment
    report = opened.report["results"][0]
    assert report["imported"]["format"] == fmt.value
    assert report["estimate"]["worst"]["trials"] == HEAD_TRIALS

    approved = story.run("pull_request_review", story.review_event("alice", at=T0 + 2 * HOUR))
    assert approved.code == 0, approved.stderr
    assert story.status() == ("success", f"approved by alice · worst case {worst}")
    assert "budget-approval-required" not in story.labels


def test_an_engine_file_the_globs_do_not_select_is_not_judged(story: PullRequestStory) -> None:
    path, base, head, _ = CASES[Format.WANDB]
    story.change(path, head, before=base, at=T0 + HOUR)  # sweeps/ is not in the default globs
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 0 and story.status() == ("success", "no experiment spec changed")


def test_an_invalid_engine_file_says_its_format_and_fails(story: PullRequestStory) -> None:
    story.specs = "sweeps/*.yaml"
    unbounded = "method: random\nparameters:\n  lr: {min: 0.001, max: 0.1}\n"
    story.change("sweeps/lr.yaml", unbounded, at=T0 + HOUR)
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 3
    (comment,) = story.bot_comments()
    assert f"Read as a **{escape(Format.WANDB.value)}**" in comment
    assert escape("add run_cap: N at the top level") in comment
    assert "::error file=sweeps/lr.yaml,line=1" in ran.stdout
