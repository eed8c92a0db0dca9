"""``budget-gate diff BASE HEAD``: the cost change between two versions of a spec.

Both versions are priced under the same policies and prices, so the change is the spec's
doing, and explained by driver. ``/dev/null`` stands for a missing side, as in git.
Exits 0, or 3 when either version is invalid (the change is then reported as not compared).
"""

from __future__ import annotations

import argparse
import os

from gate.commands.common import make_evaluator, print_errors
from gate.commands.discovery import refuse_stdin
from gate.commands.output import write_stdout
from gate.errors import InputError
from gate.evaluation.diff import compare
from gate.evaluation.evaluate import Evaluator
from gate.evaluation.report import SpecResult
from gate.policy.findings import Outcome
from gate.reporters import indented_json
from gate.reporters.change import diff_lines
from gate.reporters.json import SCHEMA_VERSION, diff_document


def run(args: argparse.Namespace) -> int:
    """Price both versions and print the change; the exit code says only if input was bad."""
    refuse_stdin("diff", args.base, args.head)
    evaluator = make_evaluator(args)
    base, head = _version(evaluator, args.base), _version(evaluator, args.head)
    if base is None and head is None:
        raise InputError(f"BASE and HEAD are both {os.devnull}", hint="give at least one spec")
    present = [r for r in (base, head) if r is not None]
    print_errors(present)
    diff = compare(args.head if head is not None else args.base, base, head)
    policies = {"base": base.policy if base else None, "head": head.policy if head else None}
    if args.format == "json":
        document = {
            "schema_version": SCHEMA_VERSION,
            "base": args.base,
            "head": args.head,
            "policy": policies,
            "diff": diff_document(diff),
        }
        write_stdout(indented_json.dumps(document) + "\n")
    else:
        lines = diff_lines(diff, args.base)
        text = [f"{diff.file}: {lines[0]}", *lines[1:], _policies(policies)]
        write_stdout("\n".join(text) + "\n")
    invalid = any(r.outcome is Outcome.INVALID for r in present)
    return Outcome.INVALID.exit_code if invalid else 0


def _policies(policies: dict[str, str | None]) -> str:
    """``  policy: vision``, or each side's when they differ: which policy judged what."""
    base, head = policies["base"], policies["head"]
    if base is None or head is None or base == head:
        return f"  policy: {base or head or 'none (neither side was read)'}"
    return f"  policy: {base} (base), {head} (head)"


def _version(evaluator: Evaluator, path: str) -> SpecResult | None:
    return None if path == os.devnull else evaluator.evaluate(path)
