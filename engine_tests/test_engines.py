"""The mappings of gate.formats held to the engines' own code (run in a venv with them).

The engines cannot share the test extra's venv (see pyproject.toml), so .ci/run makes one
with the ``engines`` extra and runs this file there: ``python -m pytest
engine_tests/test_engines.py``. W&B's own loaders need a venv of their own
(test_wandb_loaders.py, the ``wandb`` extra).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import yaml

from gate.estimate.prices import load_catalog
from gate.evaluation.evaluate import Evaluator
from gate.policy.loader import builtin_policies

CONFIGS = Path(__file__).parent.parent / "tests" / "fixtures" / "configs"


def ours(path: Path):
    evaluator = Evaluator(builtin_policies(), load_catalog(), dt.date(2026, 1, 1))
    return evaluator.evaluate_spec(str(path))


@pytest.mark.parametrize(
    "name",
    [
        "rules/wandb-grid-3x4.yaml",
        "rules/wandb-grid-ranges.yaml",
        "wandb/sweep-grid.annotated.yaml",
    ],
)
def test_wandb_grid_size_is_what_the_sweeps_engine_enumerates(name: str) -> None:
    from sweeps.grid_search import grid_search_next_runs

    config = yaml.safe_load((CONFIGS / name).read_text())
    runs: list = []
    while True:  # the engine hands out one run per call until the grid is exhausted
        suggestion = grid_search_next_runs(runs, config)[0]
        if suggestion is None:
            break
        runs.append(suggestion)
    assert ours(CONFIGS / name).result.estimate.worst.trials == len(runs)


def test_wandb_grid_with_a_distribution_is_refused_by_the_engine_too() -> None:
    from sweeps.grid_search import grid_search_next_runs

    config = yaml.safe_load((CONFIGS / "rules/wandb-grid-distribution.yaml").read_text())
    with pytest.raises(ValueError, match="disallowed type with grid search"):
        grid_search_next_runs([], config)


def test_katib_api_models_load_the_annotated_experiment() -> None:
    from kubeflow.katib import V1beta1ExperimentSpec
    from kubernetes.client import V1ObjectMeta

    data = yaml.safe_load((CONFIGS / "katib/median-stop.annotated.yaml").read_text())
    spec = data["spec"]
    model = V1beta1ExperimentSpec(
        max_trial_count=spec["maxTrialCount"],
        parallel_trial_count=spec["parallelTrialCount"],
        max_failed_trial_count=spec["maxFailedTrialCount"],
    )
    meta = V1ObjectMeta(name=data["metadata"]["name"], annotations=data["metadata"]["annotations"])
    assert meta.annotations["budget-gate/epoch_minutes"] == "4"
    ours_spec = ours(CONFIGS / "katib/median-stop.annotated.yaml").spec
    assert (ours_spec.search.max_trials, ours_spec.search.max_concurrent_trials) == (
        model.max_trial_count,
        model.parallel_trial_count,
    )


def test_optuna_sweeper_defaults_are_the_plugins_own() -> None:
    from hydra_plugins.hydra_optuna_sweeper.config import OptunaSweeperConf

    from gate.formats.hydra_sweepers import OPTUNA_DEFAULTS

    conf = OptunaSweeperConf()
    assert {"n_trials": conf.n_trials, "n_jobs": conf.n_jobs} == OPTUNA_DEFAULTS
