"""BG305 spot-without-checkpoints: spot capacity with no checkpoint interval (no threshold)."""

from __future__ import annotations

import pytest

from gate.policy.model import Severity
from gate.policy.rules import spot_without_checkpoints
from tests.conftest import make_spec, run_rule


def _resources(**resources):
    return make_spec({"resources": resources})


def test_constants():
    assert (spot_without_checkpoints.ID, spot_without_checkpoints.SLUG) == (
        "BG305",
        "spot-without-checkpoints",
    )
    assert spot_without_checkpoints.DEFAULT_SEVERITY is Severity.WARN


def test_spot_with_checkpoints_passes():
    spec = _resources(capacity="spot", checkpoint_every_minutes=30)
    assert run_rule(spot_without_checkpoints, spec) == []


@pytest.mark.parametrize("capacity", ["on-demand", "reserved"])
def test_non_spot_without_checkpoints_passes(capacity: str):
    assert run_rule(spot_without_checkpoints, _resources(capacity=capacity)) == []


def test_base_spec_passes():
    # Capacity defaults to on-demand.
    assert run_rule(spot_without_checkpoints, make_spec()) == []


def test_spot_without_checkpoints_fails():
    [violation] = run_rule(spot_without_checkpoints, _resources(capacity="spot"))
    assert violation.message == (
        "spot capacity without checkpoint_every_minutes: preemptions restart trials"
    )
    assert violation.path == ("resources", "capacity")
