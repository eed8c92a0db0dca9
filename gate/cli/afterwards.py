"""The commands after the runs: reconcile, calibrate and report."""

from __future__ import annotations

import argparse
from typing import Any

from gate.cli.base import EPILOG, Parser, ascii_int, non_negative, pr_number
from gate.commands.output import FormatTarget, parse_target
from gate.reporters import REPORT_FORMATS


def add_reconcile(commands: argparse._SubParsersAction[Any], parents: list[Parser]) -> None:
    """``reconcile``: what the runs cost, against the estimate."""
    reconcile = commands.add_parser(
        "reconcile",
        parents=parents,
        help="MLflow runs → actual cost, cost per qualified model, waste and variance",
        description="Read the runs of the spec's tracking.mlflow_experiment tagged with its "
        "fingerprint, price them at the spec's price, judge them on its quality gate, and "
        "report the cost per qualified model (failed runs included), waste and the variance "
        "against the estimate and the approval. The actual cost is recorded in the ledger "
        "unless --dry-run, or while runs are still running. Exits 1 with no qualified model "
        "or when the actual cost exceeds the approved amount (else the worst case) by more "
        "than the policy's limits.reconcile_tolerance.",
        epilog=EPILOG,
    )
    reconcile.add_argument("spec", metavar="SPEC", help="the spec file")
    reconcile.add_argument(
        "--format",
        choices=("text", "json", "markdown"),
        default="text",
        help="output format (default: text)",
    )
    reconcile.add_argument(
        "--all-versions",
        action="store_true",
        help="include runs of every version of the spec (any fingerprint) in the experiment",
    )
    reconcile.add_argument(
        "--dry-run", action="store_true", help="write nothing: no ledger record, no PR comment"
    )
    reconcile.add_argument(
        "--pr",
        type=pr_number,
        metavar="N",
        help="also write the Markdown report as a comment on pull request N (needs "
        "GITHUB_TOKEN and GITHUB_REPOSITORY; GITHUB_API_URL for GitHub Enterprise)",
    )
    reconcile.add_argument(
        "--monitor",
        metavar="METRIC",
        help="metric whose history shows the plateau (default: the spec's early-stopping "
        "monitor, else val_loss)",
    )
    reconcile.add_argument(
        "--mode", choices=("min", "max"), help="whether --monitor improves down or up"
    )
    reconcile.add_argument(
        "--min-delta",
        type=non_negative,
        metavar="X",
        help="smallest change that counts as an improvement (default: the spec's, else 0)",
    )


def add_calibrate(commands: argparse._SubParsersAction[Any], parents: list[Parser]) -> None:
    """``calibrate``: learn from finished runs; ``--backtest``."""
    calibrate = commands.add_parser(
        "calibrate",
        parents=parents,
        help="learn epoch times, plateaus, failures and MFU from finished MLflow runs",
        description="Read every finished run tagged by budget-gate (gate.tracking.run_tags) "
        "in the MLflow store, learn per model label, accelerator, GPUs per trial and "
        "precision (falling back to coarser keys) the epoch time, setup time, plateau, "
        "failure rate and, where runs log their FLOPs, the MFU, and print them. --write "
        "saves the calibration file that check and estimate price with (commit it as "
        "DIR/calibration.json); --backtest replays the history in time order and prints "
        "how accurate the calibrated estimates were against the declared ones (MAPE, bias, "
        "coverage of each experiment's cost and epoch time), overall and per team.",
    )
    calibrate.add_argument("--write", metavar="FILE", help="write the calibration file (JSON) here")
    calibrate.add_argument(
        "--experiment",
        action="append",
        metavar="NAME",
        help="read only this MLflow experiment (repeatable; default: every active one)",
    )
    calibrate.add_argument(
        "--backtest",
        action="store_true",
        help="also replay the history: each experiment priced with the calibration of the "
        "runs before it (its spec found by path and fingerprint, on disk or in git history), "
        "against what its runs cost",
    )
    calibrate.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="output format; json holds the calibration and the backtest figures (default: text)",
    )


def report_target(value: str) -> FormatTarget:
    """``NAME``, ``NAME=FILE`` or ``NAME=-`` (stdout) of the monthly report's formats."""
    return parse_target(value, tuple(REPORT_FORMATS))


def add_report(commands: argparse._SubParsersAction[Any], parents: list[Parser]) -> None:
    """``report``: the month's team report for FinOps."""
    report = commands.add_parser(
        "report",
        parents=parents,
        help="the monthly team report: spend against budget, cost per qualified model, "
        "waste, spot, approvals; text, Markdown, JSON, HTML or FOCUS",
        description="Read every run tagged by budget-gate that started in the month (UTC) "
        "and the approvals ledger, price each run as reconcile does, and report per team "
        "the budget, approved, launched and actual spend, the forecast, the estimates' "
        "accuracy, cost per qualified model by model label with its trend, waste by kind, "
        "the costliest experiments, spot against on-demand and the approvals, with the "
        "teams ranked. A run counts in the month it started; an approval in the month it "
        "was recorded.",
    )
    report.add_argument(
        "--month",
        metavar="YYYY-MM[..YYYY-MM]",
        help="the month, or an inclusive range of months, 36 at most with the trend's "
        "(default: the last full month, UTC)",
    )
    report.add_argument("--team", metavar="TEAM", help="report one team only")
    report.add_argument(
        "--trend",
        type=_months,
        default=2,
        metavar="N",
        help="months before the period in the cost-per-qualified-model trend, 0 to 24 (default: 2)",
    )
    report.add_argument(
        "--format",
        action="append",
        type=report_target,
        metavar="FORMAT[=FILE]",
        help="text, markdown, json, html or focus (FOCUS 1.2 CSV rows), to stdout or to "
        "FILE; repeatable (default: text)",
    )
    report.add_argument(
        "--issue",
        action="store_true",
        help="also post the Markdown report as the period's issue, edited when run again "
        "(needs GITHUB_TOKEN and GITHUB_REPOSITORY; GITHUB_API_URL for GitHub Enterprise)",
    )


def _months(text: str) -> int:
    number = ascii_int(text)
    if number is None or number > 24:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of months from 0 to 24")
    return number
