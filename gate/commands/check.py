"""``budget-gate check``: validate, price and gate one or more specs."""

from __future__ import annotations

import argparse
import dataclasses
import os
import stat
import sys
from pathlib import Path

from gate.commands.common import (
    as_of,
    evaluate_against,
    ledger_view,
    make_evaluator,
    make_report,
    print_errors,
    render_context,
)
from gate.commands.discovery import expand_specs
from gate.commands.output import (
    FormatTarget,
    append_step_summary,
    emit,
    plan_targets,
    refuse_overwriting,
)
from gate.commands.workers import evaluate_all, workers_for
from gate.errors import GateError, InputError
from gate.evaluation.evaluate import Evaluator
from gate.evaluation.report import SpecResult
from gate.ledger.view import LedgerView
from gate.policy.findings import Outcome
from gate.policy.verdict import FailOn, exit_code
from gate.spec.loader import MAX_FILE_BYTES, STDIN_NAME

QUICK_EXIT = True
"""``check`` writes no ledger and starts no thread: it may exit without a teardown."""
STDIN = "-"
BLOCKED = frozenset({Outcome.VIOLATION, Outcome.APPROVAL_REQUIRED})
"""The outcomes whose specs get cheaper plans in the pull-request comment."""


def run(args: argparse.Namespace) -> int:
    """Evaluate every spec once and write each requested format; the worst outcome exits.

    With ``--base-ref`` each spec's base version is priced too, under the same policies
    and prices, so the diff shows what the change to the spec did to its cost. The ledger
    is opened only for a policy with a monthly budget, or with --tracking-uri; whenever it
    is read, fresh approvals count, as in ``verify``; plain checks never import MLflow.
    Nothing to check is bad input (exit 3) unless ``--allow-empty``.
    """
    targets = plan_targets(args.format)
    if args.specs.count(STDIN) > 1 or (STDIN in args.specs and args.base_ref):
        raise InputError(
            "'-' (the spec on stdin) may be given once, and not with --base-ref",
            hint="save the spec to a file to compare it with a git ref",
        )
    ledger = ledger_view(
        args, as_of(args)[1], approvals=args.tracking_uri is not None, if_read=True
    )
    fail_on = FailOn(args.fail_on)
    # NOTE: the pull-request comment (markdown, and github's step summary) shows cheaper
    # plans for specs that fail or need approval; other formats do not pay for them.
    comment = any(t.name in ("markdown", "github") for t in targets)
    evaluator = make_evaluator(
        args,
        fail_on_warn=fail_on is FailOn.WARN,
        ledger=ledger,
        alternatives_for=BLOCKED if comment else frozenset(),
    )
    rendered: dict[str, tuple[str, ...]] = {}
    if args.base_ref:
        results, diffs = evaluate_against(evaluator, args.base_ref, args.specs)
    else:
        paths = expand_specs(args.specs)
        alone = (
            STDIN in paths or not all(map(_regular, paths)) or _ledger_may_be_read(args, evaluator)
        )
        workers = 1 if alone else workers_for(len(paths), args.jobs)
        results, rendered = _evaluate_all(evaluator, paths, workers, targets)
        diffs = []
    policies = evaluator.policies
    read = [result.file for result in results]
    refuse_overwriting(
        targets,
        [*read, args.calibration] if args.calibration else read,
        None if policies.builtin else str(policies.policy_dir),
    )
    if not results and not diffs and not args.allow_empty:
        raise InputError(
            f"no specs found in {' '.join(args.specs)} (directories are searched for *.yaml, "
            "*.yml and *.json, in any case)",
            hint="check the path, or pass --allow-empty if having no specs is fine",
        )
    report = make_report(results, evaluator, render_context(args, os.environ), diffs, rendered)
    if all(t.path is not None or t.name not in _LINES_ON_STDOUT for t in targets):
        print_errors(results)  # no lines on stdout carry them: diagnostics on stderr
    emit(report, targets)
    if any(t.name == "github" for t in targets):
        append_step_summary(report, os.environ)
    _say_approvals_unread(ledger, results, None if policies.builtin else policies.policy_dir)
    return exit_code(report.outcome, fail_on)


_LINES_ON_STDOUT = frozenset({"text", "github"})
"""Formats whose stdout shows each input error as a line (JSON, SARIF, JUnit, Markdown hold
them in a document a terminal or a CI log does not show line by line)."""


def _say_approvals_unread(
    ledger: LedgerView, results: list[SpecResult], policy_dir: str | Path | None
) -> None:
    """Say that a ledger the environment names, or the default one, was not read.

    NOTE: a plain ``check`` reads no ledger (it stays fast and offline): an approval
    recorded in ``MLFLOW_TRACKING_URI``, or in the default ledger ``approve`` writes, would
    otherwise go unsaid, and the spec look unapproved.
    """
    if ledger.opened or not any(r.outcome is Outcome.APPROVAL_REQUIRED for r in results):
        return
    if os.environ.get("MLFLOW_TRACKING_URI"):
        where, flag = "in the ledger at $MLFLOW_TRACKING_URI", '"$MLFLOW_TRACKING_URI"'
    else:
        from gate.integrations.mlflow.tracking_uri import resolve_tracking_uri

        uri = resolve_tracking_uri(None, {}, policy_dir)
        if not Path(uri.removeprefix("sqlite:///")).is_file():
            return
        where, flag = f"in the default ledger, {uri},", uri
    print(
        f"budget-gate: approvals recorded {where} were not read: check reads the ledger "
        f"only with --tracking-uri (or for a monthly budget); pass --tracking-uri {flag} to "
        "count them, as verify does",
        file=sys.stderr,
    )


def _evaluate_all(
    evaluator: Evaluator, paths: list[str], workers: int, targets: list[FormatTarget]
) -> tuple[list[SpecResult], dict[str, tuple[str, ...]]]:
    """Each spec's result, and its JSON where asked for, rendered in the worker that made it.

    NOTE: rendered at the end, a thousand results' JSON took a seventh of a second in this
    process alone, after the workers were done. When JSON is the only format, a worker
    sends no estimate back beside its text (two thirds of the bytes): nothing else reads it.
    """
    if workers <= 1 or not any(t.name == "json" for t in targets):
        return evaluate_all(lambda path: _evaluate(evaluator, path), paths, workers), {}
    from gate.reporters.json import render_result

    only_json = all(t.name == "json" for t in targets)

    def evaluate(path: str) -> tuple[SpecResult, str]:
        result = _evaluate(evaluator, path)
        text = render_result(result)
        return (dataclasses.replace(result, estimate=None) if only_json else result), text

    done = evaluate_all(evaluate, paths, workers)
    return [result for result, _ in done], {"json": tuple(text for _, text in done)}


def _ledger_may_be_read(args: argparse.Namespace, evaluator: Evaluator) -> bool:
    """Whether a spec's evaluation may read the ledger: approvals count, or a budget is set.

    Every policy is loaded anyway (who owns a spec's path is a question about all of them);
    one that fails to load is left to the evaluation to report, in one process.
    """
    if args.tracking_uri is not None:
        return True
    policies = evaluator.policies
    try:
        loaded = [policies.load(name) for name in policies.names()]
    except GateError:
        return True
    return any(p.policy.limits.monthly_budget is not None for p in loaded)


def _regular(path: str) -> bool:
    """Whether ``path`` is a file a worker may read as the parent would (links followed).

    A pipe, a terminal or a ``/dev/fd`` link reads once, and in a worker it may be a pipe of
    the workers' own: such a list is read in one process, in the order given.
    """
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False  # NOTE: /dev/fd/4 is missing here and may be a worker's own pipe there


def _evaluate(evaluator: Evaluator, path: str) -> SpecResult:
    """One spec from its file, or from stdin (named ``<stdin>`` in positions) for ``-``."""
    if path != STDIN:
        return evaluator.evaluate(path)
    return evaluator.evaluate(STDIN_NAME, sys.stdin.buffer.read(MAX_FILE_BYTES + 1))
