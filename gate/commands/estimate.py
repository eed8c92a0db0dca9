"""``budget-gate estimate``: price one spec and explain the number, without the policy verdict."""

from __future__ import annotations

import argparse
import json
import sys

from gate.commands.common import make_evaluator, make_report, print_errors
from gate.estimate import Estimate, Scenario
from gate.money import format_amount
from gate.report import Outcome, SpecResult
from gate.reporters.json import JsonReporter


def run(args: argparse.Namespace) -> int:
    """Print the scenarios, their cost drivers and assumptions; exit 3 on bad input only."""
    evaluator = make_evaluator(args)
    result = evaluator.evaluate(args.spec)
    print_errors([result])
    if result.outcome is Outcome.INVALID:
        return result.outcome.exit_code
    if args.format == "json":
        document = json.loads(JsonReporter().render(make_report([result], evaluator)))
        only = document["results"][0]
        estimate_doc = {
            "schema_version": document["schema_version"],
            "file": only["file"],
            "name": only["name"],
            "currency": only["currency"],
            "estimate": only["estimate"],
            "price_catalog": document["price_catalog"],
        }
        sys.stdout.write(json.dumps(estimate_doc, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(_render_text(result, evaluator.catalog.source, evaluator.catalog.date))
    return 0


def _render_text(result: SpecResult, source: str, date: str) -> str:
    est = result.estimate
    assert est is not None
    lines = [f"{result.file} — {result.name} (policy: {result.policy})"]
    q = est.quote
    lines.append(
        f"price: {format_amount(q.per_gpu_hour, 5)} {q.currency} per GPU-hour, "
        f"{q.accelerator} {q.capacity.value} ({q.basis})"
    )
    if est.epoch_minutes_range is not None:
        low, high = est.epoch_minutes_range
        lines.append(f"epoch time: {low:f}–{high:f} min (worst takes the high end)")
    for scenario in (est.worst, est.expected):
        lines.extend(_scenario_lines(scenario, result.currency))
    lines.extend(_saving_lines(est, result.currency))
    lines.append(f"prices: {source}; {date}")
    return "\n".join(lines) + "\n"


def _saving_lines(est: Estimate, currency: str) -> list[str]:
    lines = [
        f"  {s.what} saves {format_amount(s.gpu_hours, 1)} GPU-h "
        f"({format_amount(s.cost)} {currency}) in the {s.scenario} case"
        for s in est.savings
    ]
    spot = est.spot
    if spot is not None:
        verdict = "saves" if spot.net_saving >= 0 else "COSTS MORE by"
        lines.append(
            f"  spot {verdict} {format_amount(abs(spot.net_saving))} {currency} against on-demand "
            f"{format_amount(spot.on_demand_cost)} (spot {format_amount(spot.spot_cost)}, "
            f"recompute {format_amount(spot.recompute_cost)}, extra ops "
            f"{format_amount(spot.extra_ops_cost)}; expected case)"
        )
    return ["", "what the plan saves", *lines] if lines else []


def _scenario_lines(s: Scenario, currency: str) -> list[str]:
    d = s.drivers
    return [
        "",
        f"{s.name} case",
        f"  cost        {format_amount(s.cost)} {currency}"
        f" = {d.trials:,} trials × {d.gpus_per_trial} GPUs × "
        f"{format_amount(d.hours_per_trial, 3)} h × {format_amount(d.price_per_gpu_hour, 5)}",
        f"  GPU-hours   {format_amount(s.gpu_hours, 1)}"
        + (f" (retries {format_amount(s.retry_gpu_hours, 1)})" if s.retry_gpu_hours else "")
        + (
            f" (recompute {format_amount(s.recompute_gpu_hours, 1)})"
            if s.recompute_gpu_hours
            else ""
        ),
        f"  per trial   {format_amount(s.cost_per_trial)} {currency}, "
        f"{s.epochs_per_trial} epochs, {format_amount(s.hours_per_trial, 2)} h",
        f"  wall-clock  {format_amount(s.wall_clock_hours, 1)} h "
        f"({s.waves:,} waves of {s.concurrency} concurrent trials)",
        "  assumptions:",
        *(f"    - {note}" for note in s.assumptions),
    ]
