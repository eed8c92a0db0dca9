# PYTHON_ARGCOMPLETE_OK
"""Command-line entry point: parse arguments, run one command, map errors to exit codes.

This is the only module that exits. Exit codes (DESIGN.md §3): 0 pass, 1 policy violation,
2 approval required, 3 invalid input or usage, 4 backend failure, 70 internal bug,
130 interrupted. Command modules are imported only when chosen, so start-up stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from gate import __version__
from gate.commands.output import parse_target
from gate.errors import GateError, InputErrors
from gate.reporters import REPORTERS

EXIT_USAGE = 3
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130

_DESCRIPTION = """\
Price ML experiments before launch and gate them on your team's policy.

examples:
  budget-gate init      # a policy, the schemas, a sample spec, the workflow, pre-commit
  budget-gate check examples/cifar-sweep.yaml
  budget-gate check experiments/*.yaml --format json
  budget-gate check experiments/ --base-ref origin/main --format markdown=comment.md
  budget-gate diff old.yaml new.yaml
  budget-gate rules BG104
  budget-gate approve experiments/sweep.yaml --by alice --reason "worth it" --expires 14d
  budget-gate verify experiments/sweep.yaml
  budget-gate ci        # in a GitHub Actions workflow: see action.yml and the README
  budget-gate reconcile experiments/sweep.yaml --format markdown
  budget-gate policy check && budget-gate policy test
"""
_EPILOG = (
    "exit codes: 0 pass, 1 policy violation, 2 approval required, 3 invalid input, "
    "4 backend failure"
)


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on usage errors, which would read as "approval required".

    Abbreviations are off: ``--fail-on error`` must not be read as ``--fail-on-warn``. Sub-
    parsers are built from this class too, so the setting holds for every command.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"budget-gate: error: {message} — see --help", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    """The full parser, with one sub-parser per command."""
    parser = _Parser(
        prog="budget-gate",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"budget-gate {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    places = _Parser(add_help=False)
    places.add_argument(
        "--policy-dir",
        metavar="DIR",
        help="policies directory; metadata.team picks DIR/<team>.yaml (default: policies, "
        "else the built-in default policy, which the output names)",
    )
    places.add_argument(
        "--calibration",
        metavar="FILE",
        help="measured epoch times, plateaus, failure rates and MFU to price with (from "
        "budget-gate calibrate; default: DIR/calibration.json when it exists)",
    )
    ledger = _Parser(add_help=False)
    ledger.add_argument(
        "--tracking-uri",
        metavar="URI",
        help="MLflow tracking store of the approvals ledger (default: $MLFLOW_TRACKING_URI, "
        "else mlflow.db at the git repository's root, or in the current directory outside "
        "git); an http(s) server is read over REST, without MLflow",
    )
    evaluation = _Parser(add_help=False, parents=[places])
    evaluation.add_argument(
        "--as-of",
        metavar="WHEN",
        help="judge waivers, approvals and the budget month as of this date (YYYY-MM-DD, "
        "midnight UTC) or time (YYYY-MM-DDTHH:MM[+zone]) (default: now)",
    )

    _add_check(commands, [evaluation, ledger])
    estimate = commands.add_parser(
        "estimate",
        parents=[evaluation],
        help="price specs, with the scenario breakdown and assumptions",
        description="Print the worst and expected scenarios of each spec, their cost drivers, "
        "assumptions and savings. Exits 0 unless the input is invalid.",
    )
    estimate.add_argument("specs", nargs="+", metavar="SPEC", help="spec files or directories")
    estimate.add_argument(
        "--summary",
        action="store_true",
        help="one Markdown table row per spec (worst and expected), as in the README",
    )
    estimate.add_argument(
        "--alternatives",
        action="store_true",
        help="also price cheaper plans for the same experiment (ASHA, Hyperband, random "
        "search with fewer trials, bf16, spot with checkpoints), each with what it gives "
        "up, the largest saving first",
    )
    _add_text_or_json(estimate)
    _add_diff(commands, evaluation)

    rules = commands.add_parser(
        "rules",
        help="list the rules, or show one rule's documentation",
        description="Print every rule (id, slug, default severity, title), or one rule's "
        "documentation with a passing and a failing example. --write regenerates the rules "
        "page the findings link to.",
    )
    rules.add_argument("rule", nargs="?", metavar="RULE", help="a rule id (BG104) or slug")
    rules.add_argument(
        "--list", action="store_true", help="one line per rule: id, slug, severity, title"
    )
    rules.add_argument(
        "--write", action="store_true", help="write the rules page (Markdown) instead"
    )
    rules.add_argument(
        "--out", default="docs/rules.md", help="where --write puts it (default: docs/rules.md)"
    )

    schema = commands.add_parser(
        "schema",
        help="print the JSON Schemas of specs and policies, or write them",
        description="Print the JSON Schemas (draft 2020-12) of experiment specs and policies, "
        "generated from the models the CLI validates with, or write them to --dir so "
        "editors validate as you type.",
    )
    schema.add_argument("--write", action="store_true", help="write the files instead")
    schema.add_argument(
        "--dir", default="schemas", help="where --write puts them (default: schemas)"
    )

    prices = commands.add_parser(
        "prices",
        help="show the default price catalog",
        description="Print the packaged catalog's median list price per GPU-hour for every "
        "accelerator (or one), by cloud and capacity, with its source and date. Policies "
        "override these prices with prices.overrides.",
    )
    prices.add_argument("accelerator", nargs="?", metavar="ACCELERATOR", help="e.g. H100")
    init = commands.add_parser(
        "init",
        help="start a repository: a default policy, the schemas, a sample spec, the checks",
        description="Write policies/default.yaml (the built-in default policy), schemas/, "
        "experiments/sample.yaml, .github/workflows/budget-gate.yml and a "
        ".pre-commit-config.yaml with the budget-gate hook. Nothing is overwritten: when "
        "any of these files exists, nothing is written and the command exits 3.",
        epilog=_EPILOG,
    )
    init.add_argument("--dir", default=".", metavar="DIR", help="the repository root (default: .)")
    _add_ledger_commands(commands, [evaluation, ledger], [places, ledger])
    _add_ci(commands)
    _add_serve(commands, [ledger])
    _add_reconcile(commands, [places, ledger])
    _add_calibrate(commands, [places, ledger])
    _add_policy(commands)
    for command in commands.choices.values():
        command.epilog = command.epilog or _EPILOG  # every command shares the exit codes
    return parser


def _add_policy(commands: argparse._SubParsersAction[Any]) -> None:
    policy = commands.add_parser(
        "policy",
        help="validate the policy directory, or run its fixture specs",
        description="Keep policies valid and tested: 'check' loads every policy with its "
        "extends chain; 'test' runs the fixture specs in DIR/tests against them.",
        epilog=_EPILOG,
    )
    actions = policy.add_subparsers(dest="policy_command", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check",
        help="load every policy with its extends chain; refuse unknown rule ids",
        description="Load and validate every *.yaml policy in DIR with its extends chain "
        "(default is the implicit base; extends: none is noted), refusing unknown rule ids "
        "in severity: and waivers. Exits 0, or 3 with file:line:col for each error.",
        epilog=_EPILOG,
    )
    check.add_argument("dir", nargs="?", default="policies", metavar="DIR", help=_POLICY_DIR)
    test = actions.add_parser(
        "test",
        help="run the policy fixtures: specs with their expected verdict and rule ids",
        description="Evaluate every fixture spec (DIR/tests/*.yaml, each with an "
        "'expect: {verdict: ..., rules: [...]}' block) against the policies in DIR, print "
        "ok or FAIL for each and the rules no fixture makes fire. Exits 0 when all match, "
        "1 on any mismatch, 3 on invalid policies or fixtures.",
        epilog=_EPILOG,
    )
    test.add_argument("dir", nargs="?", default="policies", metavar="DIR", help=_POLICY_DIR)
    test.add_argument(
        "--fixtures", metavar="FIXTURES", help="where the fixtures are (default: DIR/tests)"
    )
    test.add_argument(
        "--as-of",
        metavar="WHEN",
        help="judge waivers as of this date (default: today; a fixture's expect.as_of wins)",
    )


_POLICY_DIR = "the policy directory (default: policies)"


def _add_calibrate(commands: argparse._SubParsersAction[Any], parents: list[_Parser]) -> None:
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


def _add_reconcile(commands: argparse._SubParsersAction[Any], parents: list[_Parser]) -> None:
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
        epilog=_EPILOG,
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
        type=_pr_number,
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
        type=_non_negative,
        metavar="X",
        help="smallest change that counts as an improvement (default: the spec's, else 0)",
    )


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number >= 0")
    return value


def _add_check(commands: argparse._SubParsersAction[Any], parents: list[_Parser]) -> None:
    check = commands.add_parser(
        "check",
        parents=parents,
        help="validate, price and gate experiment specs",
        description="Validate each spec, price it (worst and expected case) and apply the "
        "team policy. Directories are searched for *.yaml and *.yml; quoted globs are "
        "expanded. The approvals ledger is read only when a policy sets a monthly budget, or "
        "when --tracking-uri is given; whenever it is read, fresh approvals count too.",
        epilog=_EPILOG,
    )
    check.add_argument(
        "specs",
        nargs="+",
        metavar="SPEC",
        help="spec files, globs or directories; - reads one spec from stdin",
    )
    check.add_argument(
        "-q", "--quiet", action="store_true", help="text output: print only the findings"
    )
    fail = check.add_mutually_exclusive_group()
    fail.add_argument(
        "--fail-on",
        choices=("error", "approval", "warn"),
        default="approval",
        help="what fails the run: only policy errors (approvals exit 0, for pre-commit), "
        "errors and missing approvals (exit 2), or warnings too (default: approval)",
    )
    fail.add_argument(
        "--fail-on-warn",
        action="store_const",
        const="warn",
        dest="fail_on",
        help="the same as --fail-on warn",
    )
    check.add_argument(
        "--allow-empty",
        action="store_true",
        help="pass when the directories hold no specs (default: no specs is an error, exit 3)",
    )
    check.add_argument(
        "--format",
        action="append",
        type=parse_target,
        metavar="FORMAT[=FILE]",
        help=f"output format, repeatable: {', '.join(REPORTERS)}; FORMAT=FILE writes a file "
        "instead of stdout, and at most one format goes to stdout (default: text)",
    )
    check.add_argument(
        "--base-ref",
        metavar="REF",
        help="also price each spec's version at this git ref and show the cost change "
        "by driver; specs only at REF (under a directory given, or named) count as deleted",
    )
    check.add_argument(
        "--docs-url",
        metavar="URL",
        help="where docs/rules.md is published; findings link to its sections "
        "(default: the copy in the budget-gate repository)",
    )


def _add_diff(
    commands: argparse._SubParsersAction[Any], evaluation: argparse.ArgumentParser
) -> None:
    diff = commands.add_parser(
        "diff",
        parents=[evaluation],
        help="cost change between two versions of a spec, explained by driver",
        description="Price BASE and HEAD under the same policies and prices and explain the "
        "change in cost and GPU-hours by driver (trials, GPUs per trial, hours per trial, "
        f"price). Use {os.devnull} for a side that does not exist (added or deleted spec). "
        "Exits 0, or 3 when either version is invalid.",
    )
    diff.add_argument("base", metavar="BASE", help="the spec before the change")
    diff.add_argument("head", metavar="HEAD", help="the spec after the change")
    _add_text_or_json(diff)


def _add_text_or_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )


def _add_ledger_commands(
    commands: argparse._SubParsersAction[_Parser],
    reading: list[_Parser],
    writing: list[_Parser],
) -> None:
    verify = commands.add_parser(
        "verify",
        parents=reading,
        help="launch-time check: exit 0 only with no approval needed or a fresh one",
        description="Exit 0 only if the spec needs no approval, or the ledger holds a fresh "
        "approval: same fingerprint, approved worst case at least the current one, not "
        "expired, not revoked. Otherwise exit 2 (1 on policy errors) and say why.",
        epilog=_EPILOG,
    )
    verify.add_argument("spec", metavar="SPEC", help="the spec file")
    _add_text_or_json(verify)

    request = commands.add_parser(
        "request-approval",
        parents=writing,
        help="record a pending approval request with the estimate",
        description="Record in the ledger that this version of the spec awaits approval, "
        "with its worst and expected cost. Nothing is recorded when no approval is needed.",
    )
    request.add_argument("spec", metavar="SPEC", help="the spec file")
    request.add_argument("--by", metavar="NAME", help="who asks (default: metadata.owner)")
    request.add_argument("--reason", metavar="TEXT", help="why the experiment is worth it")
    request.add_argument("--pr", type=_pr_number, metavar="N", help="the pull request number")

    approve = commands.add_parser(
        "approve",
        parents=writing,
        help="record an approval of this exact spec version and its worst-case cost",
        description="Record an approval bound to the spec fingerprint and its current "
        "worst-case cost. Only users in the policy's approval.approvers.users may approve "
        "here; team membership and repository permission are checked by the GitHub flow.",
    )
    _who_and_why(approve, "the approver, as listed in approval.approvers.users")
    approve.add_argument(
        "--expires",
        metavar="SPAN",
        help="how long the approval holds: 12h, 14d, 2w (default: 30d)",
    )
    approve.add_argument("--pr", type=_pr_number, metavar="N", help="the pull request number")

    revoke = commands.add_parser(
        "revoke",
        parents=writing,
        help="revoke the approvals of this spec version (a new record; nothing is erased)",
        description="Record that the approvals of this version of the spec no longer hold. "
        "The approval records stay in the ledger; verify and the budget read the revocation.",
    )
    _who_and_why(revoke, "an approver or the spec owner")


def _add_ci(commands: argparse._SubParsersAction[Any]) -> None:
    ci = commands.add_parser(
        "ci",
        help="the GitHub Action's entry point: judge a pull request's changed specs",
        description="Read the GitHub Actions event (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH, "
        "GITHUB_REPOSITORY, GITHUB_API_URL, GITHUB_TOKEN) and, on a pull request, price its "
        "changed specs against the base branch's policies, judge approvals (reviews and "
        "'/budget-gate approve' comments), and update the comment, commit status, label and "
        "review requests. Options default to the action's BUDGET_GATE_SPECS, "
        "BUDGET_GATE_POLICY_DIR, BUDGET_GATE_FAIL_ON and BUDGET_GATE_COMMENT.",
        epilog=_EPILOG,
    )
    ci.add_argument(
        "--specs",
        metavar="GLOBS",
        help="space-separated globs of spec paths in the repository "
        "(default: experiments/**/*.yaml experiments/**/*.yml)",
    )
    ci.add_argument(
        "--policy-dir", metavar="DIR", help="read at the base commit (default: policies)"
    )
    ci.add_argument(
        "--fail-on",
        choices=("error", "approval", "warn"),
        help="which verdicts fail the step; the commit status is set either way (default: error)",
    )
    ci.add_argument(
        "--comment",
        choices=("update", "new", "off"),
        help="update one sticky comment, post a new one each run, or none (default: update)",
    )
    ci.add_argument(
        "--report-json",
        metavar="FILE",
        help="where the JSON report goes (default: $RUNNER_TEMP/budget-gate-report.json)",
    )
    ci.add_argument("--docs-url", metavar="URL", help="where docs/rules.md is published")


def _add_serve(commands: argparse._SubParsersAction[Any], parents: list[_Parser]) -> None:
    serve = commands.add_parser(
        "serve",
        help="serve a policy over HTTP (skypilot-policy)",
        description="Run a long-lived HTTP service that enforces budget-gate at launch. "
        "SERVICE: skypilot-policy, SkyPilot's RESTful admin policy (see its --help).",
    )
    what = serve.add_subparsers(dest="service", metavar="SERVICE", required=True)
    policy = what.add_parser(
        "skypilot-policy",
        parents=parents,
        help="the SkyPilot admin policy: refuse launches budget-gate does not clear",
        description="Answer SkyPilot's RESTful admin policy (admin_policy: http://HOST:PORT in "
        "the SkyPilot config): launch, exec and jobs launch requests whose task names a spec "
        "in BUDGET_GATE_SPEC are allowed only when the spec passes budget-gate verify and the "
        "task asks for the spec's accelerator, GPU count and capacity; the task gets the run "
        "tags as env vars. A rejection is an HTTP 400 with one line of reason; an unreachable "
        "ledger rejects (fail closed). Needs the skypilot extra.",
        epilog=_EPILOG,
    )
    policy.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)"
    )
    policy.add_argument(
        "--port",
        type=_port,
        default=8765,
        help="port to listen on; 0 picks a free one (default: 8765)",
    )
    policy.add_argument(
        "--repo",
        default=".",
        metavar="DIR",
        help="repository the specs' paths are relative to (default: .)",
    )
    policy.add_argument(
        "--policy-dir",
        default="policies",
        metavar="DIR",
        help="policies directory, relative to --repo (default: policies)",
    )
    policy.add_argument(
        "--missing-spec",
        choices=("reject", "allow"),
        default="reject",
        help="what to do with a GPU task that names no spec (default: reject)",
    )


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port (0-65535)")
    return int(text)


def _pr_number(text: str) -> int:
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a pull request number")
    return int(text)


def _who_and_why(parser: _Parser, who: str) -> None:
    parser.add_argument("spec", metavar="SPEC", help="the spec file")
    parser.add_argument("--by", required=True, metavar="NAME", help=who)
    parser.add_argument("--reason", required=True, metavar="TEXT", help="kept in the record")


def _complete(parser: argparse.ArgumentParser) -> None:
    """Answer the shell's completion request and exit; without argcomplete, do nothing."""
    try:
        import argcomplete
    except ImportError:
        return
    argcomplete.autocomplete(parser)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code."""
    parser = build_parser()
    if "_ARGCOMPLETE" in os.environ:  # the shell asks for completions (argcomplete extra)
        _complete(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return int(exc.code or 0)
    try:
        module = importlib.import_module(f"gate.commands.{args.command.replace('-', '_')}")
        return int(module.run(args))
    except GateError as exc:
        located = isinstance(exc, InputErrors) or getattr(exc, "location", None) is not None
        # NOTE: located errors start with file:line:col so editors and CI can jump to them.
        print(str(exc) if located else f"budget-gate: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("budget-gate: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    except Exception as exc:
        if args.debug:
            raise
        print(
            f"budget-gate: internal error: {type(exc).__name__}: {exc} "
            "(rerun with --debug for the traceback, and please report it)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
