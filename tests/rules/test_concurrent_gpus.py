"""BG105 concurrent-gpus: peak GPUs held at once over limits.max_concurrent_gpus."""

from __future__ import annotations

from gate.policy.model import Severity
from gate.policy.rules import concurrent_gpus
from tests.conftest import make_policy, make_spec, run_rule

PATH = ("search", "max_concurrent_trials")


def _limit(value: int):
    return make_policy({"limits": {"max_concurrent_gpus": value}})


def _spec(gpus: int, concurrent: int, trials: int = 16):
    return make_spec(
        {
            "resources": {"gpus_per_trial": gpus},
            "search": {"max_trials": trials, "max_concurrent_trials": concurrent},
        }
    )


def test_constants():
    assert (concurrent_gpus.ID, concurrent_gpus.SLUG) == ("BG105", "concurrent-gpus")
    assert concurrent_gpus.DEFAULT_SEVERITY is Severity.ERROR


def test_base_spec_passes():
    # 1 trial at a time × 1 GPU = 1 GPU ≤ 1.
    assert run_rule(concurrent_gpus, make_spec(), _limit(1)) == []


def test_docstring_passing_example_is_equal_to_the_limit():
    # 8 concurrent × 4 GPUs = 32 ≤ 32.
    assert run_rule(concurrent_gpus, _spec(gpus=4, concurrent=8), _limit(32)) == []


def test_docstring_failing_example():
    # 8 concurrent × 8 GPUs = 64 > 32.
    [violation] = run_rule(concurrent_gpus, _spec(gpus=8, concurrent=8), _limit(32))
    assert violation.message == (
        "8 concurrent trials × 8 GPUs = 64 GPUs exceeds max_concurrent_gpus 32"
    )
    assert violation.path == PATH


def test_just_over_the_limit_fails():
    # 8 × 4 = 32 > 31.
    [violation] = run_rule(concurrent_gpus, _spec(gpus=4, concurrent=8), _limit(31))
    assert violation.message == (
        "8 concurrent trials × 4 GPUs = 32 GPUs exceeds max_concurrent_gpus 31"
    )
    assert violation.path == PATH


def test_concurrency_cannot_exceed_the_trial_count():
    # 10 allowed at once but only 4 trials: peak 4 × 2 GPUs = 8.
    spec = _spec(gpus=2, concurrent=10, trials=4)
    assert run_rule(concurrent_gpus, spec, _limit(8)) == []
    [violation] = run_rule(concurrent_gpus, spec, _limit(7))
    assert (
        violation.message == "4 concurrent trials × 2 GPUs = 8 GPUs exceeds max_concurrent_gpus 7"
    )


def test_limit_unset_reports_nothing():
    assert run_rule(concurrent_gpus, _spec(gpus=8, concurrent=16), make_policy()) == []
