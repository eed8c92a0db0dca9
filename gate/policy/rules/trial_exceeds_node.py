"""A trial needs more GPUs than one node of the cluster has.

Without multi-node support a trial that needs more GPUs than ``cluster.gpus_per_node``
can never be scheduled, however many GPUs are free in total (free total ≠ schedulable).

Passes (policy ``cluster: {gpus_per_node: 8}``)::

    resources: {accelerator: H100, gpus_per_trial: 8}

Fails::

    resources: {accelerator: H100, gpus_per_trial: 12}
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation

ID = "BG401"
SLUG = "trial-exceeds-node"
TITLE = "Trial does not fit on one node"
DEFAULT_SEVERITY = Severity.ERROR


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Compare gpus_per_trial with the node size when multi-node is off."""
    cluster = ctx.policy.cluster
    gpus = ctx.spec.resources.gpus_per_trial
    if (
        cluster.gpus_per_node is not None
        and not cluster.multi_node
        and gpus > cluster.gpus_per_node
    ):
        yield Violation(
            f"{gpus} GPUs per trial cannot fit on one node of {cluster.gpus_per_node} GPUs "
            "(multi-node is off)",
            ("resources", "gpus_per_trial"),
        )
