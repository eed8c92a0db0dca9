"""W&B sweeps, Katib Experiments, SkyPilot tasks and Hydra sweeps read as budget-gate specs.

:func:`sniff` tells the format from the file's own markers and imports nothing; a
format's mapper (:mod:`gate.formats.wandb`, ``katib``, ``skypilot``, ``hydra``) is imported
only for a file of that format, so a budget-gate spec pays nothing for them. No engine
library is ever imported here: the mappers implement each engine's documented semantics,
and ``engine_tests/`` holds them to the engines' own code. The format models
(:mod:`gate.formats.model`) load only for such a file too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import Enum
from typing import Any

__all__ = ["SPEC_ADD", "SPEC_HINT", "SPEC_LOOKS", "Format", "sniff", "unmarked"]

SPEC_LOOKS = "this looks like a budget-gate spec without its apiVersion/kind lines"
SPEC_ADD = "add `apiVersion: budget-gate/v1` and `kind: Experiment`"
SPEC_HINT = f"{SPEC_LOOKS} — {SPEC_ADD}"
"""A file with a spec's own keys and no apiVersion/kind: a spec that lost its first lines."""


class Format(str, Enum):
    """The file formats budget-gate reads, as reports name them."""

    BUDGET_GATE = "budget-gate spec"
    WANDB = "W&B sweep"
    KATIB = "Katib Experiment"
    SKYPILOT = "SkyPilot task"
    HYDRA = "Hydra sweep"


_HYDRA_GROUP = re.compile(r"(?:^|[\s/])hydra(?:/|$)")
"""A defaults entry of a hydra/ group: ``override hydra/sweeper``, ``hydra/launcher``."""


def sniff(data: Mapping[str, Any]) -> Format:
    """The format of a document by its markers; a budget-gate spec when none matches.

    Hydra's markers come before W&B's: a Hydra app's own keys may be ``method`` and
    ``parameters``, while a W&B sweep never has a top-level ``hydra`` or ``defaults``
    (its schema allows neither, and W&B's local controller refuses them). A file with
    ``defaults`` but no hydra/ group is neither: it is read as a spec, which refuses it
    (:func:`unmarked`).
    """
    api = data.get("apiVersion")
    if api == "budget-gate/v1":
        return Format.BUDGET_GATE
    if (
        isinstance(api, str)
        and api.startswith("kubeflow.org/")
        and data.get("kind") == "Experiment"
    ):
        return Format.KATIB
    if _is_hydra(data):
        return Format.HYDRA
    if api is None and "kind" in data:
        return Format.BUDGET_GATE
    if "method" in data and "parameters" in data and api is None and "defaults" not in data:
        return Format.WANDB
    if api is None and any(key in data for key in ("resources", "run", "num_nodes")):
        return Format.SKYPILOT
    return Format.BUDGET_GATE


_KUBERNETES_API = re.compile(r"(?:[a-z0-9.-]+\.[a-z]+/)?v\d+(?:(?:alpha|beta)\d+)?|[a-z]+/v\d+")
"""``batch/v1``, ``v1``, ``ray.io/v1``, ``jobset.x-k8s.io/v1alpha2``: a Kubernetes object's."""


def kubernetes_object(data: Mapping[str, Any]) -> str | None:
    """``Job (batch/v1)`` for a Kubernetes object given as a spec (Kueue judges those), else None.

    A Katib Experiment is read as one; a budget-gate document of another version is not this.
    """
    api, kind = data.get("apiVersion"), data.get("kind")
    if not isinstance(api, str) or not isinstance(kind, str) or api.startswith("budget-gate/"):
        return None
    if kind in ("Experiment", "Policy"):  # NOTE: budget-gate's own kinds, a version mistyped
        return None
    return f"{kind} ({api})" if _KUBERNETES_API.fullmatch(api) else None


def _is_hydra(data: Mapping[str, Any]) -> bool:
    """A Hydra config: a top-level ``hydra`` key, or a defaults list naming a hydra/ group.

    ``override hydra/sweeper: optuna`` and ``hydra/launcher: submitit_slurm`` are such
    entries; so is a sweeper chosen under ``hydra.sweeper`` itself.
    """
    if "hydra" in data:
        return True
    defaults = data.get("defaults")
    if not isinstance(defaults, list):
        return False
    names = [
        str(key)
        for item in defaults
        for key in (item if isinstance(item, Mapping) else [item])
        if isinstance(key, str)
    ]
    return any(_HYDRA_GROUP.search(name.strip()) for name in names)


_MARKS = (
    "W&B: method and parameters; Katib: apiVersion: kubeflow.org/v1beta1 and kind: Experiment; "
    "SkyPilot: resources, run or num_nodes; Hydra: a hydra: key or a hydra/ group in defaults"
)
"""What makes a file each engine's, as :func:`sniff` tells them."""


def unmarked(data: Mapping[str, Any]) -> str:
    """The fix for a file with no spec section and no engine's marks (a training config).

    Such a file is no spec that lost its first lines: a hint per missing spec key would
    send its author to write a spec into it. Half an engine's marks are named.
    """
    move = "move it out of the specs folder (and out of the Action's specs globs)"
    if "defaults" in data:
        half = "a Hydra sweep names a hydra/ group in defaults (override hydra/sweeper: ...)"
        return f"{half} or has a hydra: key, see budget-gate import; or {move}"
    if "method" in data or "parameters" in data:
        return f"a W&B sweep has both method and parameters, see budget-gate import; or {move}"
    return f"{move}; or, for an engine's file, give it its marks ({_MARKS}), see budget-gate import"
