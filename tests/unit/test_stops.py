"""Reconcile lists the runtime guard's stops from the runs' tags, and what each saved."""

from __future__ import annotations

from decimal import Decimal as D

from gate import tracking
from gate.reconcile.reconciler import ReconcileReport, reconcile
from gate.reconcile.stops import guard_stop
from gate.reporters import reconcile_json, reconcile_markdown, reconcile_text
from tests.reconcile_kit import facts, make_plan

STOP = {
    tracking.STOPPED_BY: "budget-gate guard (stop-trial)",
    tracking.STOP_KIND: "plateau",
    tracking.STOP_REASON: "val_loss gained 8.82e-06 over epochs 60–70: plateau at epoch 60",
    tracking.STOP_SPEND: "112.00 USD",
    tracking.STOP_EPOCH: "70",
}


def _report(plan, runs):
    return ReconcileReport("s.yaml", "s", "p", "e", "w", reconcile(plan, runs), "0.1.0")


def test_a_stop_saves_the_epochs_it_did_not_train():
    # 70 of 400 epochs, 70 h of training at 10 per GPU-hour: 10 an epoch, 330 epochs saved.
    stop = guard_stop(STOP, 70, 400, D(700))
    assert stop is not None
    assert (stop.kind, stop.epoch, stop.epochs_saved, stop.saved) == ("plateau", 70, 330, 3300)
    assert guard_stop({}, 70, 400, D(700)) is None
    assert guard_stop({tracking.STOPPED_BY: "x"}, None, 400, D(700)).saved == 0


def test_reconcile_lists_the_guard_stops_in_every_format():
    plan = make_plan({"workload": {"max_epochs": 400}}, price="10")
    history = tuple(1.0 / e for e in range(1, 71))
    runs = [
        facts("stopped", hours=70, history=history, tags={tracking.GPUS: "1", **STOP}),
        facts("finished", start=80, hours=400, history=history * 5 + history[:50]),
    ]
    report = _report(plan, runs)
    result = report.result
    assert [r.run_id for r in result.guard_stops] == ["stopped"]
    assert result.guard_saved == D(3300)
    text = reconcile_text.render(report)
    assert "guard stops (1 run(s)): saved 3,300.00 USD against running them on" in text
    assert "plateau stop at epoch 70, spend then 112.00 USD" in text
    doc = reconcile_json.render(report)
    assert '"saved": "3300' in doc and '"kind": "plateau"' in doc
    markdown = reconcile_markdown.render(report)
    assert "### Stopped by the guard" in markdown
    assert "1 run(s) stopped, saving 3,300.00 USD" in markdown
    # Without stops, no section.
    quiet = _report(plan, runs[1:])
    assert "guard stops" not in reconcile_text.render(quiet)
    assert "Stopped by the guard" not in reconcile_markdown.render(quiet)
