"""Plain words for a cost diff: amounts before and after, and one sentence per driver.

Shared by the text and Markdown reports and by ``budget-gate diff``. For example
``grid grew from 12 to 48 trials (×4)``.
"""

from __future__ import annotations

from decimal import Decimal

from gate.estimate.model import Estimate, Scenario
from gate.estimate.settings import ScenarioName
from gate.evaluation.diff import Change, Driver, DriverChange, ScenarioDiff, SpecDiff
from gate.money import fixed, format_amount
from gate.reporters import assert_never


def format_ratio(ratio: Decimal) -> str:
    """Three significant digits, no exponent: ``×4``, ``×0.25``, ``×2.05``, ``×1,235``."""
    rounded = fixed(ratio, max(0, 2 - ratio.adjusted()))
    text = f"{rounded.normalize():,f}" if rounded else "0"
    return f"×{text}"


def signed(amount: Decimal, places: int = 2) -> str:
    """An amount with its sign: ``+1,190.64`` or ``-12.00``."""
    return ("+" if amount >= 0 else "-") + format_amount(abs(amount), places)


def cost_change(s: ScenarioDiff, currency: str) -> str:
    """``396.88 → 1,587.52 USD (+1,190.64 USD, ×4)``."""
    return (
        f"{format_amount(s.base_cost)} → {format_amount(s.head_cost)} {currency} "
        f"({signed(s.head_cost - s.base_cost)} {currency}{_times(s.base_cost, s.head_cost)})"
    )


def gpu_hours_change(s: ScenarioDiff) -> str:
    """``96.4 → 385.6 (+289.2, ×4)``."""
    base, head = s.base_gpu_hours, s.head_gpu_hours
    return (
        f"{format_amount(base, 1)} → {format_amount(head, 1)} "
        f"({signed(head - base, 1)}{_times(base, head)})"
    )


def status(diff: SpecDiff, base_ref: str) -> str:
    """One phrase for what happened to the spec since ``base_ref``."""
    match diff.change:
        case Change.ADDED:
            return f"new: not in {base_ref}"
        case Change.DELETED:
            return f"deleted: only in {base_ref}"
        case Change.UNCHANGED:
            return f"cost unchanged since {base_ref}"
        case Change.CHANGED:
            return f"changed since {base_ref}"
        case Change.UNPRICED:
            return f"not compared with {base_ref}: {diff.reason}"
        case _:
            assert_never(diff.change)


def diff_lines(diff: SpecDiff, base_ref: str) -> list[str]:
    """The change as plain-text lines: status, each scenario, the drivers or the problems."""
    lines = [status(diff, base_ref)]
    if diff.change is not Change.UNCHANGED:
        lines.extend(
            f"  {s.name:<8}  cost {cost_change(s, diff.currency)}; GPU-hours {gpu_hours_change(s)}"
            for s in diff.scenarios
        )
    lines.extend(f"  - {line}" for line in explain(diff))
    lines.extend(f"  {problem}" for problem in diff.problems)
    return lines


def explain(diff: SpecDiff) -> list[str]:
    """One sentence per changed driver of the worst case, and the expected case's hours."""
    if diff.change is not Change.CHANGED or diff.base is None or diff.head is None:
        return []
    worst, expected = diff.scenarios
    lines = [_driver(c, diff.base, diff.head, "worst", diff.currency) for c in worst.drivers]
    worst_hours = _hours_change(worst)
    expected_hours = _hours_change(expected)
    if expected_hours is not None and expected_hours != worst_hours:
        lines.append(
            "expected case: "
            + _driver(expected_hours, diff.base, diff.head, "expected", diff.currency)
        )
    return lines


def _hours_change(s: ScenarioDiff) -> DriverChange | None:
    return next((c for c in s.drivers if c.driver is Driver.HOURS_PER_TRIAL), None)


def _driver(
    change: DriverChange, base: Estimate, head: Estimate, scenario: ScenarioName, currency: str
) -> str:
    ratio = f" ({format_ratio(change.ratio)})" if change.ratio is not None else ""
    match change.driver:
        case Driver.TRIALS:
            return _trials(change, base, head) + ratio
        case Driver.GPUS_PER_TRIAL:
            return f"GPUs per trial {_moved(change, 0)}{ratio}"
        case Driver.HOURS_PER_TRIAL:
            epochs = _epochs(base.scenario(scenario).epochs_per_trial, head.scenario(scenario))
            return f"hours per trial {_moved(change, 2)}{ratio}{epochs}"
        case Driver.PRICE_PER_GPU_HOUR:
            hardware = _hardware(base, head)
            return f"price per GPU-hour {_moved(change, 5)} {currency}{ratio}{hardware}"
        case _:
            assert_never(change.driver)


def _epochs(base_epochs: int, head: Scenario) -> str:
    if base_epochs == head.epochs_per_trial:
        return ""
    return f": {head.epochs_per_trial} epochs per trial, was {base_epochs}"


def _trials(change: DriverChange, base: Estimate, head: Estimate) -> str:
    b, h = int(change.base), int(change.head)
    if base.strategy is head.strategy:
        verb = "grew" if h > b else "shrank"
        return f"{head.strategy.value} {verb} from {b:,} to {h:,} trials"
    return (
        f"search changed from {base.strategy.value} ({b:,} trials) "
        f"to {head.strategy.value} ({h:,} trials)"
    )


def _moved(change: DriverChange, places: int) -> str:
    verb = "rose" if change.head > change.base else "fell"
    base, head = format_amount(change.base, places), format_amount(change.head, places)
    return f"{verb} from {base} to {head}"


def _hardware(base: Estimate, head: Estimate) -> str:
    b, h = base.quote, head.quote
    if (b.accelerator, b.capacity) == (h.accelerator, h.capacity):
        return ""
    return f": {h.accelerator} {h.capacity.value}, was {b.accelerator} {b.capacity.value}"


def _times(base: Decimal, head: Decimal) -> str:
    return f", {format_ratio(head / base)}" if base and head else ""
