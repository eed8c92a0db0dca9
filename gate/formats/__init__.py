"""W&B sweeps, Katib Experiments, SkyPilot tasks and Hydra sweeps read as budget-gate specs.

:func:`sniff` tells the format from the file's own markers and imports nothing; a
format's mapper (:mod:`gate.formats.wandb`, ``katib``, ``skypilot``, ``hydra``) is imported
only for a file of that format, so a budget-gate spec pays nothing for them. No engine
library is ever imported here: the mappers implement each engine's documented semantics,
and ``engine_tests/`` holds them to the engines' own code. The format models
(:mod:`gate.formats.model`) load only for such a file too.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any

__all__ = ["Format", "sniff"]


class Format(str, Enum):
    """The file formats budget-gate reads, as reports name them."""

    BUDGET_GATE = "budget-gate spec"
    WANDB = "W&B sweep"
    KATIB = "Katib Experiment"
    SKYPILOT = "SkyPilot task"
    HYDRA = "Hydra sweep"


_HYDRA_SWEEPERS = ("hydra/sweeper",)


def sniff(data: Mapping[str, Any]) -> Format:
    """The format of a document by its markers; a budget-gate spec when none matches."""
    api = data.get("apiVersion")
    if api == "budget-gate/v1" or (api is None and "kind" in data):
        return Format.BUDGET_GATE
    if (
        isinstance(api, str)
        and api.startswith("kubeflow.org/")
        and data.get("kind") == "Experiment"
    ):
        return Format.KATIB
    if "method" in data and "parameters" in data and api is None:
        return Format.WANDB
    if _is_hydra(data):
        return Format.HYDRA
    if api is None and any(key in data for key in ("resources", "run", "num_nodes")):
        return Format.SKYPILOT
    return Format.BUDGET_GATE


def _is_hydra(data: Mapping[str, Any]) -> bool:
    """A Hydra config that sweeps: ``hydra.sweeper`` set, or a sweeper chosen in defaults."""
    hydra = data.get("hydra")
    if isinstance(hydra, Mapping) and isinstance(hydra.get("sweeper"), Mapping):
        return True
    defaults = data.get("defaults")
    if not isinstance(defaults, list):
        return False
    return any(
        isinstance(item, Mapping) and any(str(k).endswith(_HYDRA_SWEEPERS) for k in item)
        for item in defaults
    )
