"""No message shows validator internals, for any value at any key (issue 22, item 4).

``tests/test_bad_input.py`` holds every committed bad input to the same check; here
Hypothesis puts arbitrary YAML values at the keys of a valid spec and a valid policy and
reads every message the validation gives back.
"""

from __future__ import annotations

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.errors import InputError, InputErrors
from gate.policy.model import Policy
from gate.spec.experiment import Experiment
from gate.spec.loader import load_bytes
from gate.spec.validation import validate
from tests.plain_words import internals_in

SPEC = {
    "apiVersion": "budget-gate/v1",
    "kind": "Experiment",
    "metadata": {"name": "words", "team": "nlp", "labels": {"model": "bert"}},
    "resources": {"accelerator": "A100-80GB", "gpus_per_trial": 1, "capacity": "spot"},
    "workload": {"max_epochs": 10, "epoch_minutes": 5, "eval_overhead": 0.1},
    "search": {
        "strategy": "asha",
        "max_trials": 8,
        "parameters": {"lr": {"low": 1.0e-4, "high": 1.0e-2, "log": True}},
        "scheduler": {"min_epochs": 1, "reduction_factor": 3},
    },
    "stopping": {"max_trial_hours": 2, "early_stopping": {"monitor": "val_loss", "patience": 2}},
    "quality_gate": [{"metric": "val_f1", "op": ">=", "value": 0.8}],
    "tracking": {"mlflow_experiment": "sweeps"},
}
POLICY = {
    "apiVersion": "budget-gate/v1",
    "kind": "Policy",
    "teams": ["nlp"],
    "limits": {"max_trial_hours": 24, "max_experiment_cost": 1000},
    "approval": {"cost_over": 100, "trials_over": 32, "approvers": {"users": ["alice"]}},
    "labels": {"required": ["model"]},
    "reliability": {"failure_rate": 0.05, "max_retries": 2},
}

VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["30s", "2h", "10%", "1e5", "NLP", "spot!", "", "0x10", "1_000", "yes"]),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.sampled_from(["low", "high", "values", "x"]), st.integers(), max_size=2),
)


def _paths(data: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every key path of the nested mappings (and the mappings themselves)."""
    found = [prefix] if prefix else []
    if isinstance(data, dict):
        for key, value in data.items():
            found += _paths(value, (*prefix, key))
    return found


def _put(data: dict[str, object], path: tuple[str, ...], value: object) -> dict[str, object]:
    copy = yaml.safe_load(yaml.safe_dump(data))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return copy


def _messages(model: type[Experiment] | type[Policy], data: dict[str, object]) -> list[str]:
    try:
        text = yaml.safe_dump(data, allow_unicode=True)
    except yaml.YAMLError:  # pragma: no cover - safe_dump writes any of the values above
        return []
    try:
        validate(model, load_bytes(text.encode(), "case.yaml"))
    except InputErrors as exc:
        return [str(e.problem) for e in exc.errors]
    except InputError as exc:
        return [str(exc.problem)]
    return []


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(_paths(SPEC)), VALUES, st.sampled_from(_paths(POLICY)), VALUES, st.booleans()
)
def test_no_message_shows_validator_internals(spec_at, spec_value, policy_at, policy_value, extra):
    spec = _put(SPEC, spec_at, spec_value)
    if extra:  # an unknown key beside it, as a typo would be
        spec = _put(spec, (*spec_at[:-1], spec_at[-1] + "s"), spec_value)
    messages = _messages(Experiment, spec) + _messages(
        Policy, _put(POLICY, policy_at, policy_value)
    )
    assert internals_in("\n".join(messages), "case.yaml") == []
