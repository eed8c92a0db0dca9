"""Calibration files for ``tests/test_fuzz.py``: a Hypothesis strategy and the cases it found.

A case is an example spec with a ``model`` label and a calibration of its runs (as JSON
data, written by the test beside the policies): an entry of the spec's key or a coarser
one, whose figures are plausible but for one field that takes an edge value — what
``json.dumps`` spells with an exponent (``5e-05``, ``1e+16``), what overflows or divides by
zero, what no run can measure — or, rarely, anything at all. Half the specs give the
model's size instead of an epoch time, so that the calibration's MFU prices them.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml
from hypothesis import strategies as st

from tests.conftest import ROOT

EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
LABELLED = [p for p in EXAMPLES if "model" in yaml.safe_load(p.read_text())["metadata"]["labels"]]
"""The examples a calibration can describe: those with a ``model`` label to look runs up by."""
FLOPS_PRIOR = {"parameters": 8.0e9, "tokens_per_epoch": 2.0e8}
"""A ``workload.model`` in place of the epoch time, so that the calibration's MFU prices it."""

FIGURES = {
    "epoch_minutes": st.floats(0.01, 1e4),
    "setup_minutes": st.floats(0, 600),
    "plateau_fraction": st.floats(0.01, 1),
    "mfu": st.floats(0.01, 1),
}
EDGE_FIGURES = st.sampled_from([0.0, 5e-324, 1e-30, 5e-05, 1.5, 1e16, 1e300, 1.0e308, -1.0, 10**40])
RATES = st.floats(0, 1)
EDGE_RATES = st.sampled_from([5e-05, 1e-30, 5e-324, 1.0, 1.5, -0.1])
RUNS = st.integers(5, 10**5)  # at least the policy's calibration.min_runs: the entry is used
EDGE_RUNS = st.sampled_from([0, 1, 4, 10**40, -1])
ANYTHING = st.one_of(
    st.booleans(), st.none(), st.text(max_size=12), st.integers(), st.floats(allow_nan=False)
)
DATES = {"first": "2026-11-01", "last": "2026-11-30"}


def _spec(name: str, flops: bool) -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / "examples" / name).read_text(encoding="utf-8"))
    doc["metadata"].pop("team", None)  # judged by the default policy
    if flops:
        for key in ("epoch_minutes", "samples_per_second", "train_samples"):
            doc["workload"].pop(key, None)
        doc["workload"]["model"] = dict(FLOPS_PRIOR)
    return doc


def _key(spec: dict[str, Any], coarser: int = 0) -> dict[str, Any]:
    """The spec's key (model, accelerator, GPUs, precision), less its last ``coarser`` parts."""
    resources = spec["resources"]
    parts = [
        ("model", spec["metadata"]["labels"]["model"]),
        ("accelerator", resources["accelerator"]),
        ("gpus", resources["gpus_per_trial"]),
        ("precision", resources.get("precision", "fp32")),
    ]
    return dict(parts[: len(parts) - coarser])


def _document(entry: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "budget-gate/v1",
        "kind": "Calibration",
        "created": "2026-12-01",
        "experiments": ["fuzz"],
        "runs": entry["runs"],
        "entries": [entry],
    }


@st.composite
def _stat(draw: st.DrawFn, field: str, edge: bool) -> dict[str, Any]:
    low, median, high = sorted(draw(st.lists(FIGURES[field], min_size=3, max_size=3)))
    stat = {"runs": draw(RUNS), "p10": low, "median": median, "p90": high}
    if edge:
        stat[draw(st.sampled_from(list(stat)))] = draw(st.one_of(*[EDGE_FIGURES] * 9, ANYTHING))
    return stat


@st.composite
def calibrated(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """An example spec (YAML text) and a calibration of its runs (JSON data)."""
    spec = _spec(draw(st.sampled_from(LABELLED)).name, flops=draw(st.booleans()))
    runs = draw(RUNS)
    failed = draw(st.integers(0, runs))
    entry: dict[str, Any] = {
        "key": _key(spec, coarser=draw(st.integers(0, 3))),  # 3: the model on any hardware
        "runs": runs,
        "finished": runs - failed,
        "failed": failed,
        **DATES,
    }
    edged = draw(st.sampled_from([*FIGURES, "failure_rate", "failure_point", "runs"]))
    for field in draw(st.lists(st.sampled_from(list(FIGURES)), min_size=1, unique=True)):
        entry[field] = draw(_stat(field, edge=field == edged))
    for field in ("failure_rate", "failure_point"):
        if field == edged:
            entry[field] = draw(st.one_of(*[EDGE_RATES] * 9, ANYTHING))
        elif draw(st.booleans()):
            entry[field] = draw(RATES)
    if edged == "runs":
        entry["runs"] = draw(EDGE_RUNS)
    return yaml.safe_dump(spec, sort_keys=False, allow_unicode=True), _document(entry)


def _found(name: str, figures: dict[str, Any], *, flops: bool = False) -> tuple[str, Any]:
    """A fixed case: an example spec and one entry of its exact key with these figures."""
    spec = _spec(name, flops)
    runs = figures.get("runs", 20)
    entry = {"key": _key(spec), "runs": runs, "finished": runs, "failed": 0, **DATES}
    entry.update(copy.deepcopy(figures))
    return yaml.safe_dump(spec, sort_keys=False), _document(entry)


def _stat_of(runs: int, low: float, median: float, high: float) -> dict[str, Any]:
    return {"runs": runs, "p10": low, "median": median, "p90": high}


CALIBRATION_FOUND = [
    _found("cifar-sweep.yaml", {"runs": 20_000, "finished": 19_999, "failed": 1,
           "failure_rate": 5e-05, "epoch_minutes": _stat_of(20_000, 3.0, 3.5, 4.1)}),
    _found("cifar-sweep.yaml", {"plateau_fraction": _stat_of(20, 1.0e308, 1.0e308, 1.0e308)}),
    _found("llm-finetune-grid.yaml", {"mfu": _stat_of(12, 0.0, 0.0, 0.0)}, flops=True),
]  # fmt: skip
"""Issue 22's calibration crashes: a file ``calibrate --write`` wrote with one failure in
20,000 runs, its rate spelled ``5e-05`` and read back as text; a plateau fraction of 1e308
(an overflow in ``measured.py``); an MFU of 0 under a FLOPs prior (a division by zero in
``flops.py``)."""
