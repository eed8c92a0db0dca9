"""Shared plumbing of the evaluating commands: the evaluator, the ledger, the report.

What only some runs need (the calibration, git, the ledger and MLflow, a base version's
diff) is imported when a run needs it, so a plain ``check`` loads the pure core alone.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from gate import __version__
from gate.commands.discovery import expand_specs
from gate.errors import InputError, one_line
from gate.estimate.prices import load_catalog
from gate.evaluation.evaluate import Evaluator
from gate.evaluation.report import DOCS_URL, LedgerNote, RenderContext, Report, SpecResult
from gate.ledger.view import LedgerView
from gate.policy.findings import Outcome
from gate.policy.loader import CALIBRATION_FILE, PolicySet, builtin_policies
from gate.policy.rules import all_rule_ids, rule_info
from gate.spec.globs import SPEC_SUFFIXES
from gate.spec.loader import load_bytes, load_file

if TYPE_CHECKING:
    from gate.calibrate.model import Calibration
    from gate.evaluation.diff import SpecDiff
    from gate.ledger.records import LedgerStore
    from gate.ledger.signing import Trust

POLICY_DIR = "policies"
"""Where policies are looked for (at the repository root) unless --policy-dir says otherwise."""


def make_evaluator(
    args: argparse.Namespace,
    *,
    fail_on_warn: bool = False,
    ledger: LedgerView | None = None,
    alternatives_for: frozenset[Outcome] = frozenset(),
    calibrated: bool = True,
) -> Evaluator:
    """Build the evaluator from --policy-dir and --as-of, reading ``ledger`` if given.

    With --base-ref the policies are read from that git ref, not from the working tree: a
    pull request must not be judged by policies it changes itself. ``calibrated`` False
    leaves the calibration file unread (``calibrate`` brings its own).
    """
    from gate.integrations.git.repo import RepoPaths

    base_ref = getattr(args, "base_ref", None)
    policies = load_policies(args)
    policy_dir = str(policies.policy_dir)
    return Evaluator(
        policies=policies,
        catalog=load_catalog(),
        today=as_of(args)[0],
        as_of=getattr(args, "as_of", None),
        fail_on_warn=fail_on_warn,
        ledger=ledger,
        repo_path=RepoPaths(policy_dir if not policies.builtin else POLICY_DIR),
        alternatives_for=alternatives_for,
        calibration=_calibration(
            policy_dir if not policies.builtin else None,
            getattr(args, "calibration", None),
            base_ref,
        )
        if calibrated
        else None,
    )


def load_policies(args: argparse.Namespace) -> PolicySet:
    """The policies of --policy-dir (at --base-ref when given), else found, else built in.

    Without --policy-dir they are ``policies/`` at the repository root, from whatever
    directory the command runs (:mod:`gate.integrations.git.policy_dir`). The built-in
    default is said on stderr, and the report names it: it applies only when no policy
    directory was named or found.
    """
    home = policy_home(args)
    base_ref = getattr(args, "base_ref", None)
    if base_ref:
        assert home is not None  # with a ref, the directory where the policies would be
        return base_policies(str(home), base_ref)
    policies = builtin_policies() if home is None else PolicySet(home)
    if policies.builtin:
        from gate.integrations.git.repo import repository_root

        root = repository_root(Path.cwd())
        where = f"at the repository root {root}" if root is not None else "here"
        print(
            f"budget-gate: no {POLICY_DIR}/ directory {where}: using the built-in default "
            "policy (budget-gate init writes it to policies/default.yaml for you to edit)",
            file=sys.stderr,
        )
    return policies


def _calibration(
    policy_dir: str | None, path: str | None, base_ref: str | None
) -> Calibration | None:
    """The calibration as :func:`load_calibration` finds it; with --base-ref, the one at the ref.

    ``policy_dir`` None (the built-in policy): only a named --calibration is read.
    NOTE: like the policies, the calibration beside them is read from the base: a change must
    not price itself with measurements it edits.
    """
    if policy_dir is None:
        return load_calibration(None, path)
    if path is not None or base_ref is None:
        return load_calibration(policy_dir, path)
    from gate.calibrate.model import parse as parse_calibration
    from gate.integrations.git.repo import read_base

    name = os.path.join(policy_dir, CALIBRATION_FILE)
    blob = read_base(base_ref, [name]).get(name)
    return parse_calibration(load_bytes(blob, f"{name}@{base_ref}")) if blob else None


def load_calibration(policy_dir: str | None, path: str | None) -> Calibration | None:
    """The calibration at ``path`` (--calibration), else ``calibration.json`` by the policies.

    None when neither exists; a named file that is missing or invalid is bad input.
    """
    if path is None:
        if policy_dir is None:
            return None
        path = os.path.join(policy_dir, CALIBRATION_FILE)
        if not os.path.isfile(path):
            return None
    from gate.calibrate.model import parse as parse_calibration

    return parse_calibration(load_file(path))


def base_policies(policy_dir: str, ref: str) -> PolicySet:
    """The policy files of ``policy_dir`` as committed at ``ref``."""
    from gate.integrations.git.repo import list_base, read_base

    paths = list_base(ref, policy_dir, (".yaml",))
    # Only files directly in the directory are policies (policies/tests/ holds fixtures).
    top = [p for p in paths if os.path.dirname(os.path.relpath(p, policy_dir)) == ""]
    blobs = read_base(ref, top)
    files = {os.path.basename(p): blob for p, blob in blobs.items() if blob is not None}
    if not files:
        raise InputError(
            f"no policies in {policy_dir} at {ref}",
            hint="commit the policies to the base branch first; a change is judged by the "
            "policies it is merged into",
        )
    return PolicySet(policy_dir, files)


def evaluate_against(
    evaluator: Evaluator, ref: str, patterns: list[str]
) -> tuple[list[SpecResult], list[SpecDiff]]:
    """Evaluate the specs, and each one's base version at ``ref`` (read from git).

    A spec under a directory argument that exists only at ``ref``, or a named file that is
    gone from disk but exists at ``ref``, is a deleted spec: it has a diff but no result.
    """
    from gate.evaluation.diff import compare
    from gate.integrations.git.repo import list_base, read_base

    paths = expand_specs(patterns)
    in_base = [p for d in patterns if os.path.isdir(d) for p in list_base(ref, d, SPEC_SUFFIXES)]
    every = list(dict.fromkeys([*paths, *in_base]))
    blobs = read_base(ref, every)
    results = [evaluator.evaluate(p) for p in paths if os.path.exists(p) or blobs[p] is None]
    heads = {r.file: r for r in results}
    diffs = []
    for path in every:
        blob, head = blobs[path], heads.get(path)
        base = evaluator.evaluate(path, blob) if blob is not None else None
        if base is not None or head is not None:
            diffs.append(compare(path, base, head))
    return results, diffs


def as_of(args: argparse.Namespace) -> tuple[dt.date, dt.datetime]:
    """The day (waivers) and moment (approvals, budget month) to judge at: --as-of or now.

    A bare date means midnight UTC; a time without a zone is UTC. Without --as-of the day
    is today's date in UTC, never the machine's local date, so a waiver expires at the same
    moment for every command on every machine. Commands that write to the ledger have no
    --as-of: records always carry the real time.
    """
    value: str | None = getattr(args, "as_of", None)
    if value is None:
        now = utc_now()
        return now.date(), now
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=dt.timezone.utc)
        moment = moment.astimezone(dt.timezone.utc)
        if not 1970 <= moment.year <= 9998:  # NOTE: a ledger read looks back a year from it
            raise ValueError(value)
    except (ValueError, OverflowError):
        raise InputError(
            f"--as-of {value!r} is not a usable date",
            hint="use YYYY-MM-DD or YYYY-MM-DDTHH:MM within years 1970–9998",
        ) from None
    return moment.date(), moment


def utc_now() -> dt.datetime:
    """The current time in UTC (the one clock the commands read)."""
    return dt.datetime.now(dt.timezone.utc)


def ledger_view(
    args: argparse.Namespace, now: dt.datetime, *, approvals: bool, if_read: bool = False
) -> LedgerView:
    """The ledger at --tracking-uri, MLFLOW_TRACKING_URI or the sqlite default, opened lazily.

    ``if_read``: approvals also count for a spec whose monthly budget read the ledger.
    """
    from gate.integrations.git.policy_history import approver_history
    from gate.integrations.git.remote import this_repository
    from gate.integrations.mlflow.tracking_uri import redact

    uri = tracking_uri_of(args)
    home = policy_home(args)
    return LedgerView(
        lambda trust: _open_ledger(uri, trust),
        now,
        approvals=approvals,
        where=redact(uri),
        approvals_if_read=if_read,
        history=approver_history(home),
        locate=partial(this_repository, home),
    )


def tracking_uri_of(args: argparse.Namespace) -> str:
    """--tracking-uri, MLFLOW_TRACKING_URI, else ``mlflow.db`` beside the policies in use.

    The policies are found as :func:`load_policies` finds them (from the spec's folder for
    a command run outside the repository), so every command reads one ledger.
    """
    from gate.integrations.mlflow.tracking_uri import resolve_tracking_uri

    home = policy_home(args)
    return resolve_tracking_uri(getattr(args, "tracking_uri", None), os.environ, home)


def default_ledger(args: argparse.Namespace) -> bool:
    """Whether :func:`tracking_uri_of` fell back to the default ``mlflow.db``.

    A missing store then names the default and how to point elsewhere: the user gave no path.
    """
    return not (getattr(args, "tracking_uri", None) or os.environ.get("MLFLOW_TRACKING_URI"))


def policy_home(args: argparse.Namespace) -> Path | None:
    """The policy directory a command reads: --policy-dir, else found, else ``None`` (built in).

    With --base-ref, the directory where the policies would be, read at that ref.
    """
    from gate.integrations.git.policy_dir import expected_policy_dir, policy_dir_for

    given = getattr(args, "policy_dir", None)
    if getattr(args, "base_ref", None):
        return Path(given) if given else expected_policy_dir()
    spec = getattr(args, "spec", None)
    specs = [spec] if isinstance(spec, str) else getattr(args, "specs", None) or []
    return policy_dir_for(given, specs=[s for s in specs if isinstance(s, str) and s != "-"])


def _open_ledger(uri: str, trust: Trust) -> LedgerStore:
    from gate.integrations import open_ledger

    quiet_mlflow()
    return open_ledger(uri, trust)


def quiet_mlflow() -> None:
    """Short retries and timeouts, no INFO lines: call before MLflow is first used.

    MLflow retries a failed request 7 times with growing pauses (minutes in all); a command
    at a terminal or in CI should report an outage within seconds. The user's own settings
    win. This process is the CLI's, so changing its environment is safe.
    """
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")  # no INFO lines on stderr


def make_report(
    results: list[SpecResult],
    evaluator: Evaluator,
    context: RenderContext | None = None,
    diffs: list[SpecDiff] | None = None,
    rendered: Mapping[str, tuple[str, ...]] | None = None,
) -> Report:
    """Assemble the report, with the docs of every rule evaluated and what the ledger said."""
    return Report(
        results=tuple(results),
        rules={rule_id: rule_info(rule_id) for rule_id in all_rule_ids()},
        catalog_source=evaluator.catalog.source,
        catalog_date=evaluator.catalog.date,
        version=__version__,
        context=context or RenderContext(),
        diffs=tuple(diffs or ()),
        ledger=ledger_note(evaluator.ledger),
        rendered=rendered or {},
    )


def ledger_note(view: LedgerView | None) -> LedgerNote | None:
    """What a run read of the ledger, for the report; ``None`` when it never opened it."""
    if view is None or not view.opened or view.trust is None:  # opened: its trust is set
        return None
    ignored = tuple(sorted(view.ignored().items(), key=lambda item: (-item[1], item[0])))
    return LedgerNote(view.where, view.trust.signed, view.trust.warning(), ignored, view.absent)


def render_context(args: argparse.Namespace, env: Mapping[str, str]) -> RenderContext:
    """Where the report is shown: the comment's identity from GitHub's env, the docs URL."""
    return RenderContext(
        repository=env.get("GITHUB_REPOSITORY", ""),
        workflow=env.get("GITHUB_WORKFLOW", ""),
        policy_dir=os.path.normpath(args.policy_dir or POLICY_DIR),
        docs_url=args.docs_url or DOCS_URL,
        base_ref=args.base_ref,
        quiet=getattr(args, "quiet", False),
    )


def print_errors(results: list[SpecResult]) -> None:
    """Input errors are diagnostics: one line each on stderr."""
    for result in results:
        for line in result.errors:
            print(one_line(str(line)), file=sys.stderr)
