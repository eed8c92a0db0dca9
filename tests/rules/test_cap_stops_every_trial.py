"""BG307 cap-stops-every-trial: a per-trial cap ends even the furthest trial early."""

from __future__ import annotations

from gate.policy.model import Severity
from gate.policy.rules import cap_stops_every_trial
from tests.conftest import make_spec, run_rule


def test_constants():
    assert cap_stops_every_trial.ID == "BG307"
    assert cap_stops_every_trial.DEFAULT_SEVERITY is Severity.ERROR


def test_a_cap_above_the_trial_passes():
    # 3 epochs of 20 min = 1 h under a 2 h cap (the docstring's passing example).
    spec = make_spec(
        {"workload": {"max_epochs": 3, "epoch_minutes": 20}, "stopping": {"max_trial_hours": 2}}
    )
    assert run_rule(cap_stops_every_trial, spec) == []


def test_an_hour_cap_below_the_trial_fails_and_says_where():
    # 10 epochs of 6 min = 1 h; the cap of 0.75 h stops every trial after 7.5 epochs.
    spec = make_spec({"stopping": {"max_trial_hours": 0.75}})
    [violation] = run_rule(cap_stops_every_trial, spec)
    assert violation.message == (
        "no trial finishes its epochs: max_trial_hours stops even the furthest one after "
        "7.50 epochs (0.75 h held), so no finished model"
    )
    assert violation.path == ("stopping", "max_trial_hours")


def test_a_cost_cap_points_at_max_trial_cost():
    # 1 h on 1 GPU at 4/GPU-h is 4; a cap of 2 buys half of it.
    spec = make_spec({"stopping": {"max_trial_cost": 2}})
    [violation] = run_rule(cap_stops_every_trial, spec)
    assert violation.path == ("stopping", "max_trial_cost")
    assert "after 5.00 epochs (0.50 h held)" in violation.message


def test_early_stopping_before_the_cap_passes():
    # The plateau at 5 + patience 1 ends trials at epoch 6 (0.6 h): a 0.75 h cap never bites
    # in the expected case, although it cuts the worst case's 10 epochs.
    spec = make_spec(
        {
            "stopping": {
                "max_trial_hours": 0.75,
                "early_stopping": {
                    "monitor": "val_loss",
                    "patience": 1,
                    "expected_plateau_epoch": 5,
                },
            }
        }
    )
    assert run_rule(cap_stops_every_trial, spec) == []


def test_asha_whose_top_rung_is_cut_fails():
    # Pruned trials stop below the cap, but every trial that reaches the last rung is cut.
    spec = make_spec(
        {
            "workload": {"max_epochs": 27, "epoch_minutes": 60},
            "search": {"strategy": "asha", "max_trials": 27, "scheduler": {"min_epochs": 1}},
            "stopping": {"max_trial_hours": 20},
        }
    )
    [violation] = run_rule(cap_stops_every_trial, spec)
    assert "after 20.00 epochs (20.00 h held)" in violation.message
