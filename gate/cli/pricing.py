"""The commands before launch: check, estimate, diff, rules, schema, prices, init, policy."""

from __future__ import annotations

import argparse
import os
from typing import Any

from gate.cli.base import EPILOG, Parser, positive_int, text_or_json
from gate.commands.output import parse_target
from gate.reporters import REPORTERS

POLICY_DIR_HELP = "the policy directory (default: policies/ at the git repository's root)"


def add_check(commands: argparse._SubParsersAction[Any], parents: list[Parser]) -> None:
    """``check``: validate, price and gate specs."""
    check = commands.add_parser(
        "check",
        parents=parents,
        help="validate, price and gate experiment specs",
        description="Validate each spec, price it (worst and expected case) and apply the "
        "team policy. Directories are searched for *.yaml, *.yml and *.json (in any case); "
        "quoted globs are "
        "expanded. The approvals ledger is read only when a policy sets a monthly budget, or "
        "when --tracking-uri is given; whenever it is read, fresh approvals count too.",
        epilog=EPILOG,
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
    _add_verdict_options(check)
    check.add_argument(
        "-j",
        "--jobs",
        type=positive_int,
        metavar="N",
        help="evaluate the specs in N processes (default: one per core, for 25 specs or more "
        "each; Linux only, and one process whenever the ledger may be read)",
    )
    check.add_argument(
        "--format",
        action="append",
        type=parse_target,
        metavar="FORMAT[=FILE]",
        help=f"output format, repeatable: {', '.join(REPORTERS)}; FORMAT=FILE writes a file "
        "instead of stdout (FORMAT=- is stdout), and at most one format goes to stdout "
        "(default: text)",
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


def _add_verdict_options(parser: argparse.ArgumentParser) -> None:
    """What fails a ``check``: --fail-on (and its --fail-on-warn), --allow-empty."""
    fail = parser.add_mutually_exclusive_group()
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
    parser.add_argument(
        "--allow-empty",
        action="store_true",
        help="pass when the directories hold no specs (default: no specs is an error, exit 3)",
    )


def add_estimate(commands: argparse._SubParsersAction[Any], evaluation: Parser) -> None:
    """``estimate``: the scenarios, drivers and assumptions, without a verdict."""
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
        help="one Markdown table row per spec (worst and expected), as in docs/pricing.md",
    )
    estimate.add_argument(
        "--alternatives",
        action="store_true",
        help="also price cheaper plans for the same experiment (ASHA, Hyperband, random "
        "search with fewer trials, bf16, spot with checkpoints), each with what it gives "
        "up, the largest saving first",
    )
    text_or_json(estimate)


def add_import(commands: argparse._SubParsersAction[Any], places: Parser) -> None:
    """``import``: an engine's config as the equivalent spec, every line traced."""
    command = commands.add_parser(
        "import",
        parents=[places],
        help="a W&B sweep, Katib Experiment, SkyPilot task or Hydra sweep as a spec",
        description="Print the budget-gate spec a W&B, Katib, SkyPilot or Hydra file stands "
        "for, with a comment on every line saying where its value came from (docs/configs.md).",
    )
    command.add_argument("file", metavar="FILE", help="the engine's config file")
    command.add_argument("--write", metavar="OUT", help="write the spec to OUT instead")


def add_diff(
    commands: argparse._SubParsersAction[Any], evaluation: argparse.ArgumentParser
) -> None:
    """``diff``: the cost change between two versions, by driver."""
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
    text_or_json(diff)


def add_reference(commands: argparse._SubParsersAction[Any]) -> None:
    """``rules``, ``schema``, ``prices`` and ``init``: what a team reads and starts from."""
    _add_rules(commands)
    _add_schema(commands)
    _add_prices(commands)
    _add_init(commands)


def _add_rules(commands: argparse._SubParsersAction[Any]) -> None:
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


def _add_schema(commands: argparse._SubParsersAction[Any]) -> None:
    schema = commands.add_parser(
        "schema",
        help="print the JSON Schemas of specs and policies, or write them",
        description="Print the JSON Schemas (draft 2020-12) of experiment specs and policies, "
        "generated from the models the CLI validates with, or write them to --dir so "
        "editors validate as you type. --docs renders the field reference (Markdown) "
        "from them instead.",
    )
    schema.add_argument("--write", action="store_true", help="write the files instead")
    schema.add_argument(
        "--docs",
        action="store_true",
        help="the field reference of specs, policies and x-budget-gate facts, in Markdown",
    )
    schema.add_argument(
        "--dir",
        help="where --write puts them (default: schemas, or docs/reference with --docs)",
    )


def _add_prices(commands: argparse._SubParsersAction[Any]) -> None:
    prices = commands.add_parser(
        "prices",
        help="show the default price catalog",
        description="Print the packaged catalog's median list price per GPU-hour for every "
        "accelerator (or one), by cloud and capacity, with its source and date. Policies "
        "override these prices with prices.overrides.",
    )
    prices.add_argument("accelerator", nargs="?", metavar="ACCELERATOR", help="e.g. H100")


def _add_init(commands: argparse._SubParsersAction[Any]) -> None:
    init = commands.add_parser(
        "init",
        help="start a repository: a default policy, the schemas, a sample spec, the checks",
        description="Write policies/default.yaml (the built-in default policy), schemas/, "
        "experiments/sample.yaml, .github/workflows/budget-gate.yml and a "
        ".pre-commit-config.yaml with the budget-gate hook. Nothing is overwritten: when "
        "any of these files exists, nothing is written and the command exits 3, unless "
        "--skip-existing writes the missing ones.",
        epilog=EPILOG,
    )
    init.add_argument("--dir", default=".", metavar="DIR", help="the repository root (default: .)")
    init.add_argument(
        "--kueue",
        action="store_true",
        help="write only the Kueue AdmissionCheck's manifests, deploy/budget-gate-kueue.yaml "
        "(Deployment, ServiceAccount, RBAC, AdmissionCheck, ClusterQueue; docs/kueue.md); "
        "with --report-workflow, its workflow too",
    )
    init.add_argument(
        "--skip-existing",
        action="store_true",
        help="write only the files that are missing, keeping (and naming) those that exist",
    )
    init.add_argument(
        "--report-workflow",
        action="store_true",
        help="write only .github/workflows/budget-gate-report.yml: the month's report posted "
        "as an issue on the first of each month; with --kueue, its manifests too",
    )


def add_policy(commands: argparse._SubParsersAction[Any]) -> None:
    """``policy check`` and ``policy test``."""
    policy = commands.add_parser(
        "policy",
        help="validate the policy directory, or run its fixture specs",
        description="Keep policies valid and tested: 'check' loads every policy with its "
        "extends chain; 'test' runs the fixture specs in DIR/tests against them.",
        epilog=EPILOG,
    )
    actions = policy.add_subparsers(dest="policy_command", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check",
        help="load every policy with its extends chain; refuse unknown rule ids",
        description="Load and validate every *.yaml policy in DIR with its extends chain "
        "(default is the implicit base; extends: none is noted), refusing unknown rule ids "
        "in severity: and waivers. Exits 0, or 3 with file:line:col for each error.",
        epilog=EPILOG,
    )
    check.add_argument("dir", nargs="?", metavar="DIR", help=POLICY_DIR_HELP)
    test = actions.add_parser(
        "test",
        help="run the policy fixtures: specs with their expected verdict and rule ids",
        description="Evaluate every fixture spec (DIR/tests/*.yaml, each with an "
        "'expect: {verdict: ..., rules: [...]}' block) against the policies in DIR, print "
        "ok or FAIL for each and the rules no fixture makes fire. Exits 0 when all match, "
        "1 on any mismatch, 3 on invalid policies or fixtures.",
        epilog=EPILOG,
    )
    test.add_argument("dir", nargs="?", metavar="DIR", help=POLICY_DIR_HELP)
    test.add_argument(
        "--fixtures", metavar="FIXTURES", help="where the fixtures are (default: DIR/tests)"
    )
    test.add_argument(
        "--as-of",
        metavar="WHEN",
        help="judge waivers as of this date (default: today; a fixture's expect.as_of wins)",
    )
