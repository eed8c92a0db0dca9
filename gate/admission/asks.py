"""What a launch asks for, against what its spec was priced with (pure).

A launch is matched on the accelerator's name, the GPUs in all (per node or pod × nodes or
pods) and whether it runs on spot. A MIG spec's slices are counted as its GPUs; the caller
that knows how slices are asked for (Kueue's ``nvidia.com/mig-*`` resources) compares
them, and SkyPilot, which can ask only for whole GPUs, refuses a MIG spec after this.
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.spec.experiment import Experiment
from gate.spec.trial import Capacity


@dataclass(frozen=True, slots=True)
class GpuAsk:
    """One candidate of a launch's resources: accelerator, count per node, nodes, spot."""

    accelerator: str
    per_node: float
    nodes: int
    spot: bool

    @property
    def total(self) -> float:
        """GPUs over all nodes."""
        return self.per_node * self.nodes

    def __str__(self) -> str:
        nodes = f" ({num(self.per_node)} per node × {self.nodes} nodes)" if self.nodes > 1 else ""
        return f"{num(self.total)} × {self.accelerator}{nodes}"


def matches(ask: GpuAsk, spec: Experiment) -> bool:
    """Same accelerator, same GPUs in all (a MIG spec's slices as GPUs), spot only for spot."""
    want = spec.resources
    same_name = ask.accelerator.lower() == want.accelerator.lower()
    same_count = ask.total == want.gpus_per_trial
    return same_name and same_count and ask.spot == (want.capacity is Capacity.SPOT)


def num(value: float) -> str:
    """``8`` for 8.0, ``0.5`` for 0.5."""
    return str(int(value)) if value == int(value) else str(value)
