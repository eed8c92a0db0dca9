"""BG112 restricted-accelerator: accelerator listed in approval.accelerators."""

from __future__ import annotations

from gate.policy.model import Severity
from gate.policy.rules import restricted_accelerator
from tests.conftest import make_policy, make_spec, run_rule

PATH = ("resources", "accelerator")


def _restricted(*names: str):
    return make_policy({"approval": {"accelerators": list(names)}})


def _on(accelerator: str):
    return make_spec({"resources": {"accelerator": accelerator, "gpus_per_trial": 2}})


def test_constants():
    assert (restricted_accelerator.ID, restricted_accelerator.SLUG) == (
        "BG112",
        "restricted-accelerator",
    )
    assert restricted_accelerator.DEFAULT_SEVERITY is Severity.APPROVAL


def test_unlisted_accelerator_passes():
    assert run_rule(restricted_accelerator, _on("A100-80GB"), _restricted("H100")) == []


def test_listed_accelerator_needs_approval():
    [violation] = run_rule(restricted_accelerator, _on("H100"), _restricted("H100"))
    assert violation.message == "accelerator H100 needs approval under this policy"
    assert violation.path == PATH


def test_match_is_exact_not_by_prefix():
    # H200 is not H100; H100 is not listed when only H200 and B200 are.
    assert run_rule(restricted_accelerator, _on("H100"), _restricted("H200", "B200")) == []
    [violation] = run_rule(restricted_accelerator, _on("B200"), _restricted("H200", "B200"))
    assert violation.message == "accelerator B200 needs approval under this policy"


def test_list_unset_reports_nothing():
    assert run_rule(restricted_accelerator, _on("H200"), make_policy()) == []
