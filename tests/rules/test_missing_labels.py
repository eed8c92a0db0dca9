"""BG201 missing-labels: labels.required absent (or empty) in metadata.labels."""

from __future__ import annotations

from gate.policy.model import Severity
from gate.policy.rules import missing_labels
from tests.conftest import make_policy, make_spec, run_rule

PATH = ("metadata", "labels")
REQUIRED = make_policy({"labels": {"required": ["cost-center", "environment"]}})


def _labels(**labels: str):
    return make_spec({"metadata": {"labels": {k.replace("_", "-"): v for k, v in labels.items()}}})


def test_constants():
    assert (missing_labels.ID, missing_labels.SLUG) == ("BG201", "missing-labels")
    assert missing_labels.DEFAULT_SEVERITY is Severity.ERROR


def test_all_required_labels_present_passes():
    spec = _labels(cost_center="cc-1042", environment="research")
    assert run_rule(missing_labels, spec, REQUIRED) == []


def test_one_missing_label_fails():
    [violation] = run_rule(missing_labels, _labels(environment="research"), REQUIRED)
    assert violation.message == "required label 'cost-center' is missing"
    assert violation.path == (
        *PATH,
        "cost-center",
    )  # the label's own place (absent: located at labels)


def test_each_missing_label_is_reported_in_policy_order():
    violations = run_rule(missing_labels, make_spec(), REQUIRED)
    assert [v.message for v in violations] == [
        "required label 'cost-center' is missing",
        "required label 'environment' is missing",
    ]
    assert [v.path for v in violations] == [(*PATH, "cost-center"), (*PATH, "environment")]


def test_empty_value_counts_as_missing():
    spec = _labels(cost_center="", environment="research")
    [violation] = run_rule(missing_labels, spec, REQUIRED)
    assert violation.message == "required label 'cost-center' is missing"


def test_extra_labels_are_fine():
    spec = _labels(cost_center="cc-1", environment="research", owner="ana")
    assert run_rule(missing_labels, spec, REQUIRED) == []


def test_nothing_required_reports_nothing():
    assert run_rule(missing_labels, make_spec(), make_policy()) == []


def test_a_blank_label_is_no_label():
    """Spaces, a no-break space or a zero-width space show nothing: no attribution."""
    for blank in (" ", "\u00a0", "\u200b", " \u2009\u200b "):
        [violation] = run_rule(
            missing_labels, _labels(cost_center=blank, environment="research"), REQUIRED
        )
        assert violation.message == (
            "required label 'cost-center' is blank (only spaces or invisible characters)"
        )
        assert violation.path == (*PATH, "cost-center")
    assert run_rule(missing_labels, _labels(cost_center=" cc-1 ", environment="r"), REQUIRED) == []
