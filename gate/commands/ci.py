"""``budget-gate ci``: the GitHub Action's entry point.

Thin: reads the workflow's environment (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH,
GITHUB_REPOSITORY, GITHUB_API_URL, GITHUB_TOKEN and the action's BUDGET_GATE_* inputs), runs
the pull-request flow (:mod:`gate.ci`), writes annotations to stdout, the job summary, the
step outputs and the JSON report, then exits by the verdict and ``fail-on``. The token goes
to the GitHub client and nowhere else.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gate.ci.approvals import standing, withdrawn
from gate.ci.decisions import CommentMode, outputs
from gate.ci.event import parse_event, run_attempt
from gate.ci.flow import GitHub, Prepared, Settings, prepare
from gate.ci.history import SpecHistory
from gate.ci.judging import approval_record, revocation_record
from gate.ci.policy_change import log_lines
from gate.ci.policy_change import render as render_policy_change
from gate.ci.publish import publish
from gate.ci.scope import Outside
from gate.commands.common import ledger_view, make_report, print_errors, utc_now
from gate.commands.output import append_step_summary, write_atomically, write_stdout
from gate.commands.records import signer_for
from gate.errors import BackendError, InputError, one_line
from gate.evaluation.report import DOCS_URL, RenderContext, Report
from gate.integrations import needs_github
from gate.integrations.whole_files import MAX_READ_BYTES, why_not_regular
from gate.ledger.approvals import live_approvals
from gate.ledger.records import (
    DEFAULT_EXPIRY,
    MAX_EXPIRY,
    LedgerQuery,
    LedgerRecord,
    RecordKind,
    Source,
    parse_expiry,
)
from gate.ledger.signing import CI_PRINCIPAL, Signer
from gate.ledger.view import LedgerView
from gate.policy.findings import Outcome
from gate.policy.verdict import FailOn, exit_code
from gate.reporters import indented_json, load_reporter
from gate.reporters.github import command, message_command
from gate.reporters.json import JsonReporter
from gate.reporters.markdown import COMMENT_LIMIT

DEFAULT_SPECS = "experiments/**"
"""Every spec file (.yaml, .yml, .json, any case) under experiments/: what check judges."""
DEFAULT_API_URL = "https://api.github.com"


def run(args: argparse.Namespace) -> int:
    """Handle one workflow event; 0 when there is nothing to do."""
    env = os.environ
    event = parse_event(_env(env, "GITHUB_EVENT_NAME"), _payload(_env(env, "GITHUB_EVENT_PATH")))
    event = replace(event, attempt=run_attempt(env.get("GITHUB_RUN_ATTEMPT")))
    if event.skip is not None:
        print(one_line(f"budget-gate: nothing to do: {event.skip}"))
        return 0
    repository = _env(env, "GITHUB_REPOSITORY")
    fail_on = _choice(FailOn, args.fail_on or env.get("BUDGET_GATE_FAIL_ON") or "error", "fail-on")
    mode = _choice(
        CommentMode, args.comment or env.get("BUDGET_GATE_COMMENT") or "update", "comment"
    )
    now = utc_now()
    settings = Settings(
        globs=tuple((args.specs or env.get("BUDGET_GATE_SPECS") or DEFAULT_SPECS).split()),
        policy_dir=args.policy_dir or env.get("BUDGET_GATE_POLICY_DIR") or "policies",
        fail_on=fail_on,
        now=now,
        ledger=_ledger(args, env, now),
        sticky=mode is not CommentMode.OFF,
        signer=_ci_signer(),
    )
    with needs_github("budget-gate ci"):
        from gate.integrations.github.client import GitHubClient, bot_login

    api_url = env.get("GITHUB_API_URL") or DEFAULT_API_URL
    with GitHubClient(api_url, _env(env, "GITHUB_TOKEN"), repository, bot_login(env)) as gh:
        prepared = prepare(gh, event, settings)
        report = make_report(
            prepared.results,
            prepared.evaluator,
            _context(args, env, settings, prepared),
            prepared.diffs,
        )
        _write_local(report, env, args.report_json, prepared.outside_read)
        _log_policy_change(prepared, env)
        _log_outside(prepared)
        try:
            notes = publish(
                gh,
                prepared,
                report,
                mode=mode,
                run_url=_run_url(env),
                command=event.command,
                moved_from=event.base_from,
            )
        finally:  # NOTE: a revocation reaches the ledger though GitHub failed a write
            moved_by = now if event.base_from else None
            _record(settings.ledger, prepared, now, gh, moved_by, repository)
    for note in notes:
        print(message_command("warning", note, "budget-gate"))
    if prepared.policy_change is not None and not prepared.policy_change.valid:
        return Outcome.INVALID.exit_code
    return exit_code(report.outcome, fail_on)


def _log_policy_change(prepared: Prepared, env: Mapping[str, str]) -> None:
    """Policy errors as annotations (stdout) and the impact in the log and the job summary."""
    change = prepared.policy_change
    if change is None:
        return
    for problem in change.errors:
        where = problem.location
        message = f"{problem.message} — {problem.hint}" if problem.hint else problem.message
        title = "invalid policy"
        print(
            command("error", message, where, where.file, title)
            if where
            else message_command("error", message, title)
        )
    for line in log_lines(change):
        print(one_line(line), file=sys.stderr if not change.valid else sys.stdout)
    summary = env.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            with open(summary, "a", encoding="utf-8", newline="") as handle:
                handle.write(render_policy_change(change, COMMENT_LIMIT))
        except OSError as exc:
            raise InputError(
                f"GITHUB_STEP_SUMMARY {summary}: cannot write ({exc.strerror})"
            ) from None


def _log_outside(prepared: Prepared) -> None:
    """A warning annotation on each changed spec-like file the ``specs`` globs leave out."""
    for path in prepared.outside:
        message = (
            f"{path} reads as a spec but is outside the specs globs, so it was "
            "not judged — add it to the action's specs: input"
        )
        print(command("warning", message, None, path, "budget-gate: spec not judged"))


def _env(env: Mapping[str, str], name: str) -> str:
    value = env.get(name)
    if not value:
        raise InputError(
            f"{name} is not set",
            hint="budget-gate ci runs in a GitHub Actions workflow (see the README's workflow)",
        )
    return value


def _payload(path: str) -> dict[str, Any]:
    refused = why_not_regular(path, "GITHUB_EVENT_PATH")  # NOTE: never a FIFO, at most 25 MB
    if refused is not None:
        raise InputError(
            refused, hint="point GITHUB_EVENT_PATH at the event's JSON file, as GitHub Actions does"
        )
    try:
        with open(path, "rb") as handle:
            payload = json.loads(handle.read(MAX_READ_BYTES).decode("utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: nested too deep
        raise InputError(f"GITHUB_EVENT_PATH {path}: cannot read the event ({exc})") from None
    if not isinstance(payload, dict):
        raise InputError(f"GITHUB_EVENT_PATH {path}: the event is not a JSON object")
    return payload


def _choice(kind: type[FailOn] | type[CommentMode], value: str, name: str) -> Any:
    try:
        return kind(value.strip())
    except ValueError:
        choices = ", ".join(member.value for member in kind)
        raise InputError(f"{name} {value!r} is not one of {choices}") from None


def _ledger(
    args: argparse.Namespace, env: Mapping[str, str], now: dt.datetime
) -> LedgerView | None:
    """The MLflow ledger, only when a tracking URI is configured (never the sqlite default)."""
    if not env.get("MLFLOW_TRACKING_URI"):
        return None
    return ledger_view(args, now, approvals=True)


def _context(
    args: argparse.Namespace, env: Mapping[str, str], settings: Settings, prepared: Prepared
) -> RenderContext:
    return RenderContext(
        repository=env.get("GITHUB_REPOSITORY", ""),
        workflow=env.get("GITHUB_WORKFLOW", ""),
        policy_dir=os.path.normpath(settings.policy_dir),
        docs_url=args.docs_url or DOCS_URL,
        base_ref=prepared.pull.base_ref,
        head_sha=prepared.head_sha,
    )


def _write_local(
    report: Report, env: Mapping[str, str], report_json: str | None, outside: Outside
) -> None:
    """Annotations on stdout, the job summary, the JSON report file and the step outputs.

    The JSON report also lists the changed spec files the ``specs`` globs leave out
    (``unjudged``): a step that reads it learns what this run did not judge, as the
    comment says.
    """
    print_errors(list(report.results))
    write_stdout(load_reporter("github").render(report))
    sys.stdout.flush()
    append_step_summary(report, env)
    path = report_json or os.path.join(
        env.get("RUNNER_TEMP") or tempfile.gettempdir(), "budget-gate-report.json"
    )
    document = JsonReporter().document(report)
    document["unjudged"] = {
        "specs": list(outside.specs),
        "unread": [{"file": file, "why": why} for file, why in outside.unread],
        "not_read": list(outside.unchecked),
    }
    write_atomically(path, indented_json.dumps(document) + "\n")
    target = env.get("GITHUB_OUTPUT")
    if target:
        lines = "".join(f"{k}={v}\n" for k, v in outputs(report, os.path.abspath(path)).items())
        try:
            with open(target, "a", encoding="utf-8") as handle:
                handle.write(lines)
        except OSError as exc:
            raise InputError(f"GITHUB_OUTPUT {target}: cannot write ({exc.strerror})") from None


def _run_url(env: Mapping[str, str]) -> str:
    server, repo, run_id = (
        env.get(k) for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")
    )
    return f"{server}/{repo}/actions/runs/{run_id}" if server and repo and run_id else ""


def _ci_signer() -> Signer | None:
    """CI's key, if one is set and loads: one that does not is said when the run records."""
    try:
        return signer_for(CI_PRINCIPAL)
    except InputError:
        return None


def _revoke_withdrawn(
    ledger: LedgerView,
    prepared: Prepared,
    now: dt.datetime,
    signer: Signer | None,
    gh: GitHub,
    moved_by: dt.datetime | None,
    repository: str,
) -> None:
    """Revoke the ledger's copies of this pull request's approvals that GitHub withdrew.

    A dismissed review, a request for changes after an approval, a deleted comment, or one
    given before the base was edited: the pull request's status already ignores them, and
    the revocation (signed as CI) makes ``verify`` and the launch paths ignore them too.
    Found by the pull request's number, whatever their spec: one the diff no longer shows
    (its file taken out of the pull request) would still clear a launch of what was approved.
    Only this repository's: a ledger may serve several, whose pull requests share numbers.
    """
    number = prepared.pull.number
    try:
        records = ledger.records(LedgerQuery(pr_number=number, since=now - MAX_EXPIRY))
        # NOTE: CI's own revocations only: a local one by a signer who may not revoke counts
        # nowhere, and taken as done here it would leave a withdrawn approval in force.
        ours = [
            r for r in records if not (r.kind is RecordKind.REVOCATION and r.source is Source.LOCAL)
        ]
        here = {result.file for result in prepared.results}
        live = [
            a
            for a in live_approvals(ours, now)
            if a.record_id is not None and _of_this_repository(a, repository, here)
        ]
        shown, moved = _standing(gh, prepared, moved_by) if live else (frozenset(), None)
    except BackendError as exc:  # said aloud; the next run revokes what is left
        note = f"withdrawn approvals of pull request #{number} were not checked: {exc}"
        print(message_command("warning", note, "budget-gate"))
        return
    for approval in live:
        why = withdrawn(approval, number, shown, moved)
        if why is None:
            continue
        try:
            run_id = ledger.store().append(revocation_record(approval, why, number, now), signer)
        except InputError as exc:  # signers required, and no key (a fork's run)
            note = f"the withdrawn approval was not revoked in the ledger: {exc}"
            print(message_command("warning", note, "budget-gate"))
            continue
        print(one_line(f"budget-gate: revoked {approval.summary()} of {approval.spec} as {run_id}"))


def _of_this_repository(approval: LedgerRecord, repository: str, here: set[str]) -> bool:
    """Whether a GitHub approval of a pull request with this number is this repository's.

    One recorded before records named their repository counts only for a spec this diff
    changes, as then: another repository's pull request of that number may have made it.
    """
    if approval.repository is None:
        return approval.spec in here
    return approval.repository.casefold() == repository.casefold()


def _standing(
    gh: GitHub, prepared: Prepared, moved_by: dt.datetime | None
) -> tuple[frozenset[str], dt.datetime | None]:
    """The approvals GitHub shows now, and when the base was last edited.

    The flow's, when it read them; it reads neither when the pull request changes no spec,
    yet an approval of a spec since taken out of it may have been withdrawn.
    """
    if prepared.shown is not None:
        return prepared.shown, prepared.base_moved_at
    pull = prepared.pull
    shown = standing(gh.reviews(pull.number), gh.comments(pull.number))
    return shown, SpecHistory(gh, pull, prepared.head_sha, moved_by).base_moved_at()


def _record(
    ledger: LedgerView | None,
    prepared: Prepared,
    now: dt.datetime,
    gh: GitHub,
    moved_by: dt.datetime | None,
    repository: str,
) -> None:
    """Record accepted GitHub approvals in the MLflow ledger, when one is configured.

    Each is recorded once per spec version (by the review or comment that gave it), with
    the commit it approved and the time it was given; the ledger stamps when it was
    written, and CI signs it as ``budget-gate-ci`` (``BUDGET_GATE_SIGNING_KEY``).
    """
    if ledger is None:
        return
    signer = signer_for(CI_PRINCIPAL)
    _revoke_withdrawn(ledger, prepared, now, signer, gh, moved_by, repository)
    if not prepared.accepted:
        return
    pull = prepared.pull
    if not pull.default_branch or pull.base_ref != pull.default_branch:
        # NOTE: judged by that base's policy, which its pusher wrote (self-approval allowed,
        # a read-only approver listed): its signed copy cleared launches under main's.
        said = f"into {pull.base_ref}, not the default branch {pull.default_branch or '(unknown)'}"
        print(
            one_line(
                f"budget-gate: approvals of a pull request {said} are not recorded in "
                "the ledger: launches are cleared by the default branch's policy"
            )
        )
        return
    span = parse_expiry(DEFAULT_EXPIRY)
    for evaluation, candidate in prepared.accepted:
        record = approval_record(evaluation, candidate, prepared.pull.number)
        known = ledger.records(LedgerQuery(fingerprint=record.fingerprint))
        if any(r.event_id == record.event_id and r.spec == record.spec for r in known):
            continue
        try:
            written = replace(record, expires_at=now + span, repository=repository)
            run_id = ledger.store().append(written, signer)
        except InputError as exc:  # signers required, and no key (a fork's run): said aloud
            note = f"the approval was not recorded in the ledger: {exc}"
            print(message_command("warning", note, "budget-gate"))
            continue
        print(one_line(f"budget-gate: recorded {record.summary()} of {record.spec} as {run_id}"))
