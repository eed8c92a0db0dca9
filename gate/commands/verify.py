"""``budget-gate verify``: the launch-time check against the approvals ledger."""

from __future__ import annotations

import argparse
import sys

from gate.commands.common import (
    as_of,
    ledger_view,
    make_evaluator,
    make_report,
    print_errors,
)
from gate.reporters import load_reporter


def run(args: argparse.Namespace) -> int:
    """Exit 0 only with no approval needed or a fresh one; else 2 (or 1, 3, 4) and why.

    The ledger is opened only when the spec needs an approval or its policy a budget.
    """
    _, now = as_of(args)
    evaluator = make_evaluator(args, ledger=ledger_view(args, now, approvals=True))
    result = evaluator.evaluate(args.spec)
    print_errors([result])
    sys.stdout.write(load_reporter(args.format).render(make_report([result], evaluator)))
    return result.outcome.exit_code
