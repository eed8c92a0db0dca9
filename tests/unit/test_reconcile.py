"""The reconcile core with hand-computed numbers: per run, totals, DOMAIN.md A, C and F."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gate import tracking
from gate.reconcile.actuals import RunFacts, RunStatus, price_run
from gate.reconcile.reconciler import CurvePoint, reconcile
from gate.reconcile.waste import WasteKind
from gate.spec.trial import Capacity
from tests.conftest import make_quote
from tests.reconcile_kit import approval, at, facts, make_plan, ms

D = Decimal


def waste(result, kind):
    return next(w for w in result.waste if w.kind is kind)


def test_domain_c_cost_per_qualified_model_counts_every_run():
    """DOMAIN.md C: 600 spent, 3 models pass the gate → 200 per qualified model."""
    runs = [
        facts("q1", hours=10),
        facts("q2", hours=10, start=1),
        facts("q3", hours=10, start=2),
        facts("u1", hours=10, f1=0.5),
        facts("u2", hours=10, f1=0.7),
        facts("f1", hours=10, status="FAILED"),  # passes on paper, but failed
    ]
    result = reconcile(make_plan(price="10", approval=approval("600")), runs)
    assert result.cost == D(600)
    assert result.qualified == 3
    assert result.cost_per_qualified == D(200)
    cheapest = min(r.cost for r in result.runs if r.qualified)
    assert cheapest == D(100) != result.cost_per_qualified
    assert result.verdict.passed and result.verdict.exit_code == 0


def test_domain_f_idle_gpu_time_is_an_upper_bound_of_525():
    """DOMAIN.md F: 15 per GPU-h, 100 h, mean utilization 65 % → 525."""
    samples = {"system/gpu_0_utilization_percentage": (60.0, 70.0, 65.0)}
    result = reconcile(make_plan(price="15"), [facts("r", hours=100, utilization=samples)])
    idle = waste(result, WasteKind.IDLE)
    assert idle.cost == D(525)
    assert idle.upper_bound and idle.measured
    assert idle.gpu_hours == D(35)
    assert result.utilization == D("0.65")
    assert result.utilization_gpu_hours == D(65)
    assert "mean GPU utilization 65.0 % over 100.0 GPU-hours of 1 run(s)" in idle.detail


def test_domain_a_phases_give_the_effective_training_ratio():
    """DOMAIN.md A: 2 GPUs held 2 h (setup 0.25, train 1.25, eval 0.25, idle 0.25) at 8."""
    phases = {
        tracking.SETUP_SECONDS: 900.0,
        tracking.TRAIN_SECONDS: 4500.0,
    }
    run = facts("a", hours=2, gpus=2, metrics=phases, params={tracking.EVAL_SECONDS: "900"})
    result = reconcile(make_plan(price="8"), [run])
    [priced] = result.runs
    assert priced.gpu_hours == D(4)
    assert priced.cost == D(32)
    assert priced.phases is not None
    assert priced.phases.effective_gpu_hours == D("2.5")
    assert priced.phases.idle_tail == D("0.25")
    assert result.effective_ratio == D("0.625")
    assert result.phased_runs == 1


def test_per_run_status_hours_gpus_and_cost():
    run = facts("r", hours=1.5, gpus=4, tags={tracking.TRIAL_ID: "t3", tracking.ATTEMPT: "2"})
    result = price_run(run, make_plan({"resources": {"gpus_per_trial": 4}}, price="2"))
    assert result.status is RunStatus.FINISHED
    assert result.held_hours == D("1.5")
    assert result.gpus == D(4)
    assert result.gpu_hours == D(6)
    assert result.cost == D(12)
    assert (result.trial, result.attempt) == ("t3", 2)
    assert result.start == at(0) and result.end == at(1.5)
    assert result.notes == ()


def test_a_finished_run_dated_to_end_after_now_is_provisional_like_a_running_one():
    """A job wrote end_time 9999: charged up to now, it grows with every read, so the
    totals are provisional (and a report of its month says so), as for a running run."""
    plan = make_plan(now=5.0)
    result = reconcile(plan, [facts("r", start=1, hours=10**6), facts("done", start=0)])
    ended = {run.run_id: run for run in result.runs}
    assert ended["r"].held_hours == D(4) and ended["r"].end is None and ended["r"].open
    assert not ended["done"].open
    assert result.running == 1 and result.verdict.provisional


def test_a_gpu_tag_above_the_specs_is_charged_and_said():
    """The tag is the job's word: 10**12 GPUs on a 1-GPU spec was charged without a note."""
    result = price_run(facts("r", gpus=10**12), make_plan(price="2"))
    assert result.gpus == D(10**12)
    assert result.notes == (
        "budget_gate.gpus tag says 1000000000000, above the spec's 1: 1000000000000 charged",
    )


def test_a_mig_slice_is_charged_its_share():
    plan = make_plan({"resources": {"gpus_per_trial": 1, "mig_profile": "1g.10gb"}}, price="7")
    result = price_run(facts("r", hours=7), plan)
    assert result.gpu_hours == D(7) / 7 and result.cost == D(7)


def test_a_running_run_is_charged_up_to_now_and_flagged():
    plan = make_plan(now=5.0)
    result = reconcile(plan, [facts("r", start=1, status="RUNNING")])
    [run] = result.runs
    assert run.held_hours == D(4) and run.end is None
    assert run.notes == ("still running: charged up to now",)
    assert not run.qualified  # only a finished run is a model
    assert result.running == 1 and result.verdict.provisional


def test_scheduled_and_inconsistent_runs_cost_nothing():
    plan = make_plan()
    scheduled = price_run(facts("s", status="SCHEDULED"), plan)
    assert scheduled.cost == 0 and scheduled.notes[0].startswith("scheduled, not started")
    backwards = RunFacts("b", "FINISHED", ms(2), ms(1), tags={tracking.GPUS: "1"})
    assert price_run(backwards, plan).notes == ("ends before it starts: nothing charged",)
    no_end = RunFacts("n", "FINISHED", ms(0), None, tags={tracking.GPUS: "1"})
    assert price_run(no_end, plan).notes == (
        "FINISHED without an end time before now: charged up to now",
    )
    odd = price_run(RunFacts("o", "WEIRD", ms(0), ms(1)), plan)
    assert odd.status is RunStatus.FAILED
    assert odd.notes[0] == "unknown MLflow status 'WEIRD': counted as failed"


def test_times_a_job_wrote_out_of_range_never_crash_and_no_model_is_free():
    """``end_time=10**17`` crashed every report; a run that held nothing is no model."""
    plan = make_plan()
    future = price_run(RunFacts("f", "FINISHED", ms(0), 10**17, tags={tracking.GPUS: "1"}), plan)
    assert future.end is None and future.notes[0].endswith("before now: charged up to now")
    far = price_run(RunFacts("x", "FINISHED", 10**17, 10**17 + 1, tags={tracking.GPUS: "1"}), plan)
    assert far.cost == 0 and far.start is not None and far.start.year == 9999
    assert price_run(facts("q", hours=1.0), plan).qualified  # the kit's run: a model
    instant = price_run(facts("z", hours=0.0), plan)
    assert not instant.gate_failures and not instant.qualified  # it passed, but held nothing


def test_gpu_and_price_tags_never_charge_less_than_the_spec_version():
    """The tags are the job's claim: 1 GPU of an 8-GPU trial, spot on an on-demand spec."""
    plan = make_plan({"resources": {"gpus_per_trial": 8}})
    fewer = price_run(facts("f", tags={tracking.GPUS: "1"}), plan)
    assert fewer.gpus == D(8)
    assert fewer.notes == ("budget_gate.gpus tag says 1, below the spec's 8: 8 charged",)
    more = price_run(facts("m", tags={tracking.GPUS: "16"}), plan)
    assert more.gpus == D(16)


def test_missing_or_bad_gpu_tags_fall_back_to_the_spec():
    plan = make_plan({"resources": {"gpus_per_trial": 2}})
    missing = price_run(facts("m", gpus=None), plan)
    assert missing.gpus == D(2)
    assert missing.notes == ("no budget_gate.gpus tag: 2 GPUs assumed from the spec",)
    bad = price_run(facts("b", tags={tracking.GPUS: "two"}), plan)
    assert bad.notes == ("an invalid ('two') budget_gate.gpus tag: 2 GPUs assumed from the spec",)


@pytest.mark.parametrize("text", ["\u00b2", "\u0663", "1" + "0" * 29, "-1", "1e3", " 8"])
def test_a_tag_a_training_job_forged_is_no_count_and_no_crash(text):
    """``"²".isdigit()`` is true and ``int("²")`` fails; thirty digits overflowed the money."""
    plan = make_plan({"resources": {"gpus_per_trial": 2}})
    tags = {tracking.GPUS: text, tracking.ATTEMPT: text, tracking.STOPPED_BY: "x"}
    run = price_run(facts("f", tags={**tags, tracking.STOP_EPOCH: text}), plan)
    assert run.gpus == D(2) and run.attempt is None
    assert (
        run.notes[0] == f"an invalid ({text!r}) budget_gate.gpus tag: 2 GPUs assumed from the spec"
    )


def test_utilization_samples_past_100_percent_are_clamped_not_summed_to_overflow():
    plan = make_plan()
    broken = {"system/gpu_0_utilization_percentage": (1.7e308, 1.7e308, 50.0)}
    run = price_run(RunFacts("u", "FINISHED", ms(0), ms(1), utilization=broken), plan)
    assert run.utilization == D(repr(250 / 3)) / 100  # (100 + 100 + 50) / 3 %, each clamped


def test_a_run_on_another_accelerator_is_priced_by_its_own_quote():
    h100 = make_quote("30", "H100")
    seen = []

    def requote(accelerator, capacity):
        seen.append((accelerator, capacity))
        return h100 if accelerator == "H100" else None

    plan = make_plan(price="10", requote=requote)
    other = price_run(facts("h", tags={tracking.ACCELERATOR: "H100"}), plan)
    assert other.cost == D(30)
    assert other.notes == ("ran on H100 on-demand: charged at its own price",)
    unknown = price_run(facts("x", tags={tracking.ACCELERATOR: "TPU9"}), plan)
    assert unknown.cost == D(10) and "which has no price" in unknown.notes[0]
    odd = price_run(facts("c", tags={tracking.CAPACITY: "borrowed"}), plan)
    assert odd.cost == D(10) and "borrowed" in odd.notes[0]
    assert seen == [("H100", Capacity.ON_DEMAND), ("TPU9", Capacity.ON_DEMAND)]
    same = price_run(facts("s", tags={tracking.ACCELERATOR: "A100-80GB"}), plan)
    assert same.notes == ()


def test_phases_longer_than_the_run_are_scaled_to_the_time_held():
    metrics = {tracking.SETUP_SECONDS: 3600.0, tracking.TRAIN_SECONDS: 10800.0}
    result = price_run(facts("r", hours=2, metrics=metrics), make_plan())
    assert result.phases is not None
    assert result.phases.setup == D("0.5") and result.phases.training == D("1.5")
    assert result.phases.idle_tail == 0 and result.gpu_hours == D(2)
    assert result.notes == ("phases add up to more than the time held: scaled to fit",)


@pytest.mark.parametrize("train", ["-5", "1e999999999", "1e999999", "1e13"])
def test_phase_values_that_are_not_durations_are_ignored(train):
    """``1e999999999`` is a finite Decimal: it overflowed once divided, and one run's param
    crashed reconcile and every team's monthly report (exit 70)."""
    params = {tracking.SETUP_SECONDS: "soon", tracking.TRAIN_SECONDS: train}
    assert price_run(facts("r", params=params), make_plan()).phases is None


def test_epochs_and_the_cost_of_epochs_after_the_plateau():
    """400 epochs, flat after 60, 40 h on 1 GPU at 10: 340/400 of 400 = 340 wasted."""
    history = tuple([1.0 - 0.01 * e for e in range(60)] + [0.42] * 340)
    result = reconcile(make_plan(price="10"), [facts("r", hours=40, history=history)])
    [run] = result.runs
    assert (run.epochs, run.plateau, run.epochs_after_plateau) == (400, 60, 340)
    assert run.plateau_cost == D(340) and run.plateau_gpu_hours == D(34)
    plateau = waste(result, WasteKind.PLATEAU)
    assert plateau.cost == D(340) and plateau.runs == 1
    assert plateau.detail == (
        "val_loss (min, must gain 0.1 % of its value per 10 epochs) stopped paying after "
        "epoch 60 (median) while runs trained 400 epochs; 340 epochs over 1 of 1 run(s) came "
        "after it, 85.0 % of their training cost"
    )
    assert plateau.advice.startswith("add stopping.early_stopping on val_loss")


def test_epochs_after_the_plateau_are_a_share_of_training_when_phases_were_logged():
    history = (3.0, 2.0, 1.0, 1.0)
    phases = {tracking.TRAIN_SECONDS: 3600.0 * 8}
    run = price_run(facts("r", hours=10, history=history, metrics=phases), make_plan())
    assert run.plateau == 3 and run.plateau_gpu_hours == D(2)  # 8 h × 1/4


def test_failed_runs_are_whole_waste_and_not_counted_again():
    history = (3.0, 1.0, 1.0, 1.0)
    samples = {"system/gpu_0_utilization_percentage": (50.0,)}
    runs = [
        facts("ok", hours=4, history=history, utilization=samples),
        facts("bad", hours=6, status="KILLED", history=history, utilization=samples),
    ]
    result = reconcile(make_plan(price="10"), runs)
    failed, plateau, idle = result.waste
    assert failed.kind is WasteKind.FAILED and failed.cost == D(60) and failed.runs == 1
    assert failed.detail == "1 of 2 run(s) failed or were killed"
    assert plateau.cost == D(20)  # only the run that did not fail: 4 h × 2/4 × 10
    assert idle.cost == D(20)  # 40 × 50 %
    killed = next(r for r in result.runs if r.run_id == "bad")
    assert killed.plateau == 2 and killed.plateau_cost == 0


def test_retries_are_grouped_by_trial():
    runs = [
        facts("a1", start=0, status="FAILED", tags={tracking.TRIAL_ID: "7", tracking.ATTEMPT: "1"}),
        facts("a2", start=2, tags={tracking.TRIAL_ID: "7", tracking.ATTEMPT: "2"}),
        facts("b1", start=1, status="FAILED", tags={tracking.TRIAL_ID: "8"}),
        facts("b2", start=3, status="FAILED", tags={tracking.TRIAL_ID: "8"}),
        facts("b3", start=4, tags={tracking.TRIAL_ID: "8"}),
        facts("c", start=0),
    ]
    result = reconcile(make_plan(price="10"), runs)
    assert result.trials == 3
    seven, eight = result.retries
    assert seven.trial == "7" and [a.run_id for a in seven.attempts] == ["a1", "a2"]
    assert seven.retry_cost == D(10)
    assert [a.run_id for a in eight.attempts] == ["b1", "b2", "b3"]  # start order without tags
    assert eight.retry_cost == D(20)
    failed = waste(result, WasteKind.FAILED)
    assert (
        failed.detail
        == "3 of 6 run(s) failed or were killed; 2 trial(s) were run again (3 extra run(s))"
    )


def test_time_to_first_qualified_model_counts_the_queue_when_tagged():
    submitted = {tracking.SUBMITTED_AT: at(-1).isoformat()}
    runs = [
        facts("slow", start=0, hours=5, tags=submitted),
        facts("fast", start=1, hours=2),  # ends at 3 h: the first qualified model
        facts("early-but-bad", start=0, hours=1, f1=0.1),
    ]
    result = reconcile(make_plan(), runs)
    assert result.first_qualified is not None and result.first_qualified.run_id == "fast"
    assert result.hours_to_first_qualified == D(4)
    untagged = reconcile(make_plan(), runs[1:])
    assert untagged.hours_to_first_qualified == D(3)


def test_a_bad_submission_tag_is_ignored_with_a_note():
    run = price_run(facts("r", tags={tracking.SUBMITTED_AT: "yesterday"}), make_plan())
    assert run.submitted is None and "is not an ISO time with a zone" in run.notes[0]
    naive = price_run(facts("r", tags={tracking.SUBMITTED_AT: "2026-11-01T00:00"}), make_plan())
    assert naive.submitted is None


def test_no_qualified_model_reports_the_whole_spend_and_fails():
    result = reconcile(make_plan(price="10"), [facts("a", f1=0.1), facts("b", status="FAILED")])
    assert result.cost_per_qualified is None and result.cost == D(20)
    assert not result.verdict.passed and result.verdict.exit_code == 1
    assert result.verdict.reasons == (
        "no run passed the quality gate: 20.00 USD spent on 2 run(s) bought no qualified model",
    )
    assert result.first_qualified is None and result.hours_to_first_qualified is None


def test_no_runs_fail():
    result = reconcile(make_plan(), [])
    assert result.verdict.reasons == ("no runs found, so no qualified model",)
    assert result.cost == 0 and result.trials == 0
    assert all(not w.measured for w in result.waste[1:])


def test_variance_against_the_estimate_and_the_approval_with_tolerance():
    # The estimate: 4 trials × 1 GPU × 1 h at 10 = 40 (worst = expected, no early stopping).
    plan = make_plan(price="10", approval=approval("100"))
    within = reconcile(plan, [facts("r", hours=11)])
    v = within.variance
    assert (v.actual, v.expected, v.worst, v.approved) == (D(110), D(40), D(40), D(100))
    assert v.reference_name == "approved" and v.limit == D(110) and not v.over
    assert v.approval_id == "approval-run-1"
    assert within.verdict.passed
    over = reconcile(plan, [facts("r", hours=11.01)])
    assert over.variance.over and over.verdict.exit_code == 1
    assert over.verdict.reasons == (
        "actual 110.10 USD exceeds the approved 100.00 USD (10.1 % over) by more than the "
        "tolerance of 10.0 %",
    )


def test_without_an_approval_the_worst_case_estimate_is_the_reference():
    result = reconcile(make_plan(price="10", tolerance="0.25"), [facts("r", hours=5.1)])
    v = result.variance
    assert v.approved is None and v.reference == D(40) and v.reference_name == "worst-case estimate"
    assert v.limit == D(50) and v.over
    assert result.verdict.reasons[0].startswith("actual 51.00 USD exceeds the worst-case estimate")


def test_an_approval_in_another_currency_is_not_compared():
    result = reconcile(make_plan(approval=approval("1", "EUR")), [facts("r")])
    assert result.variance.approved is None
    assert "the approval is in EUR, the policy prices in USD" in result.notes[0]


def test_without_a_quality_gate_every_finished_run_qualifies():
    result = reconcile(make_plan({"quality_gate": []}), [facts("a", f1=None), facts("b")])
    assert result.qualified == 2
    assert result.notes == (
        "the spec has no quality_gate: every finished run counts as qualified",
        "cost variance: the estimate priced each epoch from the spec's declared epoch time "
        "(6.00 min, worst 6.00)",
    )


def test_the_curve_follows_end_time_and_marks_where_quality_stopped_improving():
    runs = [
        facts("a", start=0, hours=1, f1=0.82),
        facts("b", start=0, hours=2, f1=0.9),
        facts("c", start=0, hours=3, f1=0.85),
        facts("d", start=0, hours=0.5, status="FAILED", f1=0.99),  # failed: no model
    ]
    result = reconcile(make_plan(price="10"), runs)
    assert result.curve == (
        CurvePoint(D(5), None),
        CurvePoint(D(15), 0.82),
        CurvePoint(D(35), 0.9),
        CurvePoint(D(65), 0.9),
    )
    assert result.best_at == D(35)


def test_the_curve_counts_qualified_models_only_and_every_runs_cost():
    """DOMAIN.md: plans compare at equal quality. A finished run that fails the gate is no
    model, however good its metric: its 0.95 is not "best", and its cost is still spent."""
    gate = [
        {"metric": "val_f1", "op": ">=", "value": 0.8},
        {"metric": "val_recall_class_*", "op": ">=", "value": 0.6},
    ]
    recall = {"val_recall_class_0": 0.7}
    runs = [
        facts("q1", start=0, hours=1, f1=0.85, metrics=recall),
        facts("u", start=0, hours=2, f1=0.95),  # no per-class recall: fails the gate
        facts("q2", start=0, hours=4, f1=0.9, metrics=recall),
    ]
    result = reconcile(make_plan({"quality_gate": gate}), runs)
    assert {r.run_id: r.qualified for r in result.runs} == {"q1": True, "u": False, "q2": True}
    assert [p.best for p in result.curve] == [0.85, 0.85, 0.9]
    assert [p.cost for p in result.curve] == [D(10), D(30), D(70)]
    assert result.best_at == D(70)  # the last 40 bought the better qualified model
