"""The pricing assumptions a policy may set, and what the estimate reads of a policy (pure).

The estimate owns these knobs; :class:`gate.policy.model.Policy` composes them into the
document a team writes. The estimate sees a policy only through :class:`PricingPolicy`, so
it never imports the policy package that builds on it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Literal, Protocol

from gate.model import Field, Model, StrictBool, StrictFloat, StrictInt
from gate.money import Money
from gate.spec.base import Name
from gate.spec.search import LearningCurve
from gate.spec.trial import Capacity

ScenarioName = Literal["worst", "expected"]
"""The two priced outcomes of an estimate; a policy chooses which one its limits use."""


class PriceOverride(Model):
    """A team's own price per GPU-hour for one accelerator, by capacity."""

    on_demand: Money | None = Field(default=None, alias="on-demand")
    """The team's on-demand price per GPU-hour."""
    spot: Money | None = None
    """The team's spot price per GPU-hour."""
    reserved: Money | None = None
    """The team's reserved price per GPU-hour."""

    def price_for(self, capacity: Capacity) -> Money | None:
        """The override for ``capacity``, if the team set one."""
        return {
            Capacity.ON_DEMAND: self.on_demand,
            Capacity.SPOT: self.spot,
            Capacity.RESERVED: self.reserved,
        }[capacity]


class OwnedHardware(Model):
    """Cost inputs of GPUs the team owns, priced per GPU-hour of useful work."""

    purchase_price: Money
    """What one GPU cost to buy."""
    amortization_years: Annotated[StrictFloat, Field(gt=0, le=20)]
    """Years over which the purchase is written off."""
    power_kw: Annotated[StrictFloat, Field(ge=0, le=5)]
    """Power one GPU draws, in kW."""
    pue: Annotated[StrictFloat, Field(ge=1, le=3)] = 1.4
    """The data center's power usage effectiveness."""
    electricity_per_kwh: Money
    """The price of a kWh."""
    utilization: Annotated[StrictFloat, Field(gt=0, le=1)]
    """The share of hours the GPU does useful work."""
    facility_per_gpu_year: Money = Decimal(0)
    """Facility cost per GPU and year."""
    staff_per_gpu_year: Money = Decimal(0)
    """Staff cost per GPU and year."""


class Prices(Model):
    """Where prices come from: the packaged catalog, a default cloud, overrides, owned GPUs."""

    cloud: Name | None = None
    """The cloud whose catalog prices apply (default: the dearest)."""
    usd_exchange_rate: Annotated[Money, Field(gt=0)] | None = None
    """Units of the policy's currency per USD, to convert catalog prices."""
    overrides: dict[str, PriceOverride] = Field(default_factory=dict)
    """The team's own prices, by accelerator."""
    owned: dict[str, OwnedHardware] = Field(default_factory=dict)
    """GPUs the team owns, priced from their cost, by accelerator."""


RANK_CORRELATION = 0.99
"""Default rank correlation between rungs, fitted to real Optuna studies
(tests/unit/test_optuna_validation.py)."""


class Estimation(Model):
    """Assumptions behind the expected scenario, when the spec gives none."""

    plateau_fraction: Annotated[StrictFloat, Field(gt=0, le=1)] = 0.5
    """Where the metric goes flat, as a share of max_epochs, when the spec says nothing."""
    mfu: Annotated[StrictFloat, Field(gt=0, le=1)] = Field(
        default=0.35,
        description=(
            "Model FLOPs utilization: the share of the GPUs' dense peak a training run "
            "achieves, for specs that give workload.model instead of an epoch time."
        ),
    )
    learning_curve: LearningCurve | None = None
    """The default expected shape of the metric."""
    queue_wait_hours: Annotated[StrictFloat, Field(ge=0, le=1e6, allow_inf_nan=False)] = 0.0
    """Hours a trial waits for its GPUs before it starts."""
    rank_correlation: Annotated[StrictFloat, Field(ge=0, le=1)] = Field(
        default=RANK_CORRELATION,
        description=(
            "Correlation between a trial's scores at successive rungs of asynchronous "
            "successive halving (ASHA, Optuna's pruners): how well a trial keeps its rank. "
            "0 ranks trials afresh at every rung; real learning curves come close to 1."
        ),
    )
    sampler_gain: Annotated[StrictFloat, Field(ge=0, le=5)] = Field(
        default=0.0,
        description=(
            "How much better, in standard deviations of trial quality, the trials of an "
            "asynchronous successive-halving search are once its sampler has seen 10: 0 for "
            "random search, about 1 for a model-based sampler such as TPE (Optuna's default)."
        ),
    )


class Calibration(Model):
    """How the estimate uses a calibration file (``budget-gate calibrate``).

    A key (model label, accelerator, GPUs per trial, precision) with at least ``min_runs``
    measured runs prices the expected case with the measured median epoch time, plateau
    and failure rate, and the worst case with the measured 90th percentile. A spec that
    declares an epoch time more than ``tolerance`` below the measured 10th percentile (or
    a plateau that much earlier than measured) is flagged (BG308).
    """

    use: StrictBool = True
    """Whether measured figures price the spec when the calibration has them."""
    min_runs: Annotated[StrictInt, Field(ge=1, le=100_000)] = 5
    """Runs a key needs before its measurements count."""
    tolerance: Annotated[StrictFloat, Field(ge=0, lt=1, allow_inf_nan=False)] = 0.2
    """How far (a fraction) a declared epoch time may fall below the measured 10th percentile
    before BG308 flags it."""


class Returns(Model):
    """The return a team accepts for more training; below it the epochs stop paying.

    Cost ROI: stop when d(metric)/d(GPU-h) falls below ε. Over a window of
    ``patience_epochs`` (the spec's early-stopping patience when it has one) the monitored
    metric must gain more than ``min_relative_gain`` of its value, and, when set, more than
    ``min_gain_per_gpu_hour`` per GPU-hour and ``min_gain_per_cost`` per unit of the
    policy's currency. :mod:`gate.estimate.returns` applies it, for the estimate, reconcile
    and the runtime guard alike.
    """

    min_relative_gain: Annotated[StrictFloat, Field(ge=0, lt=1, allow_inf_nan=False)] = 0.001
    """The gain, as a share of the metric's value, a patience window must bring."""
    min_gain_per_gpu_hour: Annotated[StrictFloat, Field(ge=0, allow_inf_nan=False)] | None = None
    """The gain per GPU-hour a patience window must bring."""
    min_gain_per_cost: Annotated[StrictFloat, Field(ge=0, allow_inf_nan=False)] | None = None
    """The gain per unit of the policy's currency a patience window must bring."""
    patience_epochs: Annotated[StrictInt, Field(ge=1, le=100_000)] = 10
    """Epochs of the window, when the spec's early stopping names no patience."""


class Reliability(Model):
    """How often trials fail, and how often they are retried (charged to the experiment)."""

    failure_rate: Annotated[StrictFloat, Field(ge=0, lt=1)] = 0.0
    """The probability that a trial attempt fails."""
    max_retries: Annotated[StrictInt, Field(ge=0, le=10)] = 0
    """How often a failed trial is retried."""
    failure_point: Annotated[StrictFloat, Field(gt=0, le=1)] = 0.5
    """How far into a trial a failure happens on average (a fraction)."""


class Spot(Model):
    """Spot-capacity assumptions: preemptions per hour of a trial, and extra cost per trial."""

    preemptions_per_hour: Annotated[StrictFloat, Field(ge=0, le=10)] = 0.01
    """Expected preemptions per hour of a spot trial."""
    extra_ops_per_trial: Money = Decimal(0)
    """Extra cost per spot trial (storage, egress, operations)."""


class ConcurrencyLimit(Protocol):
    """What the estimate reads of the limits: the GPUs the team may hold at once.

    And the scenario the limits judge, said beside the estimate.
    """

    @property
    def max_concurrent_gpus(self) -> int | None:
        """GPUs the team may hold at once, or ``None`` when unlimited."""
        ...

    @property
    def scenario(self) -> ScenarioName:
        """The scenario limits and approval triggers are judged on."""
        ...


class ClusterShape(Protocol):
    """The team's cluster, where its policy gives it: it caps the trials that run at once."""

    @property
    def gpus_per_node(self) -> int | None:
        """GPUs in one node."""
        ...

    @property
    def nodes(self) -> int | None:
        """Nodes in the cluster."""
        ...

    @property
    def multi_node(self) -> bool:
        """Whether one trial may span nodes."""
        ...


class PricingPolicy(Protocol):
    """What the estimate reads of a team's policy (a :class:`gate.policy.model.Policy`)."""

    @property
    def currency(self) -> str:
        """The currency every price and cost is stated in."""
        ...

    @property
    def prices(self) -> Prices:
        """Price overrides, owned hardware and the exchange rate."""
        ...

    @property
    def limits(self) -> ConcurrencyLimit:
        """The concurrent-GPU limit that sets the waves of trials."""
        ...

    @property
    def estimation(self) -> Estimation:
        """Plateau, learning-curve and queue assumptions of the expected case."""
        ...

    @property
    def returns(self) -> Returns:
        """The marginal return below which more epochs stop paying."""
        ...

    @property
    def reliability(self) -> Reliability:
        """Failure and retry assumptions."""
        ...

    @property
    def spot(self) -> Spot:
        """Preemption and spot-overhead assumptions."""
        ...

    @property
    def cluster(self) -> ClusterShape:
        """The cluster's nodes and GPUs per node (unset: not known)."""
        ...
