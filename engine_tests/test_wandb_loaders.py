"""W&B's own loaders read the annotated sweeps: the ``# x-budget-gate:`` comment passes all.

Every W&B path that checks a sweep config checks it with the open-source sweeps engine's
schema, whose top level allows no other key (``additionalProperties: false``):

- ``wandb sweep --controller FILE`` (or ``controller: {type: local}`` in the file) loads it
  with ``load_sweep_config`` and refuses it on ``_WandbController._validate``;
- ``wandb.controller(config)`` and its ``create()`` build ``sweeps.SweepConfig(config)``,
  which raises;
- ``sweeps.next_run(config, runs, validate=True)`` does the same before it suggests a run.

The cloud controller (``wandb sweep FILE``, ``wandb.sweep(config)``) sends the config to the
W&B server, which answers with the violations as warnings (``configValidationWarnings``,
printed by ``handle_sweep_config_violations``); that needs the server, so it is not run
here. Each W&B path needs a login before it gets as far as the check, so the tests call
the check itself, W&B's own code, on what W&B's own loader read. Runs in a venv with the
``wandb`` extra (its protobuf cannot share a venv with Katib's): see .ci/run.
"""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

CONFIGS = Path(__file__).parent.parent / "tests" / "fixtures" / "configs"
ANNOTATED = [
    "rules/wandb-grid-3x4.yaml",
    "rules/wandb-grid-ranges.yaml",
    "rules/wandb-random-capped.yaml",
    "wandb/sweep-grid.annotated.yaml",
    "wandb/sweep-local-hyperband.annotated.yaml",  # controller: {type: local}
]
REFUSED = "Additional properties are not allowed ('x-budget-gate' was unexpected)"


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")


def cli_load(path: Path) -> dict:
    """The sweep as ``wandb sweep`` reads it."""
    from wandb.sdk.launch.sweeps.utils import load_sweep_config

    config = load_sweep_config(str(path))
    assert config is not None
    return config


def local_controller_check(config: dict) -> str:
    """``_WandbController._validate``: what ``wandb sweep --controller`` runs, "" when fine.

    The instance skips ``__init__``, which logs in to the W&B server; ``_validate`` uses
    nothing of it.
    """
    from wandb.wandb_controller import _WandbController

    return object.__new__(_WandbController)._validate(config)


@pytest.mark.parametrize("name", ANNOTATED)
def test_every_wandb_check_accepts_the_comment_block(name: str) -> None:
    from wandb.wandb_controller import sweeps  # the engine the local controller uses

    text = (CONFIGS / name).read_text()
    assert "\n# x-budget-gate:" in text or text.startswith("# x-budget-gate:")
    config = cli_load(CONFIGS / name)
    assert "x-budget-gate" not in config
    assert local_controller_check(config) == ""
    assert sweeps.schema_violations_from_proposed_config(config) == []
    filled = sweeps.SweepConfig(config)  # wandb.controller(config) and create() build it
    assert filled["method"] == config["method"]
    assert sweeps.next_run(filled, [], validate=True) is not None


@pytest.mark.parametrize("name", ANNOTATED)
def test_every_wandb_check_refuses_the_top_level_key(name: str, tmp_path: Path) -> None:
    from wandb.wandb_controller import sweeps

    keyed = tmp_path / "sweep.yaml"
    keyed.write_text(
        "\n".join(
            line[2:] if line.startswith(("# x-budget-gate:", "#   ")) else line
            for line in (CONFIGS / name).read_text().splitlines()
        )
    )
    config = cli_load(keyed)
    assert "x-budget-gate" in config
    message = local_controller_check(config)
    # what `wandb sweep --controller` prints after "Error in sweep file: " before it stops
    assert message.startswith("Malformed sweep config detected!") and REFUSED in message
    with pytest.raises(jsonschema.ValidationError, match="x-budget-gate"):
        sweeps.SweepConfig(config)


def test_budget_gate_reads_the_facts_wandb_never_sees() -> None:
    import datetime as dt

    from gate.estimate.prices import load_catalog
    from gate.evaluation.evaluate import Evaluator
    from gate.policy.loader import builtin_policies

    evaluator = Evaluator(builtin_policies(), load_catalog(), dt.date(2026, 1, 1))
    spec = evaluator.evaluate_spec(str(CONFIGS / "wandb/sweep-local-hyperband.annotated.yaml"))
    assert spec.spec is not None
    assert (spec.spec.resources.accelerator, spec.spec.workload.epoch_minutes) == (
        "A100-80GB",
        1.5,
    )
