"""BG101 gpus-per-trial: GPUs per trial over limits.max_gpus_per_trial."""

from __future__ import annotations

import pytest

from gate.policy.model import Severity
from gate.policy.rules import gpus_per_trial
from tests.conftest import make_policy, make_spec, run_rule

PATH = ("resources", "gpus_per_trial")


def _limit(value: int):
    return make_policy({"limits": {"max_gpus_per_trial": value}})


def _gpus(value: int):
    return make_spec({"resources": {"gpus_per_trial": value}})


def test_constants():
    assert (gpus_per_trial.ID, gpus_per_trial.SLUG) == ("BG101", "gpus-per-trial")
    assert gpus_per_trial.DEFAULT_SEVERITY is Severity.ERROR


def test_passes_under_the_limit():
    # Docstring "Passes": 4 GPUs under a limit of 8.
    assert run_rule(gpus_per_trial, _gpus(4), _limit(8)) == []


def test_base_spec_passes():
    # The base spec asks for 1 GPU.
    assert run_rule(gpus_per_trial, make_spec(), _limit(1)) == []


def test_equal_to_the_limit_passes():
    assert run_rule(gpus_per_trial, _gpus(8), _limit(8)) == []


def test_one_over_the_limit_fails():
    [violation] = run_rule(gpus_per_trial, _gpus(9), _limit(8))
    assert violation.message == "9 GPUs per trial exceeds max_gpus_per_trial 8"
    assert violation.path == PATH


def test_docstring_failing_example():
    [violation] = run_rule(gpus_per_trial, _gpus(16), _limit(8))
    assert violation.message == "16 GPUs per trial exceeds max_gpus_per_trial 8"
    assert violation.path == PATH


@pytest.mark.parametrize("gpus", [1, 16, 1024])
def test_limit_unset_reports_nothing(gpus: int):
    assert run_rule(gpus_per_trial, _gpus(gpus), make_policy()) == []
