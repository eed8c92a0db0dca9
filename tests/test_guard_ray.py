"""The guard in a real Ray Tune search (``Tuner`` on ``ray.init(num_cpus=2)``).

Ray probes the network at start (a DNS lookup for the node address, a cloud metadata
probe), so the search runs in a network namespace with only loopback up (``unshare --net``
and ``ip link set lo up``, as root, as CI runs) with the node address 127.0.0.1: no packet
leaves the machine. The child (``tests/ray_guard_run.py``) turns warnings into errors as the
suite does.
"""

from __future__ import annotations

import json
import os
import re
import sys
from decimal import Decimal

import pytest

from tests.conftest import ROOT
from tests.netns import run_on_loopback

EPOCH_COST = Decimal("1.6")
WALL = Decimal("2")
"""The most the driver's time of trials that have not reported yet may add (4 minutes held)."""


def _usd(text: str) -> Decimal:
    """A spend to a millionth of a USD.

    NOTE: the driver's wall time charged at each step before a report is then replaced by
    the larger figure reported, and the float sums of GPU-seconds drift by far less.
    """
    return round(Decimal(text), 6)


@pytest.fixture(scope="module")
def searches(tmp_path_factory):
    storage = tmp_path_factory.mktemp("ray")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0"}
    done = run_on_loopback(f"{sys.executable} -m tests.ray_guard_run {storage}", env, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_search_of_8_trials_stops_at_the_ceiling(searches):
    assert searches["unraisable"] == [], searches["unraisable"]
    budget = searches["budget"]
    spend, ceiling = Decimal(budget["spend"]), Decimal(budget["ceiling"])
    overshoot = spend - ceiling
    print(
        f"\nray tune, 8 trials (2 at a time): {budget['started']} started, "
        f"{budget['epochs']} epochs, spend {spend:.2f} USD at a ceiling of {ceiling:.2f} USD, "
        f"overshoot {overshoot:.2f} USD"
    )
    assert budget["errors"] == 0, budget  # fit() does not raise: each trial's error is counted
    # NOTE: a trial started but not yet reporting (its actor starting, seconds to a minute on
    # a loaded machine) is charged the driver's time since its start: the spend that reaches
    # the ceiling, and the overshoot, may pass it by that time's cost (WALL).
    found = re.fullmatch(
        r"spend (\d+\.\d\d) USD reaches the approved amount \(approval-run-1\) 64\.00 USD",
        budget["stop"],
    )
    assert found is not None, budget
    assert ceiling <= Decimal(found[1]) <= ceiling + WALL, budget
    # At most one report per running trial (2) past the ceiling, and not short of it.
    assert 0 <= overshoot <= 2 * EPOCH_COST + WALL, budget
    assert budget["started"] < 8 and "budget" in budget["stops"], budget


def test_failed_trials_in_a_row_stop_the_search(searches):
    failing = searches["failing"]
    assert failing["stop"] == "3 failed trials in a row (policy: at most 3)"
    # The errors are the trainable's own (this search fails on purpose); Tune started no
    # more than the trials already running when the third one failed.
    assert failing["errors"] == 3 and failing["started"] <= 4


def test_a_restored_search_carries_on_from_what_the_guard_counted(searches):
    restored = searches["restored"]
    assert restored["first_errors"] == 2 and _usd(restored["first_spend"]) == Decimal("44.8")
    # The reruns train from epoch 1 again, each a new attempt whose epochs all count. With
    # 44.80 USD carried over they stop once 12 more epochs reach the 64.00 ceiling, give or
    # take one report per running trial; counted afresh, both would have trained all 12
    # epochs (24 more).
    more = sum(restored["retried_epochs"])
    assert 12 <= more <= 12 + 2, restored
    assert restored["errors"] == 0


def test_each_retry_of_a_trial_is_charged_for_what_it_trains(searches):
    """Tune retries a failed trial from scratch (FailureConfig): each run reports its own
    held seconds from 0, and each is an attempt whose GPU time adds to the others'. Two
    trials × (2 + 2 + 12 epochs) at 1.60 USD: 51.20 USD, not the 38.40 of their last runs."""
    retried = searches["retried"]
    assert _usd(retried["spend"]) == 32 * EPOCH_COST, retried
    assert retried["stop"] == ""  # four retried runs, no failed trial (policy: 3 in a row)


def test_a_trainable_that_reports_no_time_held_is_charged_the_drivers_wall_time(searches):
    """Two trainables hold 8 GPUs an hour per iteration (on the driver's clock) and report
    0 s held, one as ``budget_gate_held_seconds``, one as ``time_this_iter_s``: taken at
    their word, neither was ever stopped (20 iterations each, 0 USD counted). The driver's
    own count stops both at max_trial_hours 3 (48 USD each at 16 USD an hour)."""
    lied = searches["lied"]
    assert lied["errors"] == 0 and lied["stops"] == ["max-trial-hours"] * 2, lied
    assert all(1 <= epochs <= 6 for epochs in lied["epochs"]), lied
    assert Decimal(lied["spend"]) >= 2 * 48, lied
