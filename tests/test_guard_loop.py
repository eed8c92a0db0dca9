"""The plain-loop guard on a real MLflow server: the seed curve stopped at its plateau, the
stop's tags and per-epoch cost on the runs, reconcile listing what the stops saved, and
``gate.open_guard`` reading the approval from the ledger."""

from __future__ import annotations

import os
from decimal import Decimal

import pytest

import gate
from gate import tracking
from gate.guard.loop import LoopGuard
from gate.guard.model import COST_METRIC, StopKind
from tests import seed_curve
from tests.reconcile_kit import GOOD, ms


def _train(lab, guard, spec: str, trial: int) -> tuple[str, int]:
    """One trial as a launcher runs it: an MLflow run, one guard step per epoch."""
    start = trial * 100.0  # NOTE: runs in the past (T0 is 2026-11-02): one ending later is not over
    run = lab.client.create_run(
        lab.experiment_id, start_time=ms(start), tags=tracking.run_tags(spec, trial_id=trial)
    )
    run_id = run.info.run_id
    loop = LoopGuard(guard, str(trial), mlflow_run_id=run_id, tracking_uri=lab.team.uri)
    epoch = 0
    for epoch in range(1, seed_curve.EPOCHS + 1):
        loss = seed_curve.val_loss(epoch)
        lab.client.log_metric(run_id, "val_loss", loss, step=epoch, timestamp=ms(start))
        # Epochs of an hour on 1 L4 (the lab's spec), as the launcher's clock would say.
        if loop.step(epoch, {"val_loss": loss}, held_seconds=epoch * 3600.0).stop:
            break
    for key, value in GOOD.items():
        lab.client.log_metric(run_id, key, value, step=epoch, timestamp=ms(start))
    loop.end()
    lab.client.set_terminated(run_id, "FINISHED", end_time=ms(start + epoch))
    return run_id, epoch


def test_the_seed_curve_is_stopped_and_reconcile_lists_what_it_saved(lab):
    spec = lab.write_spec(trials=3, epochs=400)  # 3 trials need no approval: worst case
    guard = gate.open_guard(spec, policy_dir=lab.team.policy_dir, tracking_uri=lab.team.uri)
    assert guard.ceiling.source == "worst-case estimate"
    runs = [_train(lab, guard, spec, trial) for trial in range(3)]
    assert [epoch for _, epoch in runs] == [70, 70, 70]  # plateau 60 + patience 10
    run = lab.client.get_run(runs[0][0])
    assert run.data.tags["budget_gate.stopped_by"] == "budget-gate guard (stop-trial)"
    assert run.data.tags["budget_gate.stop_kind"] == StopKind.PLATEAU.value
    assert "plateau at epoch 60" in run.data.tags["budget_gate.stop_reason"]
    assert run.data.tags["budget_gate.stop_spend"] == "700.00 USD"  # 70 h × 10 USD
    costs = lab.client.get_metric_history(runs[0][0], COST_METRIC)
    assert [(m.step, m.value) for m in costs][-1] == (70, 700.0) and len(costs) == 70

    code, doc = lab.json("--dry-run", spec=spec)
    assert code == 0, doc["verdict"]
    stops = doc["guard"]["stops"]
    assert [(s["kind"], s["epoch"], s["epochs_saved"]) for s in stops] == [("plateau", 70, 330)] * 3
    # Each run would have trained 330 more hours at 10 USD: 3,300 USD, 9,900 USD in all.
    assert Decimal(doc["guard"]["saved"]) == 9900
    print(f"\nplain loop: 3 runs stopped at epoch 70, saved {doc['guard']['saved']} USD")
    _, text, _ = lab.reconcile("--dry-run", spec=spec)
    assert "guard stops (3 run(s)): saved 9,900.00 USD against running them on" in text
    assert "plateau stop at epoch 70, spend then 700.00 USD" in text


def test_open_guard_needs_the_approval_and_takes_its_amount(lab):
    spec = lab.write_spec(trials=6, epochs=10)  # over the team's 4 trials: needs approval
    with pytest.raises(gate.ApprovalRequired):
        gate.open_guard(spec, policy_dir=lab.team.policy_dir, tracking_uri=lab.team.uri)
    code, _, err = lab.team.cli("approve", spec, "--by", "alice", "--reason", "worth it")
    assert code == 0, err
    guard = gate.open_guard(spec, policy_dir=lab.team.policy_dir, tracking_uri=lab.team.uri)
    assert guard.ceiling.source.startswith("approved amount (")
    assert guard.ceiling.amount == Decimal(600)  # 6 trials × 10 h × 10 USD
    # The guard re-reads the ledger when due: still approved, same amount.
    assert guard._refresh is not None and guard._refresh() == guard.ceiling
    # The guard knows its launch, whose Optuna studies its workers read together.
    assert guard.launch_key is not None and guard.launch_key == os.environ["BUDGET_GATE_LAUNCH_KEY"]


def test_a_held_seconds_that_does_not_grow_is_said_once(lab, caplog):
    """Each epoch's own seconds passed as held_seconds charged 60 GPU-hours as one."""
    spec = lab.write_spec(trials=2, epochs=10)  # within the team's triggers: no approval
    guard = gate.open_guard(spec, policy_dir=lab.team.policy_dir, tracking_uri=lab.team.uri)
    loop = LoopGuard(guard, "7")
    with caplog.at_level("WARNING", logger="gate.guard.loop"):
        for epoch in range(1, 4):
            loop.step(epoch, {"val_loss": 1.0 / epoch}, held_seconds=60.0)
    said = [r.getMessage() for r in caplog.records if "did not grow" in r.getMessage()]
    assert len(said) == 1
    assert "it is the attempt's seconds held so far (a running total)" in said[0]
    caplog.clear()
    fresh = LoopGuard(guard, "8")
    with caplog.at_level("WARNING", logger="gate.guard.loop"):
        for epoch in range(1, 4):
            fresh.step(epoch, {"val_loss": 1.0 / epoch}, held_seconds=60.0 * epoch)
    assert not [r for r in caplog.records if "did not grow" in r.getMessage()]
