"""The commands at launch and on pull requests: the ledger commands, ci and serve."""

from __future__ import annotations

import argparse
from typing import Any

from gate.cli.base import EPILOG, Parser, port, pr_number, text_or_json, who_and_why
from gate.cli.kueue import add_kueue_admission


def add_ledger_commands(
    commands: argparse._SubParsersAction[Parser],
    reading: list[Parser],
    writing: list[Parser],
) -> None:
    """``verify``, ``request-approval``, ``approve`` and ``revoke``."""
    _add_verify(commands, reading)
    _add_request_approval(commands, writing)
    _add_approve(commands, writing)
    _add_revoke(commands, writing)


def _add_verify(commands: argparse._SubParsersAction[Parser], reading: list[Parser]) -> None:
    verify = commands.add_parser(
        "verify",
        parents=reading,
        help="launch-time check: exit 0 only with no approval needed or a fresh one",
        description="Exit 0 only if the spec needs no approval, or the ledger holds a fresh "
        "approval: same path and fingerprint, approved worst case at least the current one, "
        "not expired, not revoked, launches not used up. Otherwise exit 2 (1 on policy "
        "errors) and say why. A cleared spec is a launch: when the ledger is in play (an "
        "approval was needed, or the policy has a monthly budget) it is recorded, committing "
        "its worst case to the month and using one of its approval's launches.",
        epilog=EPILOG,
    )
    verify.add_argument("spec", metavar="SPEC", help="the spec file")
    verify.add_argument(
        "--dry-run",
        action="store_true",
        help="judge only: record no launch (the approval is not used up)",
    )
    verify.add_argument(
        "--launch-key",
        metavar="KEY",
        help="the launch this is part of (default: BUDGET_GATE_LAUNCH_KEY, else a new one); "
        "a key already recorded for this spec version is not recorded again",
    )
    text_or_json(verify)


def _add_request_approval(
    commands: argparse._SubParsersAction[Parser], writing: list[Parser]
) -> None:
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
    request.add_argument("--pr", type=pr_number, metavar="N", help="the pull request number")


def _add_approve(commands: argparse._SubParsersAction[Parser], writing: list[Parser]) -> None:
    approve = commands.add_parser(
        "approve",
        parents=writing,
        help="record an approval of this exact spec version and its worst-case cost",
        description="Record an approval bound to the spec fingerprint and its current "
        "worst-case cost. Only users in the policy's approval.approvers.users may approve "
        "here; team membership and repository permission are checked by the GitHub flow.",
    )
    who_and_why(approve, "the approver, as listed in approval.approvers.users")
    approve.add_argument(
        "--expires",
        metavar="WHEN",
        help="how long the approval holds: 12h, 14d, 2w, or until a date's end (UTC), "
        "2026-12-31; at most a year (default: 30d)",
    )
    approve.add_argument("--pr", type=pr_number, metavar="N", help="the pull request number")


def _add_revoke(commands: argparse._SubParsersAction[Parser], writing: list[Parser]) -> None:
    revoke = commands.add_parser(
        "revoke",
        parents=writing,
        help="revoke the approvals of this spec version (a new record; nothing is erased)",
        description="Record that the approvals of this version of the spec no longer hold. "
        "The approval records stay in the ledger; verify and the budget read the revocation.",
    )
    who_and_why(revoke, "an approver or the spec owner")


def add_ci(commands: argparse._SubParsersAction[Any]) -> None:
    """``ci``: the GitHub Action's entry point."""
    ci = commands.add_parser(
        "ci",
        help="the GitHub Action's entry point: judge a pull request's changed specs",
        description="Read the GitHub Actions event (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH, "
        "GITHUB_REPOSITORY, GITHUB_API_URL, GITHUB_TOKEN) and, on a pull request, price its "
        "changed specs against the base branch's policies, judge approvals (reviews and "
        "'/budget-gate approve' comments), and update the comment, commit status, label and "
        "review requests. Options default to the action's BUDGET_GATE_SPECS, "
        "BUDGET_GATE_POLICY_DIR, BUDGET_GATE_FAIL_ON and BUDGET_GATE_COMMENT.",
        epilog=EPILOG,
    )
    ci.add_argument(
        "--specs",
        metavar="GLOBS",
        help="space-separated globs of spec paths in the repository "
        "(default: experiments/**; gitignore rules, see docs/globs.md)",
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


def add_serve(commands: argparse._SubParsersAction[Any], parents: list[Parser]) -> None:
    """``serve skypilot-policy`` and ``serve kueue-admission``."""
    serve = commands.add_parser(
        "serve",
        help="enforce at launch as a service (skypilot-policy, kueue-admission)",
        description="Run a long-lived service that enforces budget-gate at launch. "
        "SERVICE: skypilot-policy, SkyPilot's RESTful admin policy; kueue-admission, a Kueue "
        "AdmissionCheck controller (see each one's --help).",
    )
    what = serve.add_subparsers(dest="service", metavar="SERVICE", required=True)
    _add_skypilot_policy(what, parents)
    add_kueue_admission(what, parents)


def _add_skypilot_policy(what: argparse._SubParsersAction[Any], parents: list[Parser]) -> None:
    policy = what.add_parser(
        "skypilot-policy",
        parents=parents,
        help="the SkyPilot admin policy: refuse launches budget-gate does not clear",
        description="Answer SkyPilot's RESTful admin policy (admin_policy: http://HOST:PORT in "
        "the SkyPilot config): launch, exec and jobs launch requests whose task names a spec "
        "in BUDGET_GATE_SPEC are allowed only when the spec passes budget-gate verify and the "
        "task asks for the spec's accelerator, GPU count and capacity; the task gets the run "
        "tags as env vars. A rejection is an HTTP 400 with one line of reason; an unreachable "
        "ledger rejects (fail closed); a caller without the shared secret gets 401. Needs "
        "the skypilot extra.",
        epilog=EPILOG,
    )
    policy.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)"
    )
    policy.add_argument(
        "--port",
        type=port,
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
        "--secret-file",
        metavar="FILE",
        help="file whose first line is the shared secret callers must send (HTTP basic "
        "auth); default: $BUDGET_GATE_POLICY_SECRET",
    )
    policy.add_argument(
        "--ssl-certfile", metavar="PEM", help="serve HTTPS with this certificate (chain)"
    )
    policy.add_argument("--ssl-keyfile", metavar="PEM", help="the certificate's private key")
    policy.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="serve without a secret: anyone who reaches the port can ask (tests only)",
    )
    policy.add_argument(
        "--missing-spec",
        choices=("reject", "allow"),
        default="reject",
        help="what to do with a GPU task that names no spec (default: reject)",
    )
