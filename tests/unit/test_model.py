"""gate.model where it differs from pydantic on purpose, and what a model instance is."""

from __future__ import annotations

import copy
import datetime as dt
import pickle

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.calibrate.model import Calibration
from gate.errors import InputErrors
from gate.estimate.settings import Reliability, Returns
from gate.model import ValidationError, edited
from gate.policy.model import Waiver
from gate.spec.experiment import Condition, Experiment
from gate.spec.fingerprint import fingerprint
from gate.spec.loader import load_bytes
from gate.spec.validation import validate
from tests.conftest import ROOT, spec_data


def _waiver(expires: object) -> Waiver:
    return Waiver.model_validate({"rule": "BG104", "reason": "known", "expires": expires})


@pytest.mark.parametrize("given", [dt.date(2027, 1, 31), "2027-01-31", dt.datetime(2027, 1, 31)])
def test_a_date_is_a_date_an_iso_string_or_midnight(given):
    assert _waiver(given).expires == dt.date(2027, 1, 31)


@pytest.mark.parametrize(
    ("given", "kind"),
    [
        (1735689600, "date_type"),  # pydantic: 2025-01-01, as a Unix time
        (20270131, "date_type"),
        ("20270131", "date_parsing"),
        ("2027-02-30", "date_parsing"),
        (dt.datetime(2027, 1, 31, 5, 30), "date_from_datetime_inexact"),
    ],
)
def test_anything_else_is_no_date(given, kind):
    with pytest.raises(ValidationError) as refused:
        _waiver(given)
    assert [e["type"] for e in refused.value.errors()] == [kind]


@pytest.mark.parametrize("given", [True, 3.0, "3"])
def test_counts_are_strict(given):
    with pytest.raises(ValidationError) as refused:
        Reliability(max_retries=given)
    assert refused.value.errors()[0]["type"] == "int_type"
    with pytest.raises(ValidationError):
        Returns(patience_epochs=given)


def test_an_unknown_key_in_an_optional_model_is_named_where_it_is():
    data = spec_data({"workload": {"model": {"parameters": 8e9, "tokens_per_epoch": 1e9, "x": 1}}})
    del data["workload"]["epoch_minutes"]
    with pytest.raises(InputErrors) as refused:
        validate(Experiment, load_bytes(_yaml(data), "spec.yaml"))
    [error] = refused.value.errors
    assert "unknown key 'x' in workload.model" in str(error)


def test_an_unknown_key_in_a_range_is_named_where_it_is():
    data = spec_data({"workload": {"epoch_minutes": {"low": 1, "high": 2, "typo": 3}}})
    with pytest.raises(InputErrors) as refused:
        validate(Experiment, load_bytes(_yaml(data), "spec.yaml"))
    [error] = refused.value.errors
    assert "unknown key 'typo' in workload.epoch_minutes" in str(error)


def _yaml(data: dict[str, object]) -> bytes:
    return yaml.safe_dump(data, sort_keys=False).encode()


def test_instances_are_immutable_comparable_and_hashable():
    condition = Condition(metric="val_acc", op=">=", value=0.9)
    with pytest.raises(AttributeError, match="immutable"):
        condition.value = 0.1  # type: ignore[misc]
    same = Condition.model_validate({"metric": "val_acc", "op": ">=", "value": 0.9})
    assert condition == same and hash(condition) == hash(same)
    assert condition != Condition(metric="val_acc", op=">=", value=0.8)
    assert condition.model_copy(update={"value": 0.5}).value == 0.5
    assert condition.value == 0.9


def test_instances_pickle_and_copy_with_what_was_given():
    spec = Experiment.model_validate(spec_data())
    for again in (pickle.loads(pickle.dumps(spec)), copy.deepcopy(spec), copy.copy(spec)):
        assert again == spec
        assert again.model_fields_set == spec.model_fields_set
        assert again.resources.model_fields_set == spec.resources.model_fields_set


def test_a_model_validates_its_keyword_arguments():
    with pytest.raises(ValidationError, match="Input should be 'min' or 'max'"):
        Experiment.model_validate(
            spec_data(
                {"stopping": {"early_stopping": {"monitor": "m", "patience": 2, "mode": "x"}}}
            )
        )
    with pytest.raises(ValidationError, match="Field required"):
        Calibration()


_EXAMPLE_SPECS = [
    yaml.safe_load(p.read_text())
    for p in sorted((ROOT / "examples").glob("*.yaml"))
    if yaml.safe_load(p.read_text()).get("kind") == "Experiment"
]
_EDIT_PATHS = [
    ("search", "max_trials"),
    ("search", "max_concurrent_trials"),
    ("search", "strategy"),
    ("search", "scheduler", "max_epochs"),
    ("search", "parameters", "lr", "values"),
    ("workload", "max_epochs"),
    ("workload", "epoch_minutes"),
    ("stopping", "max_trial_hours"),
    ("stopping", "early_stopping", "patience"),
    ("resources", "gpus_per_trial"),
    ("resources", "precision"),
    ("deadline_hours",),
]


def _by_dump(spec: Experiment, changes: list[tuple[tuple[str, ...], object]]) -> object:
    """The edit as it was made before gate.model.edited: dump what was given, set, validate."""
    data = spec.model_dump(by_alias=True, exclude_unset=True)
    for path, value in changes:
        node = data
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    try:
        return Experiment.model_validate(data)
    except ValidationError:
        return None


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(_EXAMPLE_SPECS),
    st.lists(
        st.tuples(
            st.sampled_from(_EDIT_PATHS),
            st.one_of(
                st.integers(-1, 500),
                st.sampled_from(["asha", "grid", "bf16", "x", 0.5, 2.5, [1e-3, 1e-2], None]),
            ),
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_an_edit_validates_as_dumping_and_validating_it_all(data, changes):
    spec = Experiment.model_validate(data)
    try:
        mine: object = edited(spec, changes)
    except ValidationError:
        mine = None
    theirs = _by_dump(spec, changes)
    assert mine == theirs
    if mine is not None and theirs is not None:
        assert fingerprint(mine) == fingerprint(theirs)
        assert mine.model_dump(exclude_unset=True) == theirs.model_dump(exclude_unset=True)


@settings(max_examples=500, deadline=None)
@given(
    st.sampled_from(_EXAMPLE_SPECS),
    st.sampled_from(_EDIT_PATHS),
    st.one_of(
        st.integers(-1, 500),
        st.floats(-1, 1e4, allow_nan=False),
        st.sampled_from(["asha", "grid", "hyperband", "bf16", "x", True, [1e-3, 1e-2], [], None]),
    ),
)
def test_one_field_edited_validates_as_dumping_and_validating_it_all(data, path, value):
    """A fix's search edits one number thousands of times: that edit takes a quicker way,
    which must accept and refuse exactly what validating the whole spec does."""
    spec = Experiment.model_validate(data)
    try:
        mine: object = edited(spec, [(path, value)])
    except ValidationError:
        mine = None
    theirs = _by_dump(spec, [(path, value)])
    assert mine == theirs
    if mine is not None and theirs is not None:
        assert fingerprint(mine) == fingerprint(theirs)
        assert mine.model_fields_set == theirs.model_fields_set  # type: ignore[attr-defined]
