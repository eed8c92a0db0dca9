"""What an estimate says (pure): the priced scenarios, the savings, the spot comparison.

The result types of :func:`gate.estimate.scenarios.estimate`, apart from the arithmetic
that fills them, so that what reads an estimate (rules, reporters, the monthly report,
the guard's limits) never imports how it is computed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from gate.estimate.caps import Cut
from gate.estimate.measured import Measured
from gate.estimate.prices import Quote
from gate.estimate.settings import ScenarioName
from gate.spec.search import Strategy


@dataclass(frozen=True, slots=True)
class Drivers:
    """The factors whose product is the GPU cost, kept for explaining diffs.

    ``hours_per_trial`` is the average billed hours of a trial (pruning, retries and
    preemptions included); ``gpu_share`` is below 1 only for MIG slices.
    """

    trials: int
    gpus_per_trial: int
    hours_per_trial: Decimal
    price_per_gpu_hour: Decimal
    gpu_share: Decimal = Decimal(1)


@dataclass(frozen=True, slots=True)
class Scenario:
    """One priced outcome of the experiment under stated assumptions.

    ``hours_per_trial`` and ``cost_per_trial`` describe the longest single trial (hours
    held, spot recompute included), which is what per-trial limits are about; ``drivers``
    describe the average one. ``epochs_trained`` is how far the trial that trains furthest
    gets (a fraction where a per-trial cap cuts it; ``epochs_per_trial`` counts its whole
    epochs), and ``unfinished`` says a cap stops even that trial before its last epoch;
    ``cut`` then says which cap, where, and what the trial would have held without it.
    """

    name: ScenarioName
    trials: int
    epochs_per_trial: int
    hours_per_trial: Decimal
    gpu_hours: Decimal
    cost: Decimal
    cost_per_trial: Decimal
    concurrency: int
    waves: int
    wall_clock_hours: Decimal
    drivers: Drivers
    assumptions: tuple[str, ...]
    retry_gpu_hours: Decimal = Decimal(0)
    recompute_gpu_hours: Decimal = Decimal(0)
    other_cost: Decimal = Decimal(0)
    epochs_trained: Decimal = Decimal(0)
    unfinished: bool = False
    first_result_hours: Decimal = Decimal(0)
    """Hours until the first trial finishes (queue wait, barriers and the trial's own run)."""
    cut: Cut | None = None
    work_steps: int = 0
    """What pricing the scenario takes, counted (no clock): the steps of the simulations
    behind the plan's counts (ASHA's expected promotions) plus
    :data:`gate.estimate.scenarios.RUNG_STEPS` per rung priced."""


@dataclass(frozen=True, slots=True)
class Saving:
    """GPU-hours and money a stop condition or pruning saves in one scenario."""

    what: str
    scenario: ScenarioName
    gpu_hours: Decimal
    cost: Decimal


@dataclass(frozen=True, slots=True)
class SpotComparison:
    """Spot net saving = on-demand − spot − recompute − extra ops (expected case).

    Both sides price the same training work: the plan's epochs, per-trial caps left out.
    """

    on_demand_cost: Decimal
    spot_cost: Decimal
    recompute_cost: Decimal
    extra_ops_cost: Decimal

    @property
    def net_saving(self) -> Decimal:
        """Negative when spot is expected to cost more than on-demand."""
        return self.on_demand_cost - self.spot_cost - self.recompute_cost - self.extra_ops_cost


class Estimate:
    """Both scenarios, the price and search strategy behind them, and what stop conditions save.

    The expected case and the spot comparison may be given as functions that price them
    when first read: a fix's probe reads the enforced (worst) case only, most often, and an
    asynchronous search's expected case is a simulation.
    """

    __slots__ = (
        "_expected",
        "_expected_cut",
        "_spot",
        "epoch_minutes_range",
        "judged_on",
        "measured",
        "on_demand",
        "quote",
        "savings",
        "strategy",
        "worst",
    )

    def __init__(
        self,
        worst: Scenario,
        expected: Scenario | Callable[[], Scenario],
        quote: Quote,
        strategy: Strategy,
        savings: tuple[Saving, ...] = (),
        spot: SpotComparison | Callable[[], SpotComparison | None] | None = None,
        epoch_minutes_range: tuple[Decimal, Decimal] | None = None,
        measured: Measured | None = None,
        expected_cut: Callable[[], Cut | None] | None = None,
        judged_on: ScenarioName = "worst",
        on_demand: Quote | None = None,
    ) -> None:
        self.worst, self._expected, self.quote, self.strategy = worst, expected, quote, strategy
        self.on_demand = on_demand
        """The on-demand price spot is compared with (a spot spec's; on the spot price's cloud)."""
        self.savings, self._spot = savings, spot
        self.epoch_minutes_range, self.measured = epoch_minutes_range, measured
        self._expected_cut: Callable[[], Cut | None] | tuple[Cut | None] | None = expected_cut
        self.judged_on: ScenarioName = judged_on
        """The scenario the policy's limits and approval triggers judge (``limits.scenario``)."""

    @property
    def expected(self) -> Scenario:
        """The expected case: early stopping and pruning as configured or calibrated."""
        if callable(self._expected):
            self._expected = self._expected()
        return self._expected

    @property
    def expected_cut(self) -> Cut | None:
        """Where a per-trial cap stops the expected case's furthest trial (``None``: it finishes).

        The expected case's own ``cut``; a lazy estimate finds it from the plan's rungs
        without pricing the case (an ASHA search's expected case is a simulation).
        """
        if callable(self._expected) and self._expected_cut is not None:
            if callable(self._expected_cut):
                self._expected_cut = (self._expected_cut(),)
            return self._expected_cut[0]
        return self.expected.cut

    @property
    def spot(self) -> SpotComparison | None:
        """Spot against on-demand for the same work, for a spot spec with an on-demand price."""
        if callable(self._spot):
            self._spot = self._spot()
        return self._spot

    def scenario(self, name: ScenarioName) -> Scenario:
        """The scenario a policy enforces (``worst`` unless it says otherwise)."""
        return self.worst if name == "worst" else self.expected

    @property
    def work_steps(self) -> int:
        """What pricing this spec takes (its two scenarios): a measure no clock gives."""
        return self.worst.work_steps + self.expected.work_steps

    def _fields(self) -> tuple[object, ...]:
        return (
            self.worst,
            self.expected,
            self.quote,
            self.strategy,
            self.savings,
            self.spot,
            self.epoch_minutes_range,
            self.measured,
            None,  # NOTE: the expected cut, found already where the expected case is priced
            self.judged_on,
        )

    def __eq__(self, other: object) -> bool:
        return type(other) is Estimate and self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Estimate(worst={self.worst!r}, expected={self.expected!r}, quote={self.quote!r})"

    def __reduce__(self) -> tuple[object, ...]:
        return Estimate, self._fields()
