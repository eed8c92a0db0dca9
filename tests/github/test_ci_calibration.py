"""The Action prices with the calibration committed at the base, never the pull request's.

A spec that declares half a minute an epoch where 23 runs measured about four gets BG308
(approval); a pull request that also rewrites ``policies/calibration.json`` to agree with it
still gets it, because the calibration is read at the base commit, like the policies.
"""

from __future__ import annotations

import datetime as dt
import json

from gate.policy.loader import CALIBRATION_FILE
from tests.conftest import ROOT
from tests.github.ci_kit import BASE, POLICY, T0, PullRequestStory

CALIBRATION = (ROOT / "policies" / "tests" / CALIBRATION_FILE).read_text(encoding="utf-8")
SPEC = "experiments/resnet.yaml"
UNDERSTATED = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata:
  name: resnet-understated
  labels: {model: fixture-resnet18}
resources: {accelerator: A100-80GB, gpus_per_trial: 1, precision: bf16}
workload: {max_epochs: 20, epoch_minutes: 0.5}
search: {strategy: random, max_trials: 2}
stopping: {early_stopping: {monitor: val_loss, patience: 3}}
quality_gate: [{metric: val_f1, op: ">=", value: 0.8}]
"""


def _agreeing() -> str:
    """The calibration a hostile pull request would commit: measured = what the spec says."""
    data = json.loads(CALIBRATION)
    data["entries"][0]["epoch_minutes"] = {"runs": 23, "p10": 0.4, "median": 0.5, "p90": 0.6}
    return json.dumps(data, indent=2)


def test_the_base_calibration_flags_an_understated_spec(story: PullRequestStory) -> None:
    story.repo.put_file(f"policies/{CALIBRATION_FILE}", CALIBRATION, ref=BASE)
    story.change(SPEC, UNDERSTATED, at=T0 + dt.timedelta(hours=1))
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 0, ran.stderr  # fail-on: error; the status carries the wait
    assert story.status()[0] == "pending"
    (comment,) = story.bot_comments()
    assert "BG308" in comment


def test_a_pull_request_cannot_edit_the_calibration_that_prices_it(
    story: PullRequestStory,
) -> None:
    story.repo.put_file(f"policies/{CALIBRATION_FILE}", CALIBRATION, ref=BASE)
    story.change(SPEC, UNDERSTATED, at=T0 + dt.timedelta(hours=1))
    # the head holds the base's policy too (the fake's head starts from the event's files)
    head = {"policies/default.yaml": POLICY, f"policies/{CALIBRATION_FILE}": _agreeing()}
    story.push(head, at=T0 + dt.timedelta(hours=2))
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 0, ran.stderr
    assert story.status()[0] == "pending"
    assert "BG308" in story.bot_comments()[0]


def test_without_a_calibration_the_declared_figure_prices_it(story: PullRequestStory) -> None:
    story.change(SPEC, UNDERSTATED, at=T0 + dt.timedelta(hours=1))
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 0, ran.stderr
    assert story.status()[0] == "success"
    assert "BG308" not in story.bot_comments()[0]
