"""A W&B sweep's ``parameters``, as budget-gate reads them: each one's values and grid count.

W&B nests ``parameters:`` inside a parameter for a nested config; they are unnested with
dots (``trainer.epochs``), as W&B reports them. A parameter is a list (``values``), a
constant (``value``) or a distribution (``min``/``max``, ``int_uniform``, ``q_uniform``,
``log_uniform_values``, …): a grid counts each one's values (W&B refuses a grid over any
other distribution), and a random or Bayesian search takes its range.
"""

from __future__ import annotations

import math
import re
from typing import Any

from gate.errors import InputError, InputErrors
from gate.formats.model import dotted, finite_number
from gate.formats.spelling import WANDB_PARAMETER, refuse_unknown
from gate.spec.loader import DataPath, LoadedDoc

MAX_GRID_VALUES = 100_000
"""A range with more values than this in one grid dimension is a typo."""


Found = dict[str, tuple[dict[str, Any] | None, int, DataPath]]
"""Parameter name → (its spec Parameter or None, its grid count, its path in the file)."""


def parameters(section: Any, path: DataPath, doc: LoadedDoc, grid: bool) -> Found:
    """Every parameter (nested ``parameters:`` unnested as W&B does, with dots)."""
    if not isinstance(section, dict) or not section:
        raise InputError(
            "parameters is empty or not a mapping",
            location=doc.source_map.locate(path),
            hint="give each parameter values: [...], value: x or a distribution",
        )
    found: Found = {}
    errors: list[InputError] = []
    for key, config in sorted(section.items()):
        here = (*path, key)
        if isinstance(config, dict) and "parameters" in config and not _is_leaf(config):
            refuse_unknown(config, ("parameters",), here, doc.source_map, "W&B nested parameter")
            nested = parameters(config["parameters"], (*here, "parameters"), doc, grid)
            for name, entry in nested.items():
                _add(found, f"{key}.{name}", entry, doc, errors)
            continue
        try:
            _add(found, str(key), (*_parameter(config, grid, here, doc), here), doc, errors)
        except InputError as exc:
            errors.append(exc)
    if errors:
        raise InputErrors(errors)
    return found


def _add(found: Found, name: str, entry: Any, doc: LoadedDoc, errors: list[InputError]) -> None:
    """One parameter by its dotted name; a second of that name is an error, not a swap.

    NOTE: ``opt: {parameters: {lr: ...}}`` and a key ``opt.lr`` both unnest to ``opt.lr``:
    keeping either one silently prices a grid of the other's size.
    """
    if name in found:
        first, second = found[name][-1], entry[-1]
        errors.append(
            InputError(
                f"parameters: {dotted(first)} and {dotted(second)} are both parameter {name}",
                location=doc.source_map.locate(second),
                hint="rename one of them",
            )
        )
        return
    found[name] = entry


def _is_leaf(config: dict[str, Any]) -> bool:
    return any(k in config for k in ("value", "values", "distribution", "min", "max"))


def _parameter(
    config: Any, grid: bool, path: DataPath, doc: LoadedDoc
) -> tuple[dict[str, Any] | None, int]:
    """One parameter as a spec Parameter and its count in a grid."""
    where = doc.source_map.locate(path)
    shown = dotted(path)
    if not isinstance(config, dict):
        raise InputError(f"{shown} is not a mapping", location=where, hint="write values: [...]")
    refuse_unknown(config, WANDB_PARAMETER, path, doc.source_map, "W&B sweep parameter")
    kind = distribution(config)
    if kind == "categorical":
        values = config.get("values")
        if not isinstance(values, list) or not values:
            raise InputError(f"{shown}.values is empty", location=where, hint="list the values")
        if grid and "probabilities" in config:
            raise InputError(
                f"{shown} gives probabilities, which W&B's grid refuses",
                location=where,
                hint="remove probabilities, or use method: random with run_cap",
            )
        return {"values": values}, len(values)
    if kind == "constant":
        return {"values": [config.get("value")]}, 1
    if "normal" in kind and not grid:
        return None, 1  # unbounded: no range to give the spec; it does not change the count
    low, high = config.get("min"), config.get("max")
    texts = [f"{k} {v!r}" for k, v in (("min", low), ("max", high)) if isinstance(v, str)]
    if any(
        re.fullmatch(r"[-+]?\d+(\.\d*)?[eE][-+]?\d+", v) for v in (low, high) if isinstance(v, str)
    ):
        raise InputError(  # NOTE: YAML 1.1 (PyYAML, W&B's reader) reads 5e-6 as a string
            f"{shown}: {' and '.join(texts)} {'are' if len(texts) > 1 else 'is'} text, not a "
            "number: YAML reads an exponent "
            "without a dot as a string, and W&B refuses it",
            location=where,
            hint="write it with a dot, e.g. 5.0e-6 (or 0.000005)",
        )
    if not isinstance(low, (int, float)) or not isinstance(high, (int, float)) or low > high:
        raise InputError(
            f"{shown}: a {kind} distribution needs min <= max",
            location=where,
            hint="give numbers min and max",
        )
    return _numeric(config, kind, low, high, grid, shown, where)


def _numeric(
    config: dict[str, Any], kind: str, low: float, high: float, grid: bool, shown: str, where: Any
) -> tuple[dict[str, Any] | None, int]:
    """A numeric distribution: a grid's values, or the range a random search draws from."""
    if grid and kind == "int_uniform":
        return _grid_values(range(int(low), int(high) + 1), shown, where)
    if grid and kind == "q_uniform":
        q = config.get("q", 1)
        if not finite_number(q) or not q > 0:
            raise InputError(
                f"{shown}: q is {q!r}, not a step above 0",
                location=where,
                hint="give q: a number above 0 (the grid's step)",
            )
        count = max(0, math.ceil((high - low) / q))  # numpy.arange(min, max, q)
        return _grid_values(
            [low + i * q for i in range(min(count, MAX_GRID_VALUES + 1))], shown, where
        )
    if grid:
        raise InputError(
            f"{shown} is a {kind} distribution, which a grid cannot enumerate (W&B refuses it)",
            location=where,
            hint="give values: [...], int_uniform or q_uniform with q, or use method: random "
            "with run_cap",
        )
    if kind in ("log_uniform",):  # W&B v1: min and max are natural-log exponents
        if high > _MAX_EXPONENT:
            raise InputError(
                f"{shown}: log_uniform's max {high} is an exponent of e past any number",
                location=where,
                hint="log_uniform takes natural-log exponents (max: 2.3 for 10); for the "
                "values themselves use log_uniform_values",
            )
        return {"low": math.exp(low), "high": math.exp(high), "log": True}, 1
    log = kind in ("log_uniform_values", "q_log_uniform_values", "inv_log_uniform_values")
    return {"low": float(low), "high": float(high), "log": log}, 1


_MAX_EXPONENT = 700
"""``e**709`` is the largest a float holds: past it, a W&B v1 ``log_uniform`` bound is no
number (``max: 1000`` overflowed)."""


def _grid_values(values: Any, shown: str, where: Any) -> tuple[dict[str, Any], int]:
    if len(values) > MAX_GRID_VALUES:
        raise InputError(
            f"{shown} has over {MAX_GRID_VALUES:,} values in a grid",
            location=where,
            hint="narrow min/max (or raise q), or use method: random with run_cap",
        )
    if not values:
        raise InputError(f"{shown} has no values", location=where, hint="check min, max and q")
    return {"values": list(values)}, len(values)


def distribution(config: dict[str, Any]) -> str:
    """W&B's inferred distribution: explicit, else by the keys and their types."""
    given = config.get("distribution")
    if isinstance(given, str):
        return given
    if "values" in config:
        return "categorical"
    if "value" in config:
        return "constant"
    low, high = config.get("min"), config.get("max")
    ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (low, high))
    return "int_uniform" if ints else "uniform"
