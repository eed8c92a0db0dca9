"""``budget-gate check``: validate, price and gate one or more specs."""

from __future__ import annotations

import argparse
import os

from gate.commands.common import (
    as_of,
    evaluate_against,
    expand_specs,
    ledger_view,
    make_evaluator,
    make_report,
    print_errors,
    render_context,
)
from gate.commands.output import append_step_summary, emit, plan_targets
from gate.errors import InputError


def run(args: argparse.Namespace) -> int:
    """Evaluate every spec once and write each requested format; the worst outcome exits.

    With ``--base-ref`` each spec's base version is priced too, under the same policies
    and prices, so the diff shows what the change to the spec did to its cost. The ledger
    is opened only for a policy with a monthly budget, or with --tracking-uri (then fresh
    approvals count as in ``verify``); plain checks never import MLflow. Whenever the
    ledger is read, fresh approvals count. Nothing to check is bad input (exit 3) unless
    ``--allow-empty``: a gate that passes an empty directory can be walked around.
    """
    targets = plan_targets(args.format)
    ledger = ledger_view(
        args, as_of(args)[1], approvals=args.tracking_uri is not None, if_read=True
    )
    evaluator = make_evaluator(args, fail_on_warn=args.fail_on_warn, ledger=ledger)
    if args.base_ref:
        results, diffs = evaluate_against(evaluator, args.base_ref, args.specs)
    else:
        results, diffs = [evaluator.evaluate(path) for path in expand_specs(args.specs)], []
    if not results and not diffs and not args.allow_empty:
        raise InputError(
            f"no specs found in {' '.join(args.specs)} (directories are searched for *.yaml "
            "and *.yml)",
            hint="check the path, or pass --allow-empty if having no specs is fine",
        )
    report = make_report(results, evaluator, render_context(args, os.environ), diffs)
    print_errors(results)
    emit(report, targets)
    if any(t.name == "github" for t in targets):
        append_step_summary(report, os.environ)
    return report.outcome.exit_code
