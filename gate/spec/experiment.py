"""The ``kind: Experiment`` spec: what a team plans to run, as strict models.

Field names equal the YAML keys so that validation errors map straight back to a line
and column. Every model forbids unknown keys; :mod:`gate.spec.validation` adds "did you mean".
The document's parts live beside it: each trial's resources and workload in
:mod:`gate.spec.trial`, the search and its stop conditions in :mod:`gate.spec.search`, the
base model and bounded types in :mod:`gate.spec.base`; this module holds the document itself,
its metadata, quality gate and tracking.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from gate.model import Field, Model, StrictFloat, field_check
from gate.spec.base import Name, PositiveFloat, Text
from gate.spec.search import HALVING, Search, Stopping
from gate.spec.trial import Resources, Workload


class Metadata(Model):
    """Who owns the experiment and how its spend is attributed."""

    name: Name
    """The experiment's name, as reports and the ledger show it."""
    team: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", max_length=63)] | None = None
    """The team whose policy applies: policies/<team>.yaml (else the default policy, said in the
    output)."""
    owner: Name | None = None
    """Who runs the experiment; they may not approve it unless the policy allows self-approval."""
    labels: dict[Name, Text] = Field(default_factory=dict)
    """Attribution labels such as cost-center, environment, workload-type and model; a policy can
    require some."""


class Condition(Model):
    """One quality-gate condition; a ``*`` in the metric name means every matching metric."""

    metric: Name
    """A logged metric name; * matches any characters (every match must pass)."""
    op: Literal[">=", ">", "<=", "<", "=="]
    """The comparison the metric's final value must satisfy."""
    value: StrictFloat
    """The threshold."""


class Tracking(Model):
    """Where the runs are recorded."""

    mlflow_experiment: Name | None = None
    """The MLflow experiment whose runs reconcile reads."""


class Experiment(Model):
    """A whole ``kind: Experiment`` document."""

    api_version: Literal["budget-gate/v1"] = Field(alias="apiVersion")
    """Always budget-gate/v1."""
    kind: Literal["Experiment"]
    """Always Experiment."""
    metadata: Metadata
    """Name, team, owner and attribution labels."""
    resources: Resources
    """The hardware each trial holds."""
    workload: Workload
    """How long one trial trains."""
    search: Search = Field(default_factory=Search)
    """What is searched, and how many trials run."""
    stopping: Stopping = Field(default_factory=Stopping)
    """What ends a trial early."""
    quality_gate: list[Condition] = Field(default_factory=list)
    """Conditions every qualified model meets; reconcile counts the runs that do."""
    deadline_hours: PositiveFloat | None = None
    """Hours by which the search must finish; the wall-clock is checked against it."""
    tracking: Tracking = Field(default_factory=Tracking)
    """Where the runs are tracked."""

    @field_check("search")
    @staticmethod
    def _one_epoch_bound(search: Search, data: dict[str, Any]) -> None:
        # NOTE: a scheduler's max_epochs below the workload's stops every trial there: two
        # numbers for one bound, one of them silently unused. One must give way.
        workload, scheduler = data.get("workload"), search.scheduler
        halving = search.strategy in HALVING
        top = scheduler.max_epochs if scheduler is not None and halving else None
        if workload is not None and top is not None and top < workload.max_epochs:
            raise ValueError(
                f"scheduler.max_epochs {top} is below workload.max_epochs "
                f"{workload.max_epochs}, so no trial trains past epoch {top} — set "
                f"workload.max_epochs: {top}, or drop scheduler.max_epochs"
            )
        if workload is not None and top is not None and top > workload.max_epochs:
            # NOTE: the engine lays its rungs out to top: past the workload's last epoch
            # no rung prunes, and those trials were priced as if one did
            raise ValueError(
                f"scheduler.max_epochs {top} is above workload.max_epochs "
                f"{workload.max_epochs}: the scheduler's rungs run to {top}, but no trial "
                f"trains past epoch {workload.max_epochs} — set scheduler.max_epochs: "
                f"{workload.max_epochs}, or drop it"
            )
