"""The full parser: shared option groups, and one sub-parser per command."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from gate import __version__
from gate.cli import afterwards, approvals, pricing
from gate.cli.base import EPILOG, Parser, exit_codes

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
  budget-gate report --month 2026-11 --format html=report.html --format focus=focus.csv
  budget-gate policy check && budget-gate policy test
"""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The full parser, with one sub-parser per command.

    With ``command`` (a name of :data:`EXITS`) only that command's sub-parser is built (and
    those built with it): a ``check`` in a pre-commit hook parses its own options only.
    """
    parser = Parser(
        prog="budget-gate",
        description=_DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"budget-gate {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    policies, places, evaluation, ledger = _groups()
    adders: list[tuple[tuple[str, ...], Callable[[], None]]] = [
        (("check",), lambda: pricing.add_check(commands, [evaluation, ledger])),
        (("estimate",), lambda: pricing.add_estimate(commands, evaluation)),
        (("diff",), lambda: pricing.add_diff(commands, evaluation)),
        (("import",), lambda: pricing.add_import(commands, places)),
        (("rules", "schema", "prices", "init"), lambda: pricing.add_reference(commands)),
        (
            ("verify", "request-approval", "approve", "revoke"),
            lambda: approvals.add_ledger_commands(commands, [evaluation, ledger], [places, ledger]),
        ),
        (("ci",), lambda: approvals.add_ci(commands)),
        (("serve",), lambda: approvals.add_serve(commands, [ledger])),
        (("reconcile",), lambda: afterwards.add_reconcile(commands, [places, _runs()])),
        (("calibrate",), lambda: afterwards.add_calibrate(commands, [policies, _learning()])),
        (("report",), lambda: afterwards.add_report(commands, [policies, _month()])),
        (("policy",), lambda: pricing.add_policy(commands)),
    ]
    for names, add in adders:
        if command is None or command in names:
            add()
    _epilogs(commands)
    return parser


def _groups() -> tuple[Parser, Parser, Parser, Parser]:
    """The option groups commands share: the policies, prices, the date, the ledger."""
    policies = Parser(add_help=False)
    policies.add_argument(
        "--policy-dir",
        metavar="DIR",
        help="policies directory; metadata.team picks DIR/<team>.yaml (default: policies, "
        "else the built-in default policy, which the output names)",
    )
    places = Parser(add_help=False, parents=[policies])
    places.add_argument(
        "--calibration",
        metavar="FILE",
        help="measured epoch times, plateaus, failure rates and MFU to price with (from "
        "budget-gate calibrate; default: DIR/calibration.json when it exists)",
    )
    ledger = _tracking("MLflow tracking store of the approvals ledger", rest=True)
    evaluation = Parser(add_help=False, parents=[places])
    evaluation.add_argument(
        "--as-of",
        metavar="WHEN",
        help="judge waivers, approvals and the budget month as of this date (YYYY-MM-DD, "
        "midnight UTC) or time (YYYY-MM-DDTHH:MM[+zone]) (default: now)",
    )
    return policies, places, evaluation, ledger


def _epilogs(commands: argparse._SubParsersAction[Any]) -> None:
    """Each command's (and sub-command's) exit codes, under its --help."""
    for name, sub_parser in commands.choices.items():
        sub_parser.epilog = exit_codes(*EXITS[name])
        for action in sub_parser._actions:  # policy check|test, serve skypilot-policy|...
            if isinstance(action, argparse._SubParsersAction):
                for sub, parser_of in action.choices.items():
                    parser_of.epilog = exit_codes(*EXITS[f"{name} {sub}"])


def _runs() -> Parser:
    return _tracking(
        "MLflow tracking store of the training runs, where the ledger records their actual cost"
    )


def _learning() -> Parser:
    return _tracking("MLflow tracking store of the training runs to learn from")


def _month() -> Parser:
    return _tracking("MLflow tracking store of the training runs and the approvals ledger")


def command_named(argv: Sequence[str]) -> str | None:
    """The command ``argv`` runs, when it names one plainly (``--debug check ...``).

    ``None`` when it names none, or asks for help or the version first: the full parser
    answers those.
    """
    for arg in argv:
        if arg == "--debug":
            continue
        return arg if arg in EXITS and " " not in arg else None
    return None


def _tracking(what: str, *, rest: bool = False) -> Parser:
    """``--tracking-uri``, saying what the command reads there (``rest``: the ledger only)."""
    group = Parser(add_help=False)
    group.add_argument(
        "--tracking-uri",
        metavar="URI",
        help=f"{what} (default: $MLFLOW_TRACKING_URI, else mlflow.db at the root of the "
        "git repository that holds the policies, or beside them outside git)"
        + ("; an http(s) server is read over REST, without MLflow" if rest else ""),
    )
    return group


# NOTE: 1 and 2 come from a verdict; 4 from a backend a command reads (the ledger in MLflow,
# GitHub, the Kubernetes API). Kept by hand: tests/test_first_steps.py checks that every
# command has an entry and that its --help shows it.
EXITS: dict[str, tuple[int, ...]] = {
    "check": (0, 1, 2, 3, 4),  # 4: the ledger, for a monthly budget
    "estimate": (0, 3),
    "diff": (0, 3),
    "import": (0, 3),
    "rules": (0, 3),
    "schema": (0, 3),
    "prices": (0, 3),
    "init": (0, 3),
    "policy": (0, 1, 3),
    "policy check": (0, 3),
    "policy test": (0, 1, 3),
    "verify": (0, 1, 2, 3, 4),
    "request-approval": (0, 1, 3, 4),
    "approve": (0, 1, 3, 4),
    "revoke": (0, 3, 4),
    "ci": (0, 1, 2, 3, 4),
    "serve": (0, 3, 4),
    "serve skypilot-policy": (0, 3),
    "serve kueue-admission": (0, 3, 4),
    "reconcile": (0, 1, 3, 4),
    "calibrate": (0, 3, 4),
    "report": (0, 3, 4),
}
"""The exit codes each command (and sub-command) can return, for its --help."""
