"""Cheaper plans for the same experiment: each priced, with what it gives up, by saving.

``budget-gate estimate --alternatives`` and the pull-request comment (for specs that fail or
need approval) show them: the same search under ASHA or Hyperband, random search with half
the configurations, bf16 (at the stated speed-up of :mod:`gate.policy.counterfactual`), and
spot capacity with checkpoints. Each is the spec with a few keys changed, priced again
under the same policy; those that do not apply (already ASHA, already bf16) are left out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal

from gate.estimate.model import Estimate
from gate.policy.counterfactual import BF16_SPEEDUP, TENSOR_CORE_GPUS, apply_edits, bf16_edits
from gate.policy.counterfactual import configurations as count
from gate.policy.findings import Edit
from gate.spec.experiment import Experiment
from gate.spec.search import Strategy
from gate.spec.trial import Capacity, Precision

Pricer = Callable[[Experiment], Estimate | None]
"""Price an edited spec (its own quote: capacity may change); ``None`` without a price."""

CHECKPOINT_MINUTES = 30
"""The checkpoint interval the spot alternative assumes when the spec sets none."""


@dataclass(frozen=True, slots=True)
class Alternative:
    """One cheaper plan: its edits, what it gives up, and its price next to the plan's."""

    name: str
    edits: tuple[Edit, ...]
    gives_up: str
    estimate: Estimate
    saving: Decimal
    """Expected cost of the plan as written less this one's (negative: it costs more)."""


def alternatives(spec: Experiment, current: Estimate, price: Pricer) -> tuple[Alternative, ...]:
    """The alternatives that apply to ``spec``, priced, the largest expected saving first."""
    found = []
    for name, edits, gives_up in _candidates(spec, current):
        edited = apply_edits(spec, edits)
        priced = price(edited) if edited is not None else None
        if priced is not None:
            saving = current.expected.cost - priced.expected.cost
            found.append(Alternative(name, edits, gives_up, priced, saving))
    return tuple(sorted(found, key=lambda a: a.saving, reverse=True))


def _candidates(spec: Experiment, current: Estimate) -> Iterator[tuple[str, tuple[Edit, ...], str]]:
    search = spec.search
    configurations = count(spec, current.worst.trials)
    trials = Edit(("search", "max_trials"), configurations)
    if search.strategy is not Strategy.ASHA:
        yield (
            "ASHA",
            (Edit(("search", "strategy"), "asha"), trials),
            "trials behind at a rung stop early, so a slow starter can be cut; no saving "
            "in the worst case",
        )
    if search.strategy is not Strategy.HYPERBAND:
        yield (
            "Hyperband",
            (Edit(("search", "strategy"), "hyperband"), trials),
            "brackets wait at rung barriers (a longer wall-clock) and small budgets drop "
            "slow starters",
        )
    if configurations > 1:
        half, seeds = configurations // 2, len(search.seeds)
        runs = f"{half} trials" if seeds == 1 else f"{half} configurations × {seeds} seeds"
        yield (
            f"random search, {runs}",
            (Edit(("search", "strategy"), "random"), Edit(("search", "max_trials"), half)),
            f"samples {half} of the {configurations} configurations",
        )
    if (
        spec.resources.precision is Precision.FP32
        and spec.resources.accelerator in TENSOR_CORE_GPUS
    ):
        yield (
            "bf16",
            bf16_edits(spec),
            f"the {BF16_SPEEDUP}× speed-up is assumed, and the metric must hold in mixed precision",
        )
    if spec.resources.capacity is not Capacity.SPOT:
        every = spec.resources.checkpoint_every_minutes or CHECKPOINT_MINUTES
        yield (
            "spot with checkpoints",
            (
                Edit(("resources", "capacity"), "spot"),
                Edit(("resources", "checkpoint_every_minutes"), every),
            ),
            f"preemptions: work since the last checkpoint (every {every:g} min) is redone, "
            "the wall-clock grows, and training must resume from checkpoints",
        )
