"""What the estimate says beside its figures: nothing that changes a verdict goes unsaid.

The acceptance test's findings on ``check`` and ``estimate`` output: the queue wait in the
wall-clock (D2), the scenario the limits judge and a converted price (D3), the worst
case's stop line beside a cap or a halving search's rungs (D4), savings without a minus
sign (D5), an unset max_concurrent_trials (D7.1), a clamped spot recompute (D7.3), and
where ``owns.specs`` would go (D7.6).
"""

from __future__ import annotations

import json
import pickle
from decimal import Decimal
from pathlib import Path

import pytest

from gate.cli import main
from gate.estimate.prices import load_catalog, quote
from gate.evaluation.notes import verdict_notes
from gate.spec.trial import Capacity
from tests.conftest import make_estimate, make_policy, make_spec

D = Decimal
DEFAULT = """\
apiVersion: budget-gate/v1
kind: Policy
teams: [nlp, vision]
prices: {overrides: {L4: {on-demand: 1}}}
"""
SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {name: tiny, team: vision, labels: {}}
resources: {accelerator: L4, gpus_per_trial: 1, precision: bf16}
workload: {max_epochs: 10, epoch_minutes: 6}
search: {strategy: random, max_trials: 6, max_concurrent_trials: 3}
stopping: {early_stopping: {monitor: val_loss, patience: 1}}
quality_gate: [{metric: val_f1, op: ">=", value: 0.8}]
"""


def _check(tmp_path: Path, capsys, policy: str, spec: str = SPEC, *extra: str) -> str:
    (tmp_path / "policies").mkdir(exist_ok=True)
    (tmp_path / "policies" / "default.yaml").write_text(policy, encoding="utf-8")
    (tmp_path / "s.yaml").write_text(spec, encoding="utf-8")
    capsys.readouterr()
    code = main(
        ["check", "--policy-dir", str(tmp_path / "policies"), *extra, str(tmp_path / "s.yaml")]
    )
    out = capsys.readouterr().out
    assert code in (0, 1, 2), out
    return out


# --- D2: the queue wait is in the wall-clock, and said ----------------------------------------


def test_a_queue_wait_is_said_with_the_hours_it_adds_to_the_wall_clock():
    # 6 trials, 2 at a time: 3 waves × 2 h of queue = +6 h.
    spec = make_spec({"search": {"max_trials": 6, "max_concurrent_trials": 2}})
    est = make_estimate(spec, make_policy({"estimation": {"queue_wait_hours": 2}}))
    note = "queue wait 2 h per wave (estimation.queue_wait_hours): +6.0 h of the wall-clock"
    assert note in est.worst.assumptions and note in est.expected.assumptions
    assert est.worst.wall_clock_hours == 3 * (1 + 2)
    assert not any("no queue wait" in n for n in est.worst.assumptions)


def test_the_queue_note_says_retries_stretch_the_queue_wait_too():
    # retries: 0.1 × 0.5 = +5 %; 2 waves × 0.5 h × 1.05 = 1.05 h.
    spec = make_spec({"search": {"max_trials": 4, "max_concurrent_trials": 2}})
    policy = make_policy(
        {
            "estimation": {"queue_wait_hours": 0.5},
            "reliability": {"failure_rate": 0.1, "max_retries": 1, "failure_point": 0.5},
        }
    )
    est = make_estimate(spec, policy)
    assert (
        "queue wait 0.5 h per wave (estimation.queue_wait_hours): +1.1 h of the wall-clock "
        "(2 waves × 0.5 h × 1.050: retries stretch the whole wall-clock, queue wait included)"
    ) in est.worst.assumptions
    assert est.worst.wall_clock_hours == 2 * (1 + D("0.5")) * D("1.05")


def test_check_text_names_the_queue_wait_that_passes_the_deadline(tmp_path, capsys):
    policy = DEFAULT + "estimation: {queue_wait_hours: 2}\n"
    out = _check(tmp_path, capsys, policy, SPEC + "deadline_hours: 5\n")
    assert "BG402" in out
    assert "queue wait 2 h per wave (estimation.queue_wait_hours): +4.0 h of the wall-clock" in out


# --- D3: the scenario judged, and a converted price ------------------------------------------


def test_the_estimate_carries_the_scenario_the_limits_judge():
    spec = make_spec()
    assert make_estimate(spec).judged_on == "worst"
    expected = make_policy({"limits": {"scenario": "expected"}})
    est = make_estimate(spec, expected)
    assert est.judged_on == "expected"
    # check's worker processes send estimates back pickled
    assert pickle.loads(pickle.dumps(est)).judged_on == "expected"


def test_check_says_when_limits_judge_the_expected_case_in_text_and_json(tmp_path, capsys):
    policy = DEFAULT + "limits: {scenario: expected}\n"
    out = _check(tmp_path, capsys, policy)
    assert (
        "  judged on: the expected case (the policy's limits.scenario): limits and approval "
        "triggers compare its figures, not the worst case's"
    ) in out
    document = json.loads(_check(tmp_path, capsys, policy, SPEC, "--format", "json"))
    assert document["results"][0]["estimate"]["judged_on"] == "expected"
    markdown = _check(tmp_path, capsys, policy, SPEC, "--format", "markdown")
    assert "Judged on: the expected case" in markdown


def test_the_worst_case_default_adds_no_line_but_json_says_it(tmp_path, capsys):
    assert "judged on" not in _check(tmp_path, capsys, DEFAULT)
    document = json.loads(_check(tmp_path, capsys, DEFAULT, SPEC, "--format", "json"))
    assert document["results"][0]["estimate"]["judged_on"] == "worst"


def test_estimate_says_the_scenario_judged(tmp_path, capsys):
    _check(tmp_path, capsys, DEFAULT + "limits: {scenario: expected}\n")
    capsys.readouterr()
    assert (
        main(["estimate", "--policy-dir", str(tmp_path / "policies"), str(tmp_path / "s.yaml")])
        == 0
    )
    assert "judged on: the expected case" in capsys.readouterr().out


def test_a_converted_catalog_price_says_the_usd_price_and_the_rate():
    policy = make_policy({"currency": "EUR", "prices": {"cloud": "gcp", "usd_exchange_rate": 0.9}})
    found = quote(load_catalog(), policy, "A100", Capacity.ON_DEMAND, "gcp")
    assert found.basis == (
        "catalog median, gcp on-demand; USD catalog price × 0.9, the policy's "
        "prices.usd_exchange_rate"
    )
    usd = quote(load_catalog(), make_policy(), "A100", Capacity.ON_DEMAND, "gcp")
    assert found.per_gpu_hour == usd.per_gpu_hour * D("0.9")
    assert "usd_exchange_rate" not in usd.basis


# --- D4: what stops trials, truthfully --------------------------------------------------------


def test_a_cap_that_stops_trials_is_not_beside_every_trial_runs_all_epochs():
    spec = make_spec(
        {
            "workload": {"max_epochs": 30},
            "stopping": {
                "max_trial_hours": 1,
                "early_stopping": {"monitor": "val_loss", "patience": 2},
            },
        }
    )
    worst = make_estimate(spec).worst
    assert worst.unfinished
    assert not any("every trial runs all" in n for n in worst.assumptions)
    assert (
        "no early stopping: trials run until max_trial_hours stops them, before all 30 epochs"
        in worst.assumptions
    )


def test_a_cost_cap_is_named_as_what_stops_trials():
    spec = make_spec({"workload": {"max_epochs": 30}, "stopping": {"max_trial_cost": 4}})
    worst = make_estimate(spec, price="4").worst
    assert (
        "no early stopping: trials run until max_trial_cost stops them, before all 30 epochs"
        in worst.assumptions
    )


@pytest.mark.parametrize("strategy", ["successive_halving", "hyperband", "asha"])
def test_a_halving_search_says_its_rungs_stop_trials(strategy):
    search = {
        "strategy": strategy,
        "max_trials": 27,
        "scheduler": {"min_epochs": 1, "reduction_factor": 3},
    }
    if strategy == "hyperband":
        search.pop("max_trials")
    spec = make_spec({"workload": {"max_epochs": 27}, "search": search})
    est = make_estimate(spec)
    name = strategy.replace("_", " ")
    # NOTE: ASHA's worst case promotes every trial through every rung: all do run all epochs
    pruned = (est.expected,) if strategy == "asha" else (est.worst, est.expected)
    for scenario in pruned:
        assert not any("nothing stops early" in n for n in scenario.assumptions)
        assert (
            f"no early stopping: trials run until the {name} rungs stop them; only those "
            "promoted to the top rung run all 27 epochs"
        ) in scenario.assumptions
    if strategy == "asha":
        assert "every trial runs all 27 epochs (nothing stops early)" in est.worst.assumptions


def test_early_stopping_after_the_last_epoch_beside_a_cap_says_the_cap_stops_trials():
    spec = make_spec(
        {
            "workload": {"max_epochs": 3},
            "stopping": {
                "max_trial_hours": 0.1,
                "early_stopping": {"monitor": "val_loss", "patience": 2},
            },
        }
    )
    expected = make_estimate(spec).expected
    assert not any("so every trial runs all" in n for n in expected.assumptions)
    assert (
        "val_loss plateaus at epoch 2 (the policy's plateau_fraction 0.5 × 3); early stopping "
        "with patience 2 would end trials after epoch 4, so early stopping stops none: trials "
        "run until max_trial_hours stops them, before all 3 epochs"
    ) in expected.assumptions


def test_a_plain_search_still_says_every_trial_runs_all_epochs():
    worst = make_estimate(make_spec()).worst
    assert "every trial runs all 10 epochs (nothing stops early)" in worst.assumptions


# --- D5: a saving reads as a saving -----------------------------------------------------------


def test_check_prints_a_saving_without_a_minus_sign(tmp_path, capsys):
    out = _check(tmp_path, capsys, DEFAULT)
    saves = [line for line in out.splitlines() if line.startswith("  saves:")]
    assert saves == ["  saves: early stopping 2.4 GPU-h (2.40 USD, expected case)"]
    assert "−" not in saves[0]


# --- D7.1: one trial at a time, said ----------------------------------------------------------


def test_an_unset_max_concurrent_trials_is_said_as_one_at_a_time():
    worst = make_estimate(make_spec()).worst
    assert worst.concurrency == 1 and worst.waves == 4
    assert (
        "one trial at a time: search.max_concurrent_trials is not set (set it to run trials "
        "side by side)"
    ) in worst.assumptions


def test_a_set_max_concurrent_trials_or_a_single_trial_needs_no_such_note():
    for spec in (
        make_spec({"search": {"max_concurrent_trials": 1}}),
        make_spec({"search": {"max_trials": 1}}),
    ):
        assert not any("one trial at a time" in n for n in make_estimate(spec).worst.assumptions)


# --- D7.3: a clamped figure is said as clamped ------------------------------------------------


def test_a_spot_recompute_clamped_at_its_ceiling_is_said_as_a_floor():
    spec = make_spec(
        {
            "resources": {"capacity": "spot"},
            "workload": {"max_epochs": 1000, "epoch_minutes": 600},
            "search": {"max_trials": 1},
        }
    )
    worst = make_estimate(spec, make_policy({"spot": {"preemptions_per_hour": 0.01}})).worst
    [note] = [n for n in worst.assumptions if n.startswith("spot:")]
    assert "at least " in note and "clamped: a run is priced at no more than" in note


def test_an_unclamped_spot_recompute_is_said_plainly():
    spec = make_spec(
        {
            "resources": {"capacity": "spot", "checkpoint_every_minutes": 30},
            "search": {"max_trials": 1},
        }
    )
    worst = make_estimate(spec, make_policy({"spot": {"preemptions_per_hour": 0.1}})).worst
    [note] = [n for n in worst.assumptions if n.startswith("spot:")]
    assert "at least" not in note and "clamped" not in note


# --- D7.6: where owns.specs would go ----------------------------------------------------------


def _ownership_note(team: str, policy_teams: list[str] | None, team_files: tuple[str, ...]) -> str:
    spec = make_spec({"metadata": {"team": team}})
    policy = make_policy({"teams": policy_teams} if policy_teams is not None else {})
    [note] = [n for n in verdict_notes(spec, policy, None, None, team_files) if "owns" in n]
    return note


def test_a_team_with_its_own_file_is_told_to_set_owns_specs_there():
    note = _ownership_note("nlp", ["nlp"], ("nlp",))
    assert "(owns.specs in nlp.yaml)" in note


def test_a_team_only_listed_in_teams_is_told_to_add_its_file():
    note = _ownership_note("nlp", ["nlp", "vision"], ("vision",))
    assert "(team nlp has no policy file: add nlp.yaml with owns.specs)" in note
    assert "owns.specs in nlp.yaml" not in note


def test_a_misspelt_team_is_not_told_to_create_a_file_for_its_typo():
    note = _ownership_note("nlpp", ["nlp"], ())
    assert "nlpp.yaml" not in note
    assert note == (
        "team nlpp is taken as the spec declares it: no policy states which specs it owns, "
        "so any spec may claim it"
    )


def test_estimate_says_what_a_trial_a_cap_cuts_trains_not_zero_epochs(tmp_path, capsys):
    """A 10-hour epoch under max_trial_hours 5: "per trial … 0 epochs, 5.00 h" beside an
    assumption that says half an epoch was trained."""
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "default.yaml").write_text(DEFAULT, encoding="utf-8")
    spec = SPEC.replace("epoch_minutes: 6", "epoch_minutes: 600").replace(
        "stopping: {early_stopping: {monitor: val_loss, patience: 1}}",
        "stopping: {max_trial_hours: 5}",
    )
    (tmp_path / "s.yaml").write_text(spec, encoding="utf-8")
    capsys.readouterr()
    main(["estimate", "--policy-dir", str(tmp_path / "policies"), str(tmp_path / "s.yaml")])
    out = capsys.readouterr().out
    assert "0.50 epochs trained (a cap stops it), 5.00 h" in out and " 0 epochs," not in out
