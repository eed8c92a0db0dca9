"""``budget-gate reconcile`` against a real MLflow server: DOMAIN.md C and F, exit codes, ledger."""

from __future__ import annotations

import json
import math
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from gate import tracking
from gate.estimate.prices import load_catalog
from gate.integrations import open_ledger
from gate.ledger.records import LedgerRecord, RecordKind
from tests import seed_curve
from tests.ledger_kit import UNSIGNED, fingerprint_of
from tests.reconcile_kit import GOOD, T0, Lab, log_run


def test_domain_c_600_spent_3_qualified_is_200_per_qualified_model(lab):
    """DOMAIN.md C through real MLflow runs: 6 runs × 10 h × 10 = 600; 3 pass → 200."""
    for trial in range(3):
        lab.log(trial=trial, start=trial, hours=10, metrics=GOOD)
    lab.log(trial=3, start=3, hours=10, metrics={**GOOD, "val_macro_f1": 0.7})
    lab.log(trial=4, start=4, hours=10, metrics={**GOOD, "val_recall_class_1": 0.6})
    lab.log(trial=5, start=5, hours=10, metrics=GOOD, status="FAILED")
    code, doc = lab.json()
    totals = doc["totals"]
    assert code == 0, doc["verdict"]
    assert Decimal(totals["cost"]) == 600
    assert totals["qualified"] == 3
    assert Decimal(totals["cost_per_qualified_model"]) == 200
    assert totals["statuses"] == {"FAILED": 1, "FINISHED": 5}
    assert Decimal(totals["hours_to_first_qualified_model"]) == 10
    failures = {r["name"] or r["run_id"]: r["gate_failures"] for r in doc["runs"]}
    assert sorted(map(tuple, failures.values())) == [
        (),
        (),
        (),
        (),  # the failed run: it never qualifies, whatever its metrics say
        ("val_macro_f1 = 0.7, needs >= 0.8",),
        ("val_recall_class_1 = 0.6, needs >= 0.65",),
    ]
    assert doc["variance"]["reference"] == "worst-case estimate"
    assert Decimal(doc["variance"]["worst"]) == 600
    failed = next(w for w in doc["waste"] if w["kind"] == "failed-runs")
    assert Decimal(failed["cost"]) == 100


def test_domain_f_idle_gpu_time_upper_bound_525(lab):
    """DOMAIN.md F through a real run: 15 per GPU-h, 100 h, utilization 65 % → 525."""
    lab.team.policy(price="15")
    spec = lab.write_spec(trials=1, epochs=100)
    samples = [55.0, 75.0] * 50  # what MLflow's system-metrics monitor logs, step by step
    lab.log(
        spec,
        hours=100,
        metrics=GOOD,
        history={"system/gpu_0_utilization_percentage": samples},
    )
    code, doc = lab.json(spec=spec)
    assert code == 0, doc["verdict"]
    idle = next(w for w in doc["waste"] if w["kind"] == "idle-gpu-time")
    assert Decimal(idle["cost"]) == 525
    assert idle["upper_bound"] is True
    assert Decimal(doc["totals"]["utilization_weighted_gpu_hours"]) == 65
    assert Decimal(doc["totals"]["cost"]) == 1500


def test_text_report_and_the_ledger_record_counted_by_the_monthly_budget(lab):
    for trial in range(2):
        lab.log(trial=trial, start=trial, hours=10, metrics=GOOD)
    code, out, err = lab.reconcile()
    assert code == 0, err
    assert "cost per qualified model: 100.00 USD (failed, killed and unqualified runs" in out
    assert out.rstrip().endswith("verdict: pass (exit 0)")
    [record] = [r for r in lab.team.records(lab.spec) if r.kind is RecordKind.RECONCILIATION]
    assert record.actual_cost == Decimal(200)
    assert record.worst_cost == Decimal(600) and record.expected_cost == Decimal(600)
    assert f"ledger: recorded reconciliation {record.run_id} in MLflow experiment" in out
    # check reads this month's actuals from the ledger: 5000 − 200 is left.
    lab.team.policy(limits=", monthly_budget: 5000")
    other = lab.team.spec(1)
    code, out, _ = lab.team.cli("check", other)
    assert "reconciled 200.00), 4,800.00 USD left before this spec" in out, out


def test_dry_run_writes_nothing(lab):
    lab.log(hours=10, metrics=GOOD)
    code, out, _ = lab.reconcile("--dry-run")
    assert code == 0
    assert "ledger: not recorded — --dry-run" in out
    assert lab.team.records(lab.spec) == []


def test_a_running_run_is_charged_to_now_flagged_and_not_recorded(lab):
    lab.log(hours=10, metrics=GOOD)
    lab.log(trial=1, start=1, hours=None)
    code, doc = lab.json()
    running = next(r for r in doc["runs"] if r["status"] == "RUNNING")
    assert running["end"] is None and "still running: charged up to now" in running["notes"]
    assert Decimal(running["held_hours"]) > 24 * 20  # T0 is weeks before "now"
    assert doc["verdict"]["provisional"] is True
    assert doc["ledger"] == {
        "record_id": None,
        "not_recorded": "1 run(s) still running; reconcile again once they end",
    }
    assert lab.team.records(lab.spec) == []
    assert code == 1  # charged up to now, far past the estimate


@pytest.mark.parametrize(
    ("how", "said"),
    [
        ("scheduled", "1 run(s) scheduled, not started; reconcile again once they end"),
        ("backwards", "1 run(s) end before they start, so what they held is not known"),
    ],
)
def test_a_run_not_started_or_ending_before_it_starts_is_not_recorded(lab, how, said):
    """Its cost of nothing is not final: recorded, it would release what the launch
    committed from the month's budget (a training job can set either)."""
    lab.log(hours=10, metrics=GOOD)
    if how == "scheduled":
        run = lab.log(trial=1, start=1, hours=None)
        lab.client.update_run(run, status="SCHEDULED")
    else:
        lab.log(trial=1, start=5, hours=-4, metrics=GOOD)
    _, doc = lab.json()
    assert doc["ledger"]["record_id"] is None
    assert doc["ledger"]["not_recorded"].startswith(said)
    assert lab.team.records(lab.spec) == []


def test_run_names_and_tags_cannot_start_a_line_of_the_text_report(lab):
    """A training job names its run and sets its tags: the report shows them escaped."""
    evil = "x\n::error title=budget-gate::approved by the CFO\n\x1b[2J"
    run = lab.log(hours=10, metrics=GOOD)
    lab.client.set_tag(run, "mlflow.runName", evil)
    lab.client.set_tag(run, tracking.TRIAL_ID, evil)
    _, out, _ = lab.reconcile("--dry-run")
    assert not [line for line in out.splitlines() if line.startswith("::")]
    assert "\x1b" not in out and "x\\n::error title=budget-gate::approved by the CFO" in out


def test_over_the_approved_amount_by_more_than_the_tolerance_exits_1(lab):
    approve(lab, "100")
    lab.log(hours=10, metrics=GOOD)  # 100: at the approval
    lab.log(trial=1, start=1, hours=1, metrics=GOOD)  # 110: at the 10 % tolerance
    code, doc = lab.json("--dry-run")
    assert code == 0 and doc["variance"]["over"] is False
    assert doc["variance"]["approved"] == "100.00"
    lab.log(trial=2, start=2, hours=0.01, metrics=GOOD)  # 110.10
    code, out, _ = lab.reconcile("--dry-run")
    assert code == 1
    assert (
        "verdict: fail — actual 110.10 USD exceeds the approved 100.00 USD (10.1 % over) by "
        "more than the tolerance of 10.0 % (exit 1)"
    ) in out
    lab.team.policy(limits=", reconcile_tolerance: 0.2")
    assert lab.reconcile("--dry-run")[0] == 0


def approve(lab: Lab, amount: str) -> LedgerRecord:
    record = LedgerRecord(
        kind=RecordKind.APPROVAL,
        spec=tracking.spec_path(lab.spec),
        fingerprint=fingerprint_of(lab.spec),
        experiment=lab.experiment,
        recorded_at=T0,
        currency="USD",
        worst_cost=Decimal(amount),
        team=lab.team.name,
        by="alice",
    )
    open_ledger(lab.team.uri, UNSIGNED).append(record)
    return record


def test_no_qualified_model_fails_with_the_whole_spend(lab):
    lab.log(hours=3, metrics={**GOOD, "val_recall_class_1": 0.2})
    lab.log(trial=1, start=1, hours=2, metrics={"val_macro_f1": 0.95})  # no per-class recall
    code, out, _ = lab.reconcile("--dry-run")
    assert code == 1
    assert "cost per qualified model: none qualified — 50.00 USD spent in all" in out
    assert "no metric matches 'val_recall_class_*'" in out
    assert "no run passed the quality gate: 50.00 USD spent on 2 run(s)" in out


def test_no_runs_fail_and_record_nothing(lab):
    code, out, _ = lab.reconcile()
    assert code == 1
    assert "runs (0: none)" in out
    assert "ledger: not recorded — no runs found" in out
    assert lab.team.records(lab.spec) == []


def test_only_this_version_unless_all_versions(lab):
    lab.log(hours=10, metrics=GOOD)
    older = lab.write_spec(trials=5)  # another fingerprint, same MLflow experiment
    lab.log(older, trial=9, hours=4, metrics=GOOD)
    code, doc = lab.json("--dry-run")
    assert doc["totals"]["runs"] == 1 and doc["mlflow"]["all_versions"] is False
    code, doc = lab.json("--dry-run", "--all-versions")
    assert code == 0
    assert doc["totals"]["runs"] == 2 and Decimal(doc["totals"]["cost"]) == 140
    assert {r["fingerprint"] for r in doc["runs"]} == {
        fingerprint_of(lab.spec),
        fingerprint_of(older),
    }


def test_runs_retagged_away_from_this_version_are_said_with_their_hours(lab):
    """A job that rewrites its run's fingerprint leaves this version's total: reconcile says
    how many runs, and GPU-hours, the experiment holds that it did not count."""
    lab.log(hours=10, metrics=GOOD)
    tags = tracking.run_tags(lab.spec, trial_id=1)
    tags[tracking.FINGERPRINT] = "sha256:" + "f" * 64
    log_run(lab.client, lab.experiment_id, tags=tags, hours=50, status="FAILED")
    tags = {**tracking.run_tags(lab.spec, trial_id=2), tracking.FINGERPRINT: "made-up"}
    del tags[tracking.GPUS], tags[tracking.TEAM]
    log_run(lab.client, lab.experiment_id, tags=tags, hours=5)
    code, out, err = lab.reconcile("--dry-run")
    assert code == 0, err
    note = (
        f"MLflow experiment {lab.experiment} also holds 2 run(s) tagged with 2 "
        "other fingerprint(s) (55.00 GPU-h), not counted here — pass "
        "--all-versions to reconcile them"
    )
    assert f"budget-gate: {note}" in err and f"\nnote: {note}\n" in out
    _, doc = lab.json("--dry-run")
    assert doc["other_versions"] == {
        "runs": 2,
        "versions": 2,
        "untagged": 0,
        "gpu_hours": "55.0000",
        "note": note,
    }
    _, doc = lab.json("--dry-run", "--all-versions")
    assert doc["totals"]["runs"] == 3 and Decimal(doc["totals"]["cost"]) == 650


def test_a_run_whose_fingerprint_tag_was_deleted_is_said_with_its_hours(lab):
    """``delete_tag(run, "budget_gate.fingerprint")``: MLflow's ``!=`` leaves an absent tag
    out, so the run left every total without a word (800 USD of 880 gone, and recorded)."""
    lab.log(hours=10, metrics=GOOD)
    hidden = log_run(lab.client, lab.experiment_id, tags=tracking.run_tags(lab.spec, trial_id=1),
                     hours=40, status="FAILED")  # fmt: skip
    lab.client.delete_tag(hidden, tracking.FINGERPRINT)
    code, out, err = lab.reconcile("--dry-run")
    assert code == 0, err
    note = (
        f"MLflow experiment {lab.experiment} also holds 1 run(s) with no fingerprint tag "
        "(40.00 GPU-h), not counted here — pass --all-versions to reconcile those tagged"
    )
    assert f"budget-gate: {note}" in err and f"\nnote: {note}\n" in out
    _, doc = lab.json("--dry-run")
    assert doc["other_versions"]["untagged"] == 1 and doc["other_versions"]["runs"] == 0


def test_a_deleted_run_or_experiment_is_counted_and_said(lab):
    """``delete_run`` on a failed run (or ``delete_experiment``) hid its spend: 400 USD of 500
    left the total, and a deleted experiment made reconcile refuse the spec (exit 3)."""
    lab.log(hours=10, metrics=GOOD)
    failed = lab.log(trial=1, start=1, hours=40, status="FAILED")
    lab.client.delete_run(failed)
    _, doc = lab.json("--dry-run")
    assert doc["totals"]["runs"] == 2 and Decimal(doc["totals"]["gpu_hours"]) == 50
    note = (
        "1 run deleted in MLflow (or in a deleted experiment) counted: deleting a run does "
        "not undo its spend (40.00 GPU-h)"
    )
    assert note in doc["notes"]
    # deleted while running: MLflow ends no deleted run, so it was charged up to now for ever
    # (and the reconciliation could never be recorded)
    open_one = lab.log(trial=2, start=2, hours=None)
    lab.client.delete_run(open_one)
    _, doc = lab.json("--dry-run")
    assert doc["totals"]["runs"] == 2 and Decimal(doc["totals"]["gpu_hours"]) == 50
    assert (
        "1 run deleted in MLflow before they ended, not counted: what they held is not known"
        in "\n".join(doc["notes"])
    )
    lab.client.delete_experiment(lab.experiment_id)
    code, out, err = lab.reconcile("--dry-run")
    assert code == 0, err
    assert "2 runs deleted in MLflow (or in a deleted experiment) counted" in out


def test_a_qualified_run_that_ended_within_an_epoch_is_said(lab):
    """A job that logs a passing metric on a run of a millisecond made a qualified model for
    nothing (cost per qualified model halved), without a word."""
    lab.log(hours=10, metrics=GOOD)
    _, doc = lab.json("--dry-run")
    assert not any("sooner than one epoch" in note for note in doc["notes"])
    lab.log(trial=1, start=11, hours=1 / 3_600_000, metrics=GOOD)
    _, doc = lab.json("--dry-run")
    assert doc["totals"]["qualified"] == 2
    assert (
        "1 qualified run ended sooner than one epoch at the priced epoch time (60.00 min): a "
        "model that trained no epoch is its job's word" in "\n".join(doc["notes"])
    )


def test_the_ledger_experiment_is_never_read_as_runs(lab):
    # A spec whose tracking experiment is the ledger's own: its records are not training runs.
    text = Path(lab.spec).read_text().replace(lab.experiment + "}", "budget-gate-ledger}")
    Path(lab.spec).write_text(text)
    approve(lab, "100")
    code, out, err = lab.reconcile("--dry-run")
    assert code == 3 and out == ""
    assert "tracking.mlflow_experiment is the ledger's experiment 'budget-gate-ledger'" in err


def test_a_run_that_sets_the_ledgers_kind_tag_is_still_counted(lab):
    """The tag is a training job's to write: it no longer takes a run out of reconcile."""
    lab.log(hours=10, metrics=GOOD)
    hidden = lab.log(trial=1, start=1, hours=5, metrics=GOOD)
    lab.client.set_tag(hidden, "budget_gate.kind", "approval")
    _, doc = lab.json("--dry-run")
    assert hidden in {run["run_id"] for run in doc["runs"]} and len(doc["runs"]) == 2


def test_the_sqlite_store_gives_the_same_answer_as_the_server(lab, mlflow_server):
    lab.log(hours=10, metrics=GOOD, history={"val_loss": [3, 2, 1, 1, 1]})
    lab.log(trial=1, start=1, hours=5, status="KILLED", metrics=GOOD)
    _, over_http = lab.json("--dry-run")
    _, from_file = lab.json("--dry-run", uri=mlflow_server.sqlite_uri)
    for doc in (over_http, from_file):
        doc.pop("mlflow")
    assert from_file == over_http
    assert over_http["runs"][0]["epochs"] == 5 and over_http["runs"][0]["plateau_epoch"] == 3


def test_plateau_waste_through_the_cli(lab):
    history = [1.0 - 0.1 * e for e in range(6)] + [0.5] * 34  # 40 epochs, flat after 6
    spec = lab.write_spec(trials=1, epochs=40)
    lab.log(spec, hours=40, metrics=GOOD, history={"val_loss": history})
    code, doc = lab.json("--dry-run", "--min-delta", "0.001", spec=spec)
    assert code == 0
    [run] = doc["runs"]
    assert (run["epochs"], run["plateau_epoch"], run["epochs_after_plateau"]) == (40, 6, 34)
    plateau = next(w for w in doc["waste"] if w["kind"] == "epochs-after-plateau")
    assert Decimal(plateau["cost"]) == 340
    assert doc["monitor"] == {
        "metric": "val_loss",
        "mode": "min",
        "min_delta": 0.001,
        "source": "command line",
        "accepted_return": "the larger of 0.1 % of its value and min_delta 0.001 per 10 epochs",
    }


def test_an_unknown_experiment_is_bad_input(lab):
    text = Path(lab.spec).read_text().replace(lab.experiment + "}", "nowhere}")
    Path(lab.spec).write_text(text)
    code, out, err = lab.reconcile()
    assert code == 3 and out == ""
    assert "has no experiment 'nowhere'" in err and "mlflow.set_experiment('nowhere')" in err


def test_an_invalid_spec_is_exit_3(lab):
    Path(lab.spec).write_text("apiVersion: budget-gate/v1\nkind: Experiment\n")
    code, _, err = lab.reconcile()
    assert code == 3 and "missing required key 'metadata'" in err


@pytest.mark.parametrize("value", ["-1", "nan", "x", "inf"])
def test_a_bad_min_delta_is_a_usage_error(lab, value):
    code, _, err = lab.reconcile("--min-delta", value)
    assert code == 3 and "is not a number >= 0" in err


def test_markdown_format_on_stdout(lab):
    lab.log(hours=10, metrics=GOOD)
    code, out, _ = lab.reconcile("--format", "markdown", "--dry-run")
    assert code == 0
    assert out.startswith("<!-- budget-gate:reconcile:")
    assert "## ✅ budget-gate reconcile: 100.00 USD per qualified model" in out
    assert "```mermaid\nxychart-beta" in out


def test_runs_of_an_older_version_on_another_accelerator_are_priced_at_its_price(lab):
    # The team's policy prices L4 at 10; H100 comes from the packaged catalog.
    lab.log(hours=10, metrics=GOOD)
    older = Path(lab.write_spec(trials=5))
    older.write_text(older.read_text().replace("L4", "H100"))
    lab.log(str(older), trial=9, hours=2, metrics=GOOD)
    code, doc = lab.json("--dry-run", "--all-versions")
    h100 = next(r for r in doc["runs"] if r["fingerprint"] == fingerprint_of(str(older)))
    assert h100["notes"] == ["ran on H100 on-demand: charged at its own price"]
    dearest = max(c["on-demand"] for c in load_catalog().prices["H100"].values())
    # no cloud named: the dearest cloud's median, to the cent as the JSON writes money
    assert Decimal(h100["cost"]) == (2 * dearest).quantize(Decimal("0.01"))
    assert code == 0


SEED_SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {{name: {name}, team: {team}, owner: carol, labels: {{cost-center: {cc}}}}}
resources: {{accelerator: A100, gpus_per_trial: 8, precision: bf16}}
workload: {{max_epochs: 400, epoch_minutes: 6}}
search: {{strategy: random, max_trials: 64}}
tracking: {{mlflow_experiment: {name}}}
"""


def test_the_seed_case_prices_85_percent_as_post_plateau_waste(lab):
    """DOMAIN.md H through a real server: 64 runs × 8 A100 × 400 epochs, flat after 60."""
    spec = lab.team.root / "seed.yaml"
    spec.write_text(
        SEED_SPEC.format(name=lab.experiment, team=lab.team.name, cc=lab.team.cost_center),
        encoding="utf-8",
    )
    curve = seed_curve.history()
    for trial in range(64):  # 400 epochs of 6 minutes: 40 h each
        lab.log(str(spec), trial=trial, start=trial * 0.01, hours=40, history={"val_loss": curve})
    code, doc = lab.json("--dry-run", spec=str(spec))
    assert code == 0, doc["verdict"]
    assert {(r["epochs"], r["plateau_epoch"]) for r in doc["runs"]} == {(400, 60)}
    plateau = next(w for w in doc["waste"] if w["kind"] == "epochs-after-plateau")
    total = Decimal(doc["totals"]["cost"])
    share = Decimal(plateau["cost"]) / total
    assert round(share, 6) == Decimal("0.85")  # both figures rounded to the cent
    assert plateau["runs"] == 64
    assert "stopped paying after epoch 60 (median)" in plateau["detail"]
    assert "85.0 % of their training cost" in plateau["detail"]
    assert doc["monitor"]["accepted_return"] == "0.1 % of its value per 10 epochs"
    _, text, _ = lab.reconcile("--dry-run", spec=str(spec))
    assert "stopped paying after epoch 60" in text and "85.0 % of their training cost" in text
    # After the last CLI call, which reads (and so swallows) the captured output.
    print(f"\nseed case: plateau waste {plateau['cost']} of {total} USD ({share:.1%})")


def test_the_quality_curve_counts_qualified_models_only(lab):
    """A finished run that fails the gate (no per-class recall) is no model, whatever its
    val_macro_f1: the 100 spent after the first model bought the better qualified one."""
    lab.log(trial=0, start=0, hours=10, metrics={**GOOD, "val_macro_f1": 0.85})
    lab.log(trial=1, start=1, hours=10, metrics={"val_macro_f1": 0.95})  # fails the gate
    lab.log(trial=2, start=2, hours=10, metrics={**GOOD, "val_macro_f1": 0.9})
    code, out, err = lab.reconcile("--dry-run")
    assert code == 0, err
    assert (
        "quality against cost: best qualified model val_macro_f1 0.9 reached after 300.00 USD "
        "of 300.00 USD (every run's cost counted)\n"
    ) in out
    assert "0.95" not in out.split("quality against cost")[1]
    _, doc = lab.json("--dry-run")
    curve = doc["quality_curve"]
    assert [p["best"] for p in curve["points"]] == [0.85, 0.85, 0.9]
    assert [p["cost"] for p in curve["points"]] == ["100.00", "200.00", "300.00"]
    assert curve["best_reached_at_cost"] == "300.00" and curve["qualified_only"] is True
    assert doc["totals"]["cost_per_qualified_model"] == "150.00"  # the unqualified run counts
    _, markdown, _ = lab.reconcile("--dry-run", "--format", "markdown")
    assert "### Quality against cost (qualified models)" in markdown
    assert "Best qualified model val\\_macro\\_f1 0.9 reached after 300.00 USD" in markdown


def test_no_runs_of_this_version_is_said_in_every_report_not_only_on_stderr(lab):
    """After an edit the new version has no runs: the text, the PR comment (Markdown) and
    the JSON say how many runs of other versions there are, and name --all-versions."""
    for trial in range(3):
        lab.log(trial=trial, start=trial, hours=1, metrics=GOOD)
    edited = lab.write_spec(trials=7)
    note = (
        f"no runs of this version ({fingerprint_of(edited)[:19]}) in MLflow experiment "
        f"{lab.experiment}; 3 run(s) of 1 other version(s) are there — pass --all-versions "
        "to reconcile them"
    )
    code, out, err = lab.reconcile("--dry-run", spec=edited)
    assert code == 1
    assert f"\nnote: {note}\n" in out and f"budget-gate: {note}" in err
    _, markdown, _ = lab.reconcile("--dry-run", "--format", "markdown", spec=edited)
    [said] = [line for line in markdown.splitlines() if "other version(s)" in line]
    assert said.startswith("> ℹ️ no runs of this version") and "all-versions" in said
    _, doc = lab.json("--dry-run", spec=edited)
    assert doc["other_versions"] == {
        "runs": 3,
        "versions": 1,
        "untagged": 0,
        "gpu_hours": None,
        "note": note,
    }
    assert doc["notes"][-1] == note
    _, every = lab.json("--dry-run", "--all-versions", spec=edited)
    assert every["other_versions"] is None and every["totals"]["runs"] == 3


def test_json_figures_at_checks_places_and_percentages_at_one_decimal(lab):
    """Money to the cent, hours to 4 places, the price to 5, as check's JSON writes the same
    estimate; the text's percentages all have one decimal (not "+15 %" beside "+64.3 %")."""
    lab.log(trial=0, hours=10, metrics=GOOD)
    lab.log(trial=1, start=1, hours=20, metrics=GOOD)  # 300 against a worst case of 600
    code, out, err = lab.reconcile("--dry-run")
    assert code == 0, err
    assert "worst-case estimate: 600.00 USD, 60.00 GPU-h (actual −50.0 %)" in out
    assert "limit: 660.00 USD = worst-case estimate + 10.0 % tolerance" in out
    _, doc = lab.json("--dry-run")
    assert (doc["totals"]["cost"], doc["totals"]["gpu_hours"]) == ("300.00", "30.0000")
    assert (doc["variance"]["limit"], doc["runs"][0]["held_hours"]) == ("660.00", "10.0000")
    assert doc["totals"]["hours_to_first_qualified_model"] == "10.0000"
    code, out, err = lab.team.cli("check", lab.spec, "--format", "json")
    worst = json.loads(out)["results"][0]["estimate"]["worst"]
    assert doc["variance"]["worst"] == worst["cost"] == "600.00"
    assert doc["variance"]["worst_gpu_hours"] == worst["gpu_hours"]
    assert doc["price"]["per_gpu_hour"] == worst["drivers"]["price_per_gpu_hour"] == "10.00000"


def test_a_metric_logged_as_infinity_qualifies_no_model(lab):
    """MLflow stores a logged inf as float max: a job logging val_macro_f1 = inf made a
    qualified model of a run that trained nothing."""
    lab.log(hours=1, metrics={**GOOD, "val_macro_f1": math.inf})
    lab.log(trial=1, start=1, hours=1, metrics=GOOD)
    [run] = [
        r for r in lab.client.search_runs([lab.experiment_id]) if r.data.metrics["val_macro_f1"] > 1
    ]
    assert run.data.metrics["val_macro_f1"] == sys.float_info.max  # what MLflow kept
    _, doc = lab.json("--dry-run")
    assert (doc["totals"]["runs"], doc["totals"]["qualified"]) == (2, 1)
