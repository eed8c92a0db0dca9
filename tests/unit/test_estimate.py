"""Estimate: worked numbers, stop-condition caps, concurrency, and properties."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import make_estimate, make_policy, make_spec

D = Decimal


def test_trial_time_is_setup_plus_epochs_times_epoch_time_times_eval_overhead():
    # 12 min setup + 20 epochs × 6 min × 1.25 = 0.2 h + 2.5 h = 2.7 h per trial.
    spec = make_spec(
        {
            "workload": {
                "max_epochs": 20,
                "epoch_minutes": 6,
                "setup_minutes": 12,
                "eval_overhead": 0.25,
            }
        }
    )
    worst = make_estimate(spec, price="4").worst
    assert worst.hours_per_trial == D("2.7")
    assert worst.gpu_hours == D("10.8")  # 4 trials × 1 GPU × 2.7 h
    assert worst.cost == D("43.2")
    assert worst.cost_per_trial == D("10.8")


def test_epoch_time_from_throughput():
    # 1,440,000 samples at 400 samples/s = 3,600 s = 1 h per epoch.
    spec = make_spec(
        {
            "workload": {
                "max_epochs": 2,
                "epoch_minutes": None,
                "samples_per_second": 400,
                "train_samples": 1_440_000,
            }
        }
    )
    assert make_estimate(spec).worst.hours_per_trial == D(2)


def test_max_trial_hours_caps_each_trial_and_says_so():
    spec = make_spec({"workload": {"max_epochs": 100}, "stopping": {"max_trial_hours": 3}})
    worst = make_estimate(spec).worst
    assert worst.hours_per_trial == D(3)
    # 6-minute epochs: 3 h is 30 of the 100 epochs, and no trial gets further.
    assert worst.epochs_per_trial == 30 and worst.epochs_trained == D(30) and worst.unfinished
    assert (
        "max_trial_hours 3.00 h stops trials at 3.00 h held, after epoch 30 of 100; "
        "no trial finishes its epochs, so no finished model"
    ) in worst.assumptions
    assert (
        "no early stopping: trials run until max_trial_hours stops them, before all 100 epochs"
        in worst.assumptions
    )


def test_max_trial_cost_caps_each_trial():
    # 10 h uncapped at 2 GPUs × 4/GPU-h = 80 per trial; capped at 20 → 2.5 h.
    spec = make_spec(
        {
            "resources": {"gpus_per_trial": 2},
            "workload": {"max_epochs": 100},
            "stopping": {"max_trial_cost": 20},
        }
    )
    worst = make_estimate(spec).worst
    assert worst.hours_per_trial == D("2.5")
    assert worst.cost_per_trial == D(20)


def test_expected_case_follows_the_plateau_and_patience():
    # max_epochs 40, plateau at 0.5 × 40 = 20, patience 5 → stops at epoch 25 of 6 min = 2.5 h.
    spec = make_spec(
        {
            "workload": {"max_epochs": 40},
            "stopping": {"early_stopping": {"monitor": "val_loss", "patience": 5}},
        }
    )
    est = make_estimate(spec)
    assert est.worst.epochs_per_trial == 40
    assert est.expected.epochs_per_trial == 25
    assert est.expected.hours_per_trial == D("2.5")
    assert any("plateau_fraction 0.5" in a for a in est.expected.assumptions)


def test_spec_plateau_epoch_wins_over_the_policy_fraction():
    spec = make_spec(
        {
            "workload": {"max_epochs": 40},
            "stopping": {
                "early_stopping": {
                    "monitor": "val_loss",
                    "patience": 3,
                    "expected_plateau_epoch": 10,
                }
            },
        }
    )
    assert make_estimate(spec).expected.epochs_per_trial == 13


def test_waves_and_wall_clock():
    # 10 trials, 3 at a time → 4 waves × 1 h.
    spec = make_spec({"search": {"max_trials": 10, "max_concurrent_trials": 3}})
    worst = make_estimate(spec).worst
    assert (worst.concurrency, worst.waves, worst.wall_clock_hours) == (3, 4, D(4))


def test_team_concurrent_gpu_limit_slows_the_wall_clock():
    # 8 trials of 4 GPUs, 8 at a time wanted, but 16 GPUs allowed → 4 at a time, 2 waves.
    spec = make_spec(
        {
            "resources": {"gpus_per_trial": 4},
            "search": {"max_trials": 8, "max_concurrent_trials": 8},
        }
    )
    worst = make_estimate(spec, make_policy({"limits": {"max_concurrent_gpus": 16}})).worst
    assert (worst.concurrency, worst.waves) == (4, 2)
    assert any("16 concurrent GPUs" in a for a in worst.assumptions)


def test_drivers_multiply_to_the_cost():
    est = make_estimate(make_spec({"resources": {"gpus_per_trial": 2}}), price="3.5")
    d = est.worst.drivers
    assert d.trials * d.gpus_per_trial * d.hours_per_trial * d.price_per_gpu_hour == est.worst.cost


def test_every_scenario_lists_its_assumptions():
    est = make_estimate(make_spec())
    assert est.worst.assumptions[0] == "4 trials (random max_trials 4 × 1 seed)"
    assert "every trial runs all 10 epochs (nothing stops early)" in est.worst.assumptions
    assert "every trial runs all 10 epochs (nothing stops early)" in est.expected.assumptions


def test_a_spot_preemption_rate_left_at_its_default_is_said_to_be_one():
    """0.01 an hour is no measurement: the assumption names it as the policy's default."""
    spot = {"resources": {"capacity": "spot", "checkpoint_every_minutes": 30}}
    said = " ".join(make_estimate(make_spec(spot)).worst.assumptions)
    assert "spot: 0.01 preemptions per hour (the policy default spot.preemptions_per_hour" in said
    stated = make_policy({"spot": {"preemptions_per_hour": 0.05}})
    said = " ".join(make_estimate(make_spec(spot), stated).worst.assumptions)
    assert "spot: 0.05 preemptions per hour, checkpoints every 30 min" in said


_drivers = st.fixed_dictionaries(
    {
        "trials": st.integers(1, 10_000),
        "gpus": st.integers(1, 16),
        "epochs": st.integers(1, 500),
        "epoch_minutes": st.floats(0.1, 600, allow_nan=False),
        "setup": st.floats(0, 120, allow_nan=False),
        "overhead": st.floats(0, 0.5, allow_nan=False),  # doubled, still ≤ 1
        "patience": st.integers(1, 50),
        "price": st.decimals("0.01", "100", places=2),
    }
)


def _spec_from(d, **bump):
    d = {**d, **bump}
    return make_spec(
        {
            "resources": {"gpus_per_trial": d["gpus"]},
            "workload": {
                "max_epochs": d["epochs"],
                "epoch_minutes": d["epoch_minutes"],
                "setup_minutes": d["setup"],
                "eval_overhead": d["overhead"],
            },
            "search": {"max_trials": d["trials"]},
            "stopping": {"early_stopping": {"monitor": "val_loss", "patience": d["patience"]}},
        }
    )


@settings(max_examples=150, deadline=None)
@given(_drivers)
def test_worst_is_at_least_expected_and_both_non_negative(d):
    est = make_estimate(_spec_from(d), price=str(d["price"]))
    assert est.worst.cost >= est.expected.cost >= 0
    assert est.worst.gpu_hours >= est.expected.gpu_hours >= 0
    assert est.worst.wall_clock_hours >= est.expected.wall_clock_hours >= 0


@settings(max_examples=100, deadline=None)
@given(
    _drivers, st.sampled_from(["trials", "gpus", "epochs", "epoch_minutes", "setup", "overhead"])
)
def test_cost_is_monotone_in_every_driver(d, driver):
    bigger = d[driver] * 2 if d[driver] else 1
    base = make_estimate(_spec_from(d), price=str(d["price"]))
    more = make_estimate(_spec_from(d, **{driver: bigger}), price=str(d["price"]))
    assert more.worst.cost >= base.worst.cost
    assert more.expected.cost >= base.expected.cost


@settings(max_examples=50, deadline=None)
@given(_drivers)
def test_cost_is_monotone_in_price(d):
    low = make_estimate(_spec_from(d), price=str(d["price"]))
    high = make_estimate(_spec_from(d), price=str(d["price"] * 2))
    assert high.worst.cost >= low.worst.cost
