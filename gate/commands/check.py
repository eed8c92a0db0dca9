"""``budget-gate check``: validate, price and gate one or more specs."""

from __future__ import annotations

import argparse
import sys

from gate.commands.common import expand_specs, make_evaluator, make_report, print_errors
from gate.reporters import REPORTERS


def run(args: argparse.Namespace) -> int:
    """Evaluate every spec and print one report; the worst outcome is the exit code."""
    evaluator = make_evaluator(args, fail_on_warn=args.fail_on_warn)
    results = [evaluator.evaluate(path) for path in expand_specs(args.specs)]
    report = make_report(results, evaluator)
    print_errors(results)
    sys.stdout.write(REPORTERS[args.format]().render(report))
    return report.outcome.exit_code
