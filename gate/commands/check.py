"""``budget-gate check``: validate, price and gate one or more specs."""

from __future__ import annotations

import argparse
import sys

from gate.commands.common import (
    as_of,
    expand_specs,
    ledger_view,
    make_evaluator,
    make_report,
    print_errors,
)
from gate.reporters import REPORTERS


def run(args: argparse.Namespace) -> int:
    """Evaluate every spec and print one report; the worst outcome is the exit code.

    The ledger is opened only for a policy with a monthly budget, or with --tracking-uri
    (then fresh approvals count as in ``verify``); plain checks never import MLflow.
    """
    ledger = ledger_view(args, as_of(args)[1], approvals=args.tracking_uri is not None)
    evaluator = make_evaluator(args, fail_on_warn=args.fail_on_warn, ledger=ledger)
    results = [evaluator.evaluate(path) for path in expand_specs(args.specs)]
    report = make_report(results, evaluator)
    print_errors(results)
    sys.stdout.write(REPORTERS[args.format]().render(report))
    return report.outcome.exit_code
