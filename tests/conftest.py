"""Shared builders: specs and policies from small overrides, quotes, rule runs, a frozen date."""

from __future__ import annotations

import copy
import datetime as dt
import os
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import settings

from gate.estimate.model import Estimate
from gate.estimate.prices import Quote
from gate.estimate.scenarios import estimate
from gate.policy.merge import deep_merge
from gate.policy.model import Policy
from gate.policy.rules.base import RuleContext, Violation
from gate.spec.experiment import Experiment
from gate.spec.trial import Capacity

# Real MLflow tracking server fixtures (mlflow_server, doomed_mlflow), a ledger team, a lab.
pytest_plugins = [
    "tests.mlflow_server",
    "tests.ledger_kit",
    "tests.reconcile_kit",
    "tests.signing_kit",
]

# CI (CI=true) draws the same examples for the same code: whether a commit lands depends on
# the commit, not on the draw. Elsewhere every run draws afresh, and what a run finds is
# added to the tests' explicit examples (tests/test_fuzz.py's FOUND).
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI", "").lower() == "true":
    settings.load_profile("ci")

ROOT = Path(__file__).resolve().parent.parent
# Third-party data the tests read (webhook payloads, schemas, prices), each folder with a
# SOURCES.md; nothing outside the repository is read, so a fresh clone tests itself.
FIXTURES = ROOT / "tests" / "fixtures"
TODAY = dt.date(2026, 11, 29)

LONGEST_FIRST = (
    "test_skypilot_policy.py",
    "test_guard_ray.py",
    "test_ledger_snapshots.py",
    "test_ledger_down.py",
    "unit/test_optuna_validation.py",
    "test_fuzz.py",
    "test_report.py",
    "test_ledger_unfinished.py",
    "test_quiet_greens.py",
    "kueue/test_admission_check.py",
    "github/test_ci_security.py",
    "test_reconcile_cli.py",
    "kueue/test_controller_loop.py",
    "github/test_ci_behaviour.py",
    "test_init.py",
)
"""The suite's longest files (measured with ``--durations=0``), longest first.

pytest-xdist hands whole files to workers in the order collected (``--dist loadfile`` and
``--no-loadscope-reorder`` in pyproject's addopts): the longest ones go first, so no worker
starts a two-minute file while the other is finishing."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """:data:`LONGEST_FIRST` first, then the rest in collection order (a stable sort)."""
    tests = ROOT / "tests"

    def rank(item: pytest.Item) -> int:
        name = item.path.relative_to(tests).as_posix() if item.path.is_relative_to(tests) else ""
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)


BASE_SPEC: dict[str, Any] = {
    "apiVersion": "budget-gate/v1",
    "kind": "Experiment",
    "metadata": {"name": "test-sweep", "labels": {}},
    "resources": {"accelerator": "A100-80GB", "gpus_per_trial": 1, "precision": "bf16"},
    "workload": {"max_epochs": 10, "epoch_minutes": 6},
    "search": {"strategy": "random", "max_trials": 4},
    "quality_gate": [{"metric": "val_f1", "op": ">=", "value": 0.8}],
}
BASE_POLICY: dict[str, Any] = {"apiVersion": "budget-gate/v1", "kind": "Policy"}


def spec_data(overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The base spec deep-merged with ``overrides`` (lists replaced)."""
    return deep_merge(copy.deepcopy(BASE_SPEC), overrides or {})


def make_spec(overrides: dict[str, Any] | None = None) -> Experiment:
    """A valid Experiment: 4 random trials × 1 A100-80GB × 10 epochs of 6 minutes (1 h)."""
    return Experiment.model_validate(spec_data(overrides))


def make_policy(overrides: dict[str, Any] | None = None) -> Policy:
    """A Policy with no limits set unless ``overrides`` sets them."""
    return Policy.model_validate(deep_merge(copy.deepcopy(BASE_POLICY), overrides or {}))


def make_quote(
    price: str | Decimal = "4",
    accelerator: str = "A100-80GB",
    capacity: Capacity = Capacity.ON_DEMAND,
) -> Quote:
    """A fixed price per GPU-hour, as if from a policy override."""
    return Quote(accelerator, capacity, Decimal(price), "USD", "test price")


def make_estimate(spec: Experiment, policy: Policy | None = None, price: str = "4") -> Estimate:
    """Estimate ``spec`` at a fixed price."""
    return estimate(spec, policy or make_policy(), make_quote(price, spec.resources.accelerator))


def run_rule(
    rule: ModuleType,
    spec: Experiment,
    policy: Policy | None = None,
    price: str = "4",
) -> list[Violation]:
    """Run one rule module's check on a spec priced at ``price`` per GPU-hour."""
    policy = policy or make_policy()
    ctx = RuleContext(spec, make_estimate(spec, policy, price), policy, "exp/spec.yaml", TODAY)
    return list(rule.check(ctx))


@pytest.fixture
def write_yaml(tmp_path: Path):
    """Write text to a file under tmp_path and return its path as a string."""

    def write(name: str, text: str) -> str:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return str(path)

    return write


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        help="rewrite golden files (and docs/examples) from the current output",
    )


@pytest.fixture
def golden(request: pytest.FixtureRequest):
    """Compare text with a committed file; --update-goldens rewrites the file first."""
    update = request.config.getoption("--update-goldens")

    def check(path: Path, actual: str) -> None:
        if update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(actual, encoding="utf-8", newline="")
        assert path.exists(), f"{path} is missing: run pytest --update-goldens"
        expected = path.read_text(encoding="utf-8")
        assert actual == expected, f"{path.name} differs: review, then pytest --update-goldens"

    return check


@pytest.fixture(autouse=True)
def _no_launch_key_left_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts without a launch key: ``gate.require_approval`` sets one in
    ``os.environ`` for the processes its launch starts, and in a shared test process it would
    make every later launch join that one."""
    from gate.evaluation.launching import LAUNCH_KEY_ENV

    monkeypatch.delenv(LAUNCH_KEY_ENV, raising=False)
