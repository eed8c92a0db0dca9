"""BG307 cap-stops-every-trial: a per-trial cap ends even the furthest trial early."""

from __future__ import annotations

from decimal import Decimal

from gate.policy.model import Severity
from gate.policy.rules import cap_stops_every_trial
from gate.policy.rules.base import RuleContext
from tests.conftest import TODAY, make_estimate, make_policy, make_spec, run_rule


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
        "no trial finishes its epochs: max_trial_hours 0.75 h stops even the furthest one after "
        "7.50 of 10 epochs (0.75 h held; a whole trial needs 1.00 h), so no finished model"
    )
    assert violation.path == ("stopping", "max_trial_hours")


def test_a_cost_cap_points_at_max_trial_cost():
    # 1 h on 1 GPU at 4/GPU-h is 4; a cap of 2 buys half of it.
    spec = make_spec({"stopping": {"max_trial_cost": 2}})
    [violation] = run_rule(cap_stops_every_trial, spec)
    assert violation.path == ("stopping", "max_trial_cost")
    assert "max_trial_cost 2.00 USD stops" in violation.message
    assert "after 5.00 of 10 epochs (0.50 h held, 2.00 USD; a whole trial costs 4.00 USD)" in (
        violation.message
    )


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
    # the top rung's trial trains 27 epochs of 1 h, resumed: 27 h uncut
    assert "after 20.00 of 27 epochs (20.00 h held; a whole trial needs 27.00 h)" in (
        violation.message
    )


def test_on_spot_the_hour_cap_that_binds_is_named_not_the_cost_cap():
    # Issue 22: 8 × A100 on spot, 10 epochs of 3 h, max_trial_hours 24 and no cost cap.
    # Preemptions stretch the held time, so the cut falls a hair under 24 h: the old rule
    # then named max_trial_cost, which the spec does not set.
    spec = make_spec(
        {
            "resources": {"gpus_per_trial": 8, "capacity": "spot", "checkpoint_every_minutes": 30},
            "workload": {"max_epochs": 10, "epoch_minutes": 180},
            "stopping": {"max_trial_hours": 24},
        }
    )
    [violation] = run_rule(cap_stops_every_trial, spec)
    assert violation.path == ("stopping", "max_trial_hours")
    assert violation.message.startswith(
        "no trial finishes its epochs: max_trial_hours 24 h stops even the furthest one"
    )
    assert "max_trial_cost" not in violation.message


def test_the_cap_a_whole_trial_needs_is_rounded_up():
    spec = make_spec({"stopping": {"max_trial_hours": 0.75}})  # 1 h needed
    assert cap_stops_every_trial.needed_cap(_ctx(spec)) == Decimal("1.0")
    spec = make_spec({"stopping": {"max_trial_cost": 2}})  # 4.00 at 4 a GPU-hour
    assert cap_stops_every_trial.needed_cap(_ctx(spec)) == Decimal(4)
    spec = make_spec({"workload": {"epoch_minutes": 6.1}, "stopping": {"max_trial_cost": 2}})
    # 10 × 6.1 min = 1.01667 h × 4 = 4.0667: up to the next whole unit
    assert cap_stops_every_trial.needed_cap(_ctx(spec)) == Decimal(5)
    assert cap_stops_every_trial.needed_cap(_ctx(make_spec())) is None


def _ctx(spec):
    policy = make_policy()
    return RuleContext(spec, make_estimate(spec, policy), policy, "exp/spec.yaml", TODAY)
