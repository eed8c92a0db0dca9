"""The models' own validation against pydantic's, on thousands of broken documents.

``budget-gate check`` validates specs and policies with :mod:`gate.model.shapes`, so that it
never imports pydantic; pydantic still writes their JSON Schemas from the same declarations
(:mod:`gate.model.mirror`). Here both validate the same documents, the examples and
policies with random edits (values replaced, keys dropped or added, anywhere), and must
agree: the same documents accepted, with the same values (``model_dump``, which the spec
fingerprint hashes), and the same errors refused (type, place, message and what the
message is built from). pydantic's report of a union lists every member's errors under
labels that are no YAML key; :func:`_one_per_union` folds them as :mod:`gate.spec.validation`
did before this module replaced pydantic on the check path.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import math
import typing
from decimal import Decimal
from typing import Any

import pydantic
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate.calibrate.model import Calibration
from gate.model import Model, ValidationError
from gate.model.compile import model_shape, step
from gate.model.mirror import mirror
from gate.model.shapes import HookShape, NullableShape
from gate.model.values import DateShape, Shape
from gate.policy.model import Policy
from gate.spec.experiment import Experiment
from gate.spec.facts import Facts
from tests.conftest import BASE_POLICY, ROOT

EVERY_POLICY_FIELD: dict[str, Any] = {
    "apiVersion": "budget-gate/v1",
    "kind": "Policy",
    "extends": "default",
    "teams": ["vision", "nlp"],
    "owns": {
        "specs": ["experiments/vision/**", "!experiments/vision/old/*"],
        "github_teams": ["acme/vision"],
        "namespaces": ["team-vision"],
        "skypilot_users": ["alice"],
    },
    "currency": "EUR",
    "prices": {
        "cloud": "aws",
        "usd_exchange_rate": 0.92,
        "overrides": {"A100": {"on-demand": 3.5, "spot": "1.25", "reserved": 2}},
        "owned": {
            "H100": {
                "purchase_price": 30000,
                "amortization_years": 4,
                "power_kw": 0.7,
                "pue": 1.3,
                "electricity_per_kwh": 0.15,
                "utilization": 0.6,
                "facility_per_gpu_year": 500,
                "staff_per_gpu_year": 300.5,
            }
        },
    },
    "cluster": {"gpus_per_node": 8, "nodes": 4, "multi_node": False},
    "limits": {
        "scenario": "expected",
        "max_gpus_per_trial": 8,
        "max_trial_hours": 12.5,
        "max_trial_cost": 300,
        "max_experiment_cost": "5000.50",
        "max_concurrent_gpus": 32,
        "monthly_budget": 20000,
        "budget_scope": "cost-center",
        "budget_warn_at": 0.75,
        "reconcile_tolerance": 0.2,
    },
    "approval": {
        "trials_over": 32,
        "cost_over": 1000,
        "accelerators": ["H100"],
        "approvers": {
            "users": ["alice"],
            "teams": ["acme/leads"],
            "permission": "maintain",
            "allow_self_approval": False,
        },
        "sources": ["github"],
        "launches": 2,
    },
    "labels": {"required": ["cost-center"], "allowed": {"cost-center": ["cc-1", "cc-2"]}},
    "practices": {"stop_condition_above_epochs": 20},
    "estimation": {
        "plateau_fraction": 0.6,
        "mfu": 0.4,
        "learning_curve": {"total_gain": 0.3, "half_life_epochs": 5},
        "queue_wait_hours": 0.5,
        "rank_correlation": 0.9,
        "sampler_gain": 1,
    },
    "returns": {
        "min_relative_gain": 0.002,
        "min_gain_per_gpu_hour": 0.0001,
        "min_gain_per_cost": 0.00001,
        "patience_epochs": 8,
    },
    "guard": {"stop_at_plateau": True, "max_failed_in_a_row": 2, "max_failed_trials": 10},
    "reliability": {"failure_rate": 0.05, "max_retries": 2, "failure_point": 0.4},
    "calibration": {"use": True, "min_runs": 3, "tolerance": 0.3},
    "spot": {"preemptions_per_hour": 0.05, "extra_ops_per_trial": 0.5},
    "severity": {"BG104": "warn", "BG301": "off"},
    "waivers": [
        {
            "rule": "BG104",
            "specs": "experiments/*.yaml",
            "reason": "a known one",
            "expires": "2027-01-31",
        },
        {"rule": "BG301", "reason": "legacy", "expires": dt.date(2026, 12, 31)},
    ],
    "defaults": {
        "accelerator": "A100",
        "gpus_per_trial": 2,
        "capacity": "spot",
        "precision": "bf16",
        "checkpoint_every_minutes": 30,
        "epoch_minutes": {"low": 2, "high": 4},
        "setup_minutes": 5,
        "eval_overhead": 0.1,
        "seeds": [0, 1],
        "max_concurrent_trials": 4,
        "early_stopping": {"monitor": "val_loss", "patience": 3},
        "max_trial_cost": 50,
        "quality_gate": [{"metric": "val_acc", "op": ">=", "value": 0.9}],
        "labels": {"model": "resnet18"},
    },
}

EVERY_SPEC_FIELD: dict[str, Any] = {
    "apiVersion": "budget-gate/v1",
    "kind": "Experiment",
    "metadata": {"name": "x", "team": "vision", "owner": "alice", "labels": {"model": "m"}},
    "resources": {
        "accelerator": "A100",
        "gpus_per_trial": 3,
        "mig_profile": "1g.10gb",
        "capacity": "spot",
        "cloud": "aws",
        "precision": "bf16",
        "checkpoint_every_minutes": 20,
    },
    "workload": {
        "max_epochs": 20,
        "model": {"parameters": "8.0e9", "tokens_per_epoch": 1e9},
        "setup_minutes": 3,
        "eval_overhead": 0.05,
    },
    "search": {
        "strategy": "hyperband",
        "parameters": {"lr": {"low": 1e-5, "high": 1e-2, "log": True}, "bs": {"values": [16, 32]}},
        "seeds": [0],
        "max_concurrent_trials": 2,
        "scheduler": {"min_epochs": 2, "max_epochs": 20, "reduction_factor": 3, "brackets": 2},
    },
    "stopping": {
        "early_stopping": {
            "monitor": "val_loss",
            "mode": "min",
            "patience": 3,
            "min_delta": 0.01,
            "expected_plateau_epoch": 10,
        },
        "max_trial_hours": 4,
        "max_trial_cost": "12.5",
    },
    "quality_gate": [{"metric": "val_f1_*", "op": ">", "value": 0.5}],
    "deadline_hours": 48,
    "tracking": {"mlflow_experiment": "x"},
}


def _examples() -> list[tuple[type[Model], dict[str, Any]]]:
    seeds: list[tuple[type[Model], dict[str, Any]]] = [
        (Experiment, EVERY_SPEC_FIELD),
        (Policy, EVERY_POLICY_FIELD),
        (Policy, BASE_POLICY),
        (Facts, EVERY_POLICY_FIELD["defaults"]),
    ]
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and data.get("kind") == "Experiment":
            seeds.append((Experiment, data))
    policies = sorted((ROOT / "policies").glob("*.yaml"))
    seeds.extend((Policy, yaml.safe_load(p.read_text(encoding="utf-8"))) for p in policies)
    calibration = json.loads((ROOT / "policies" / "tests" / "calibration.json").read_text())
    seeds.append((Calibration, calibration))
    return seeds


SEEDS = _examples()

ODD_VALUES = [
    0, 1, -1, 2, 3, 7, 1000, 10**12, 10**13, 10**400, 0.0, 0.5, 1.5, 1e-7, 1e-6, 1e12, 1e13,
    1e31, -0.5, math.inf, -math.inf, math.nan, True, False, None, "", "x", "30s", "2h", "10%",
    "8.0e9", "1e3", "1.5", " 2 ", "1.1234567", "inf", "nan", "1_000", "abc\n", "a\x01b",
    "BG104", "bg104", "grid", "asha", "spot", "on-demand", "bf16", "min", ">=", "budget-gate/v1",
    "Experiment", "Policy", "A100", "1g.10gb", "9g.1gb", "2026-01-31", "2026-13-01", "20260131",
    "experiments/**", "!x", "#x", " x", "vision", "Vision Team", "team-vision", "-bad",
    dt.date(2026, 1, 31), dt.datetime(2026, 1, 31), dt.datetime(2026, 1, 31, 5, 30),
    Decimal("1.50"), Decimal("0.0000001"), [], [0], [1, 2], ["a"], [{}], [None], {}, {"a": 1},
    {"low": 1, "high": 2}, {"low": 3, "high": 1}, {"values": [1]}, {"monitor": "m", "patience": 2},
    "x" * 201, "y" * 64,
]  # fmt: skip

_values = st.one_of(
    st.sampled_from(ODD_VALUES).map(copy.deepcopy),
    st.integers(-3, 10**6),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e3, max_value=1e6),
    st.text(max_size=4),
)


def _places(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path in ``data`` that holds a value (the root included)."""
    found = [path]
    if isinstance(data, dict):
        for key, value in data.items():
            found.extend(_places(value, (*path, key)))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            found.extend(_places(value, (*path, i)))
    return found


def _at(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


@st.composite
def broken(draw: st.DrawFn) -> tuple[type[Model], Any]:
    """A seed document with one to three random edits."""
    cls, seed = draw(st.sampled_from(SEEDS))
    doc: Any = copy.deepcopy(seed)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_places(doc)))
        action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        if not path:
            if action == "replace" and draw(st.booleans()):
                doc = draw(_values)
            continue
        parent = _at(doc, path[:-1])
        if action == "replace":
            parent[path[-1]] = draw(_values)
        elif action == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            key = draw(st.sampled_from(["extra", "api_version", "labels", "max_epochs", "low"]))
            parent[key] = draw(_values)
        else:
            parent.append(draw(_values))
    return cls, doc


def _touches_a_date(cls: type[Model], doc: Any) -> bool:
    """Whether a date field holds something other than a date or ``YYYY-MM-DD``.

    There pydantic reads a number as a Unix time and a string in several forms; the models
    take a date or ``YYYY-MM-DD`` only (tested in tests/unit/test_model.py).
    """
    for path in _places(doc):
        shape: Shape | None = model_shape(cls)
        for part in path:
            shape = step(shape, part) if shape is not None else None
        while isinstance(shape, NullableShape | HookShape):
            shape = shape.inner
        if isinstance(shape, DateShape):
            value = _at(doc, path)
            if not isinstance(value, dt.date) or isinstance(value, dt.datetime):
                return True
    return False


# pydantic's union labels are folded as gate.spec.validation folded them before this module.
_SHAPE_ERRORS = frozenset(
    {
        "float_type", "float_parsing", "int_type", "int_parsing", "int_from_float", "bool_type",
        "bool_parsing", "string_type", "list_type", "dict_type", "model_type",
        "model_attributes_type", "decimal_type", "decimal_parsing", "date_type", "date_parsing",
        "date_from_datetime_parsing", "is_instance_of",
    }
)  # fmt: skip


def _one_per_union(root: type[pydantic.BaseModel], errors: list[Any]) -> list[Any]:
    kept: list[Any] = []
    unions: dict[tuple[Any, ...], dict[str, list[Any]]] = {}
    for err in errors:
        loc = tuple(err["loc"])
        at = _union_point(root, loc)
        if at is None:
            kept.append(err)
            continue
        unions.setdefault(loc[:at], {}).setdefault(str(loc[at]), []).append(err)
    for where, members in unions.items():
        fitting = [
            errs
            for errs in members.values()
            if not all(e["type"] in _SHAPE_ERRORS and len(e["loc"]) == len(where) + 1 for e in errs)
        ]
        if fitting:
            kept.extend(fitting[0])
            continue
        first = next(iter(members.values()))[0]
        kinds = [errs[0]["type"] for errs in members.values()]
        kept.append({**first, "loc": where, "type": "union", "ctx": {"kinds": kinds}})
    return [{**e, "loc": _field_path(root, tuple(e["loc"]))} for e in kept]


def _union_point(root: Any, loc: tuple[Any, ...]) -> int | None:
    current: Any = root
    for index, part in enumerate(loc):
        step = _step(current, part) if current is not None else None
        if step is None and isinstance(part, str) and _is_union(current):
            return index
        current = step
    return None


def _field_path(root: Any, loc: tuple[Any, ...]) -> tuple[Any, ...]:
    current: Any = root
    path: list[Any] = []
    for part in loc:
        step = _step(current, part) if current is not None else None
        if step is None and isinstance(part, str) and _is_union(current):
            # the member's label: a model's is its class name, whose keys follow
            models = [a for a in _args(current) if _labelled(part, getattr(a, "__name__", ""))]
            current = models[0] if models else current
            continue
        path.append(part)
        current = step
    return tuple(path)


def _labelled(label: str, name: str) -> bool:
    """Whether pydantic's union label names a model (``Range``, ``function-after[…, Range]``)."""
    return bool(name) and (label == name or label.endswith(f", {name}]"))


def _is_union(annotation: Any) -> bool:
    """A union of two members or more (``X | None`` is not: its model's keys are keys)."""
    return len([a for a in _args(annotation) if a is not type(None)]) > 1


def _step(annotation: Any, part: Any) -> Any:
    model = _unwrap_model(annotation)
    if model is not None:
        for name, field in model.model_fields.items():
            if part in (name, field.alias):
                return field.annotation
        return None
    for arg in _args(annotation):
        origin = typing.get_origin(arg)
        if origin is list and isinstance(part, int):
            return typing.get_args(arg)[0]
        if origin is dict and isinstance(part, str):
            return typing.get_args(arg)[1]
    return None


def _unwrap_model(annotation: Any) -> Any:
    for arg in _args(annotation):
        if isinstance(arg, type) and issubclass(arg, pydantic.BaseModel):
            return arg
    return None


def _args(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _args(typing.get_args(annotation)[0])
    if origin in (typing.Union, __import__("types").UnionType):
        return [t for arg in typing.get_args(annotation) for t in _args(arg)]
    return [annotation]


def _comparable(errors: list[Any]) -> list[tuple[Any, ...]]:
    """Errors as what gate.spec.validation reads of them, in one order."""
    out = []
    for e in errors:
        ctx = e.get("ctx") or {}
        words = {k: ctx[k] for k in ("expected", "pattern", "kinds") if k in ctx}
        out.append((e["type"], tuple(e["loc"]), e["msg"], repr(sorted(words.items()))))
    return sorted(out, key=repr)


def _judge(cls: type[Model], doc: Any) -> None:
    theirs_cls = mirror(cls)
    try:
        theirs = theirs_cls.model_validate(doc)
        their_errors: list[Any] = []
    except pydantic.ValidationError as exc:
        theirs = None
        their_errors = _one_per_union(theirs_cls, exc.errors(include_url=False))
    try:
        ours = cls.model_validate(copy.deepcopy(doc))
        our_errors: list[Any] = []
    except ValidationError as exc:
        ours = None
        our_errors = exc.errors()
    assert _comparable(our_errors) == _comparable(their_errors), doc
    if ours is None or theirs is None:
        assert ours is theirs, doc
        return
    for options in ({"mode": "json", "by_alias": True}, {"exclude_unset": True, "by_alias": True}):
        assert ours.model_dump(**options) == theirs.model_dump(**options), options  # type: ignore[arg-type]
    assert ours.model_fields_set == theirs.model_fields_set


@pytest.mark.parametrize("seed", range(len(SEEDS)))
def test_every_seed_is_valid_and_dumps_as_pydantic_dumps_it(seed: int) -> None:
    cls, doc = SEEDS[seed]
    assert cls.model_validate(copy.deepcopy(doc)) is not None
    _judge(cls, doc)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(broken())
def test_broken_documents_are_judged_as_pydantic_judges_them(case: tuple[type[Model], Any]) -> None:
    cls, doc = case
    if _touches_a_date(cls, doc):
        return
    _judge(cls, doc)


def test_both_refuse_a_bound_with_the_same_error() -> None:
    """The comparison is not vacuous: both report the broken bound, in the same words."""
    doc = copy.deepcopy(EVERY_SPEC_FIELD)
    doc["resources"]["gpus_per_trial"] = 0
    with pytest.raises(pydantic.ValidationError) as theirs:
        mirror(Experiment).model_validate(doc)
    with pytest.raises(ValidationError) as ours:
        Experiment.model_validate(doc)
    expected = [("greater_than", ("resources", "gpus_per_trial"), "Input should be greater than 0")]
    assert [(e["type"], e["loc"], e["msg"]) for e in ours.value.errors()] == expected
    assert [(e["type"], e["loc"], e["msg"]) for e in theirs.value.errors()] == expected
