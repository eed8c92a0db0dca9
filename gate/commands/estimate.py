"""``budget-gate estimate``: price specs and explain the numbers, without the policy verdict."""

from __future__ import annotations

import argparse
import json

from gate.commands.common import make_evaluator, make_report, print_errors
from gate.commands.discovery import expand_specs, refuse_stdin, require_specs
from gate.commands.output import write_stdout
from gate.estimate.model import Estimate, Scenario
from gate.evaluation.report import SpecResult
from gate.money import format_amount, format_nonzero
from gate.policy.findings import Outcome
from gate.reporters import indented_json
from gate.reporters.json import JsonReporter
from gate.reporters.text import alternative_lines, judged_on
from gate.words import counted


def run(args: argparse.Namespace) -> int:
    """Print each spec's scenarios, drivers, assumptions and savings; exit 3 on bad input.

    With ``--alternatives``, also the cheaper plans for the same experiment, priced. Input
    errors go to stderr, and in JSON also under ``invalid`` (one object per spec, with
    ``check``'s error objects).
    """
    refuse_stdin("estimate", *args.specs)
    paths = require_specs(expand_specs(args.specs), args.specs)
    every = frozenset(Outcome) if args.alternatives else frozenset()
    evaluator = make_evaluator(args, alternatives_for=every)
    results = [evaluator.evaluate(path) for path in paths]
    print_errors(results)
    valid = [r for r in results if r.outcome is not Outcome.INVALID]
    if args.summary:
        write_stdout(render_summary(valid))
    elif args.format == "json":
        document = json.loads(JsonReporter().render(make_report(results, evaluator)))
        estimates = [
            {
                key: r[key]
                for key in ("file", "name", "policy", "currency", "estimate", "alternatives")
                if key != "alternatives" or args.alternatives
            }
            for r in document["results"]
            if r["outcome"] != Outcome.INVALID.value
        ]
        invalid = [
            {"file": r["file"], "errors": r["errors"]}
            for r in document["results"]
            if r["outcome"] == Outcome.INVALID.value
        ]
        out = {
            "schema_version": document["schema_version"],
            "estimates": estimates,
            "invalid": invalid,
            "price_catalog": document["price_catalog"],
        }
        write_stdout(indented_json.dumps(out) + "\n")
    else:
        blocks = [_render_text(r) for r in valid]
        catalog = evaluator.catalog
        write_stdout("\n".join([*blocks, f"prices: {catalog.source}; {catalog.date}\n"]))
    return 3 if len(valid) < len(results) else 0


def render_summary(results: list[SpecResult]) -> str:
    """A Markdown table, one row per spec: worst and expected trials, GPU-h, cost, wall-clock."""
    lines = [
        "| spec | trials (worst / expected) | GPU-h (worst / expected) "
        "| cost (worst / expected) | wall-clock (worst / expected) |",
        "|---|---:|---:|---:|---:|",
    ]
    for result in results:
        est = result.estimate
        assert est is not None
        w, e = est.worst, est.expected
        lines.append(
            f"| `{result.file}` | {w.trials:,} / {e.trials:,} "
            f"| {format_nonzero(w.gpu_hours, 1)} / {format_nonzero(e.gpu_hours, 1)} "
            f"| {format_nonzero(w.cost)} / {format_nonzero(e.cost)} {result.currency} "
            f"| {format_nonzero(w.wall_clock_hours, 1)} h "
            f"/ {format_nonzero(e.wall_clock_hours, 1)} h |"
        )
    return "\n".join(lines) + "\n"


def _render_text(result: SpecResult) -> str:
    est = result.estimate
    assert est is not None
    lines = [f"{result.file} — {result.name} (policy: {result.policy})"]
    q = est.quote
    lines.append(
        f"price: {format_amount(q.per_gpu_hour, 5)} {q.currency} per GPU-hour, "
        f"{q.accelerator} {q.capacity.value} ({q.basis})"
    )
    if (judged := judged_on(est)) is not None:
        lines.append(judged)
    if est.epoch_minutes_range is not None:
        low, high = est.epoch_minutes_range
        lines.append(f"epoch time: {low:f}–{high:f} min (worst takes the high end)")
    for scenario in (est.worst, est.expected):
        lines.extend(_scenario_lines(scenario, result.currency))
    lines.extend(_saving_lines(est, result.currency))
    lines.extend(alternative_lines(result))
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
    extra = "".join(
        f" ({label} {format_amount(value, 1)})"
        for label, value in (("retries", s.retry_gpu_hours), ("recompute", s.recompute_gpu_hours))
        if value
    )
    gpus = counted(d.gpus_per_trial, "GPU") + (f" × {d.gpu_share:.4f}" if d.gpu_share != 1 else "")
    return [
        "",
        f"{s.name} case",
        f"  cost        {format_nonzero(s.cost)} {currency}"
        f" = {counted(d.trials, 'trial')} × {gpus} × "
        f"{format_amount(d.hours_per_trial, 3)} h × {format_amount(d.price_per_gpu_hour, 5)}"
        + (f" + {format_amount(s.other_cost)} other" if s.other_cost else ""),
        f"  GPU-hours   {format_nonzero(s.gpu_hours, 1)}{extra}",
        f"  per trial   up to {format_nonzero(s.cost_per_trial)} {currency}, "
        f"{_epochs(s)}, {format_nonzero(s.hours_per_trial, 2)} h",
        f"  wall-clock  {format_nonzero(s.wall_clock_hours, 1)} h "
        f"({counted(s.waves, 'wave')} of {counted(s.concurrency, 'concurrent trial')})",
        f"  first result {format_amount(s.first_result_hours, 1)} h (the first trial finished)",
        "  assumptions:",
        *(f"    - {note}" for note in s.assumptions),
    ]


def _epochs(s: Scenario) -> str:
    """The furthest trial's epochs; where a cap cuts it, the share it trains (never "0")."""
    if not s.unfinished:
        return counted(s.epochs_per_trial, "epoch")
    return f"{format_amount(s.epochs_trained, 2)} epochs trained (a cap stops it)"
