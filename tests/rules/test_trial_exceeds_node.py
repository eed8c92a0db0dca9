"""BG401 trial-exceeds-node: gpus_per_trial over cluster.gpus_per_node when multi-node is off."""

from __future__ import annotations

from gate.policy.model import Severity
from gate.policy.rules import trial_exceeds_node
from tests.conftest import make_policy, make_spec, run_rule

PATH = ("resources", "gpus_per_trial")


def _cluster(**cluster):
    return make_policy({"cluster": cluster})


def _gpus(value: int):
    return make_spec({"resources": {"accelerator": "H100", "gpus_per_trial": value}})


def test_constants():
    assert (trial_exceeds_node.ID, trial_exceeds_node.SLUG) == ("BG401", "trial-exceeds-node")
    assert trial_exceeds_node.DEFAULT_SEVERITY is Severity.ERROR


def test_trial_smaller_than_a_node_passes():
    assert run_rule(trial_exceeds_node, _gpus(4), _cluster(gpus_per_node=8)) == []


def test_trial_equal_to_a_node_passes():
    assert run_rule(trial_exceeds_node, _gpus(8), _cluster(gpus_per_node=8)) == []


def test_one_gpu_over_a_node_fails():
    [violation] = run_rule(trial_exceeds_node, _gpus(9), _cluster(gpus_per_node=8))
    assert (
        violation.message == "9 GPUs per trial cannot fit on one node of 8 GPUs (multi-node is off)"
    )
    assert violation.path == PATH


def test_docstring_failing_example():
    [violation] = run_rule(trial_exceeds_node, _gpus(12), _cluster(gpus_per_node=8))
    assert violation.message.startswith("12 GPUs per trial cannot fit on one node of 8 GPUs")


def test_multi_node_clusters_schedule_large_trials():
    policy = _cluster(gpus_per_node=8, multi_node=True)
    assert run_rule(trial_exceeds_node, _gpus(64), policy) == []


def test_node_size_unset_reports_nothing():
    assert run_rule(trial_exceeds_node, _gpus(64), make_policy()) == []
