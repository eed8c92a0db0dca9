"""BG202 label-values: a label listed in labels.allowed has a value not in its list."""

from __future__ import annotations

from gate.policy.model import Severity
from gate.policy.rules import label_values
from tests.conftest import make_policy, make_spec, run_rule

ALLOWED = make_policy(
    {
        "labels": {
            "allowed": {
                "workload-type": ["training", "hpo"],
                "environment": ["research", "production"],
            }
        }
    }
)


def _labels(labels: dict[str, str]):
    return make_spec({"metadata": {"labels": labels}})


def test_constants():
    assert (label_values.ID, label_values.SLUG) == ("BG202", "label-values")
    assert label_values.DEFAULT_SEVERITY is Severity.ERROR


def test_allowed_values_pass():
    spec = _labels({"environment": "research", "workload-type": "hpo"})
    assert run_rule(label_values, spec, ALLOWED) == []


def test_value_not_allowed_fails():
    # Docstring: values are case-sensitive, "Research" is not "research".
    [violation] = run_rule(label_values, _labels({"environment": "Research"}), ALLOWED)
    assert violation.message == "label environment='Research' is not one of research, production"
    assert violation.path == ("metadata", "labels", "environment")


def test_several_bad_labels_are_reported_sorted_by_name():
    spec = _labels({"workload-type": "serving", "environment": "dev"})
    violations = run_rule(label_values, spec, ALLOWED)
    assert [(v.message, v.path) for v in violations] == [
        (
            "label environment='dev' is not one of research, production",
            ("metadata", "labels", "environment"),
        ),
        (
            "label workload-type='serving' is not one of training, hpo",
            ("metadata", "labels", "workload-type"),
        ),
    ]


def test_absent_or_empty_label_is_left_to_missing_labels():
    assert run_rule(label_values, _labels({}), ALLOWED) == []
    assert run_rule(label_values, _labels({"environment": ""}), ALLOWED) == []


def test_labels_without_an_allowed_list_are_free():
    assert run_rule(label_values, _labels({"model": "Anything-Goes"}), ALLOWED) == []


def test_nothing_allowed_reports_nothing():
    assert run_rule(label_values, _labels({"environment": "Research"}), make_policy()) == []
