"""BG306 spot-dearer-than-on-demand: the expected spot net saving is negative."""

from __future__ import annotations

from gate.estimate.scenarios import estimate
from gate.policy.model import Severity
from gate.policy.rules import spot_dearer_than_on_demand
from gate.policy.rules.base import RuleContext
from gate.spec.trial import Capacity
from tests.conftest import TODAY, make_policy, make_quote, make_spec

POLICY = make_policy({"spot": {"preemptions_per_hour": 0.1}})


def _violations(spot_price: str, on_demand_price: str | None, **resources):
    spec = make_spec(
        {
            "resources": {"capacity": "spot", **resources},
            "workload": {"max_epochs": 100, "epoch_minutes": 60},
        }
    )
    on_demand = make_quote(on_demand_price) if on_demand_price else None
    est = estimate(spec, POLICY, make_quote(spot_price, capacity=Capacity.SPOT), on_demand)
    ctx = RuleContext(spec, est, POLICY, "exp/spec.yaml", TODAY)
    return list(spot_dearer_than_on_demand.check(ctx))


def test_constants():
    assert spot_dearer_than_on_demand.ID == "BG306"
    assert spot_dearer_than_on_demand.DEFAULT_SEVERITY is Severity.WARN


def test_checkpointed_spot_at_a_third_of_the_price_passes():
    assert _violations("1", "3", checkpoint_every_minutes=30) == []


def test_spot_without_checkpoints_on_100_hour_trials_fails():
    # λ = 0.1/h over a 100 h run with no checkpoints: (e^10 − 1)/0.1 h ≈ 220,255 h per run.
    [violation] = _violations("1", "3")
    assert violation.message.startswith("spot is expected to cost ")
    assert "more than on-demand" in violation.message
    assert violation.path == ("resources", "capacity")


def test_nothing_to_compare_without_an_on_demand_price():
    assert _violations("1", None) == []


def test_on_demand_capacity_never_fires():
    spec = make_spec({"workload": {"max_epochs": 100, "epoch_minutes": 60}})
    est = estimate(spec, POLICY, make_quote("1"), make_quote("3"))
    ctx = RuleContext(spec, est, POLICY, "exp/spec.yaml", TODAY)
    assert list(spot_dearer_than_on_demand.check(ctx)) == []


def test_extra_ops_alone_make_checkpointed_spot_dearer_and_are_named():
    # 4 trials × 100 h: on demand 1,200 USD; spot 400 USD plus 250 USD of ops a trial.
    spec = make_spec(
        {
            "resources": {"capacity": "spot", "checkpoint_every_minutes": 30},
            "workload": {"max_epochs": 100, "epoch_minutes": 60},
        }
    )
    policy = make_policy({"spot": {"preemptions_per_hour": 0, "extra_ops_per_trial": 250}})
    est = estimate(spec, policy, make_quote("1", capacity=Capacity.SPOT), make_quote("3"))
    ctx = RuleContext(spec, est, policy, "exp/spec.yaml", TODAY)
    [violation] = spot_dearer_than_on_demand.check(ctx)
    assert violation.message == (
        "spot is expected to cost 200.00 USD more than on-demand "
        "(0.00 USD of it recomputing preempted work, 1,000.00 USD in spot's extra ops)"
    )


def test_with_no_cloud_named_spot_is_compared_with_on_demand_on_its_own_cloud(tmp_path, capsys):
    """H100 spot was priced at the dearest spot cloud (azure, 6.98) and compared with the
    dearest on-demand one (gcp, 12.54): a saving of 11.05 USD no cloud offers, and no BG306.
    On azure spot costs what on-demand does, so recomputing preempted work makes it dearer."""
    from gate.cli import main

    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "default.yaml").write_text(
        "apiVersion: budget-gate/v1\nkind: Policy\n", encoding="utf-8"
    )
    spec = tmp_path / "z.yaml"
    spec.write_text(
        "apiVersion: budget-gate/v1\nkind: Experiment\n"
        "metadata: {name: p, team: t, owner: x, labels: {}}\n"
        "resources: {accelerator: H100, gpus_per_trial: 1, capacity: spot, precision: bf16}\n"
        "workload: {max_epochs: 10, epoch_minutes: 6}\n"
        "search: {strategy: random, max_trials: 2}\n"
        "stopping: {max_trial_hours: 48}\n",
        encoding="utf-8",
    )
    main(["check", str(spec), "--policy-dir", str(tmp_path / "policies")])
    out = capsys.readouterr().out
    assert "highest of 3 clouds (azure) spot" in out
    assert "spot costs 0.07 USD against on-demand" in out and "BG306" in out
