"""Per-trial caps that cut training short: where trials stop, what they train, spot vs on-demand.

The case of issue 12: 8 × H100 per trial on spot, 3 epochs of 238 min (setup 15 min, 5 %
evaluation), 16 trials, checkpoints every 30 min and ``max_trial_cost: 300``, priced at the
packaged catalog's AWS medians (8.428 on-demand, 3.32141 spot per GPU-hour).
"""

from __future__ import annotations

from decimal import Decimal

from gate.estimate.prices import load_catalog, quote
from gate.estimate.scenarios import estimate
from gate.money import format_amount
from gate.policy.rules import cap_stops_every_trial, spot_dearer_than_on_demand
from gate.policy.rules.base import RuleContext
from gate.spec.trial import Capacity
from tests.conftest import TODAY, make_policy, make_spec

D = Decimal
POLICY = make_policy({"prices": {"cloud": "aws"}})
SPOT = quote(load_catalog(), POLICY, "H100", Capacity.SPOT, "aws")
ON_DEMAND = quote(load_catalog(), POLICY, "H100", Capacity.ON_DEMAND, "aws")


def _spec(capacity: str = "spot", **stopping):
    return make_spec(
        {
            "resources": {
                "accelerator": "H100",
                "gpus_per_trial": 8,
                "capacity": capacity,
                "checkpoint_every_minutes": 30,
            },
            "workload": {
                "max_epochs": 3,
                "epoch_minutes": 238,
                "setup_minutes": 15,
                "eval_overhead": 0.05,
            },
            "search": {"strategy": "random", "max_trials": 16, "max_concurrent_trials": 8},
            "stopping": stopping,
        }
    )


def _ctx(spec, est):
    return RuleContext(spec, est, POLICY, "exp/spec.yaml", TODAY)


def test_the_issue_case_stops_every_trial_at_300_usd_and_says_where():
    spec = _spec(max_trial_cost=300)
    est = estimate(spec, POLICY, SPOT, ON_DEMAND)
    # 15 min + 3 × 238 min × 1.05 = 12.745 h of training work a trial needs.
    assert estimate(_spec(), POLICY, SPOT, ON_DEMAND).expected.drivers.hours_per_trial > D("12.745")
    expected = est.expected
    # 300 USD ÷ (8 × 3.32141) = 11.29 h held, preemption recompute included.
    assert format_amount(expected.hours_per_trial) == "11.29"
    assert D("299.99") < expected.cost_per_trial <= D(300)  # never over the cap
    assert format_amount(expected.cost) == "4,800.00"
    assert expected.unfinished and expected.epochs_per_trial == 2
    assert format_amount(expected.epochs_trained) == "2.64"
    assert (
        "max_trial_cost 300.00 stops trials at 11.29 h held, in epoch 3 of 3 (2.64 epochs "
        "trained); no trial finishes its epochs, so no finished model"
    ) in expected.assumptions
    assert "every trial runs all 3 epochs" not in " ".join(expected.assumptions)


def test_spot_is_compared_with_on_demand_for_the_same_training_work():
    est = estimate(_spec(max_trial_cost=300), POLICY, SPOT, ON_DEMAND)
    uncapped = estimate(_spec(), POLICY, SPOT, ON_DEMAND)
    # Before: on-demand capped at 300 too (4.45 h of work against spot's 11.29 h) made spot
    # look 24.05 USD dearer. Both sides now price the plan's 3 epochs, caps left out.
    assert est.spot == uncapped.spot
    assert est.spot is not None
    assert format_amount(est.spot.on_demand_cost) == "13,749.10"
    assert format_amount(est.spot.net_saving) == "8,303.54"
    assert list(spot_dearer_than_on_demand.check(_ctx(_spec(max_trial_cost=300), est))) == []
    assert (
        "spot is compared with on-demand for the same training work: per-trial caps left out"
        in est.expected.assumptions
    )


def test_the_issue_case_raises_bg307():
    spec = _spec(max_trial_cost=300)
    [violation] = cap_stops_every_trial.check(_ctx(spec, estimate(spec, POLICY, SPOT, ON_DEMAND)))
    assert violation.path == ("stopping", "max_trial_cost")
    assert (
        "max_trial_cost 300.00 USD stops even the furthest one after 2.64 of 3 epochs "
        "(11.29 h held, 300.00 USD; a whole trial costs 340.35 USD)"
    ) in violation.message


def test_on_demand_under_the_same_cap_stops_sooner():
    spec = _spec("on-demand", max_trial_cost=300)
    est = estimate(spec, POLICY, ON_DEMAND)
    # 300 ÷ (8 × 8.428) = 4.449 h: (4.449 − 0.25) / 4.165 = 1.01 epochs.
    assert format_amount(est.expected.hours_per_trial, 3) == "4.449"
    assert format_amount(est.expected.epochs_trained) == "1.01"
    assert est.expected.cost_per_trial <= D(300)


def test_recompute_never_lands_on_top_of_a_cost_cap():
    # Without checkpoints a preemption restarts the run: the stretch grows with the run, and
    # the cap still holds the trial, recompute included, to 300.
    spec = make_spec(
        {
            "resources": {"accelerator": "H100", "gpus_per_trial": 8, "capacity": "spot"},
            "workload": {"max_epochs": 3, "epoch_minutes": 238},
            "stopping": {"max_trial_cost": 300},
        }
    )
    policy = make_policy({"prices": {"cloud": "aws"}, "spot": {"preemptions_per_hour": 0.2}})
    est = estimate(spec, policy, SPOT, ON_DEMAND)
    for scenario in (est.worst, est.expected):
        assert scenario.cost_per_trial <= D(300)
        assert scenario.recompute_gpu_hours > 0
        assert scenario.cost <= 4 * D(300)


def test_a_cap_that_does_not_bind_changes_nothing():
    est = estimate(_spec(max_trial_cost=10_000), POLICY, SPOT, ON_DEMAND)
    uncapped = estimate(_spec(), POLICY, SPOT, ON_DEMAND)
    assert est.expected.cost == uncapped.expected.cost
    assert not est.expected.unfinished and est.expected.epochs_per_trial == 3
