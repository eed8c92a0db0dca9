"""``budget-gate report``: the month's team report, from the ledger and the tagged runs.

Reads, once each, what ``reconcile`` reads: every run tagged by budget-gate in every
active MLflow experiment that started in the report's window (its months and the trend
months before them; one paged search over REST, with the history of the metric each
period run's ``budget_gate.monitor`` tag names in bulk,
:mod:`gate.integrations.mlflow.runs`: a trend month shows cost and qualified models only,
so its runs' histories are not read), and the whole ledger
(:func:`gate.integrations.open_ledger`). Each run's spec version is found by its path and
fingerprint (on disk or in git history, as ``calibrate --backtest`` finds it) and
evaluated once, for its price, estimate and quality gate; the figures are computed by
:mod:`gate.report`. The tag is only a guess at which history to fetch: a run whose tag is
missing or names another metric than its plan monitors is read again, by its spec
version's fingerprint and the plan's metric, as ``reconcile`` reads it. ``--issue`` posts
the Markdown report as the period's GitHub issue, after the files are written, and edits
that issue when run again. Exit 0, 3 bad input (a ``--team`` that is empty or that nothing
knows, too; ``--issue`` without its token), 4 MLflow or GitHub failed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from gate import __version__
from gate.commands.common import (
    default_ledger,
    make_evaluator,
    quiet_mlflow,
    tracking_uri_of,
    utc_now,
)
from gate.commands.output import (
    FormatTarget,
    plan_targets,
    refuse_overwriting,
    write_atomically,
)
from gate.commands.progress import progress_for
from gate.commands.records import say_ignored, warn_unsigned
from gate.commands.report_issue import issue_client, post_issue
from gate.commands.report_plans import SpecPlans
from gate.errors import InputError
from gate.integrations import needs_mlflow, open_ledger
from gate.integrations.mlflow.tracking_uri import redact
from gate.ledger import tracking
from gate.ledger.encoding import KIND
from gate.ledger.records import LEDGER_EXPERIMENT, LedgerQuery, LedgerRecord, RecordKind
from gate.policy.loader import PolicySet
from gate.reconcile.actuals import RunFacts
from gate.report.commitments import NO_TEAM, commitments
from gate.report.compute import ReportInputs, build_report
from gate.report.model import MonthReport
from gate.report.period import Period, last_full_month, parse_period
from gate.report.runs import MonthRuns, Priced
from gate.reporters import load_report_renderer
from gate.words import listed

if TYPE_CHECKING:  # MLflow's reader is imported when the command reads, GitHub's to post
    from gate.integrations.github.client import GitHubClient
    from gate.integrations.mlflow.runs import MlflowRuns


def run(args: argparse.Namespace) -> int:
    """Read the window's runs and the ledger, compute the report, write every format."""
    with issue_client(args) as github:  # before the read: a missing token is bad input
        return _report(args, github)


def _report(args: argparse.Namespace, github: GitHubClient | None) -> int:
    now = utc_now().replace(microsecond=0)  # the forecast's pace, as generated_at says it
    targets = plan_targets(args.format or [FormatTarget("text")], example="json=report.json")
    _check_folders(targets)  # before the read, which can take a minute
    trend = args.trend
    month = args.month
    period = last_full_month(now, trend) if month is None else parse_period(month, trend, now)
    evaluator = make_evaluator(args, calibrated=False)
    policies = evaluator.policies
    if args.team is not None and not args.team.strip():
        raise InputError(
            "--team is empty (an unset variable?): no team is named that",
            hint=_known_hint(_known_teams(policies)),
        )
    plans = SpecPlans(evaluator, now)
    uri = tracking_uri_of(args)
    policy_dir = None if policies.builtin else str(policies.policy_dir)
    refuse_overwriting(targets, _store_files(uri), policy_dir)  # what it reads, before the read
    quiet_mlflow()
    runs, names = _store(uri, default=default_ledger(args))
    trust = policies.trust()
    warn_unsigned(trust)
    ledger = open_ledger(uri, trust)
    records = ledger.query(LedgerQuery())
    say_ignored(ledger)
    month_runs = MonthRuns(plans, period, names, _ledger_versions(plans, records, period))
    _read_window(runs, month_runs, names, period, {r.run_id for r in records if r.run_id})
    _refetch(runs, month_runs, period)
    _untagged(runs, month_runs, names, period)
    refuse_overwriting(targets, plans.spec_files())
    currency = policies.for_team(args.team).policy.currency
    found = commitments(records, period, currency)
    teams = {g.priced.team for g in month_runs.experiments} | set(found.approved)
    teams |= _known_teams(policies)  # a budget with nothing spent is shown at 0
    _check_team(args.team, teams, records, month_runs)
    report = build_report(
        ReportInputs(
            period=period,
            now=now,
            currency=currency,
            where=redact(uri),
            experiments=month_runs.experiments,
            commitments=found,
            budgets={team: _budget(policies, team, currency) for team in teams},
            unpriced=month_runs.unpriced_of(args.team),
            team_filter=args.team,
            needs_approval={r.fingerprint: plans.needs_approval(r) for r in found.approvals},
            notes=(
                *_default_month(args, period),
                *_policy_notes(policies, teams, trust.warning()),
            ),
            version=__version__,
        )
    )
    _emit(report, targets)
    if github is not None:
        post_issue(github, report)
    return 0


def _store_files(uri: str) -> list[str]:
    """A ``sqlite:///`` store's file and SQLite's journals beside it: what the report reads."""
    from gate.integrations.mlflow.sql_source import store_path

    path = store_path(uri)
    if path is None:
        return []
    return [str(path), *(f"{path}{journal}" for journal in ("-wal", "-shm", "-journal"))]


def _store(uri: str, *, default: bool) -> tuple[MlflowRuns, dict[str, str]]:
    """The tracking store's runs, and its experiments' names by id (deleted ones too)."""
    with needs_mlflow("report"):
        from gate.integrations.mlflow.runs import MlflowRuns

        runs = MlflowRuns(uri, default=default)
    return runs, {e.experiment_id: e.name for e in runs.experiments()}


def _read_window(
    runs: MlflowRuns,
    month_runs: MonthRuns,
    names: dict[str, str],
    period: Period,
    records: set[str],
) -> None:
    """Add every tagged run that started in the window to ``month_runs``.

    Deleted runs and those of deleted experiments too: deleting does not undo spend. The
    ledger's experiment is read too: its ``records`` (the run ids of the records the
    ledger read) are the ledger's; another run there with a record's kind tag (a job's to
    set, or a record the ledger refused) is listed apart, and any other run counts as
    logged outside its spec's experiment.
    """
    begins = _ms(period.start)
    for facts in _window(runs, names, period):
        in_ledger = names.get(facts.experiment_id) == LEDGER_EXPERIMENT
        if in_ledger and facts.run_id in records:
            continue
        if in_ledger and KIND in facts.tags:
            month_runs.add_unread_record(facts)
        elif facts.start_ms is not None and facts.start_ms < begins:  # a trend month's
            month_runs.add(facts)  # read with no history: its waste is not reported
        else:
            month_runs.add(facts, facts.tags.get(tracking.MONITOR, ""))


def _window(runs: MlflowRuns, names: dict[str, str], period: Period) -> Iterator[RunFacts]:
    """Every tagged run that started in the window, in every experiment, deleted or not."""
    from gate.integrations.mlflow.runs import RunQuery

    ids = list(names)
    if not ids:
        return
    started = _started(period)
    # NOTE: pages of 1,000 (not 5,000) spread a big month's searches over the server's
    # workers: 20 s instead of 26 s for 20,000 runs on 2 cores (docs/report.md#speed).
    query = RunQuery(
        ids[0],
        None,
        None,
        history_tag=tracking.MONITOR,
        more_experiments=tuple(ids[1:]),
        started=started,
        page_size=1_000,
        deleted=True,
        histories_from=_ms(period.start),  # the trend months' runs: cost and models only
    )
    bar = progress_for(sys.stderr)
    try:
        yield from runs.facts(query, bar)
    finally:
        if bar is not None:
            bar.close()


def _refetch(runs: MlflowRuns, month_runs: MonthRuns, period: Period) -> None:
    """Read again, with the history of the metric their plan monitors, the runs that need it.

    Their ``budget_gate.monitor`` tag was missing or named another metric: the history read
    with them was not the one their spec's early stopping watches.
    """
    from gate.integrations.mlflow.runs import RunQuery

    for (experiment_id, fingerprint, metric), ids in sorted(month_runs.refetch.items()):
        started = (_ms(period.start), _ms(period.end))  # a trend month's run has none
        query = RunQuery(experiment_id, fingerprint, metric, started=started, deleted=True)
        for facts in runs.facts(query):
            if facts.run_id in ids:
                month_runs.add(facts, metric)
    month_runs.refetch.clear()


def _ledger_versions(plans: SpecPlans, records: list[LedgerRecord], period: Period) -> list[Priced]:
    """The spec versions the ledger approved or launched in the window, priced."""
    begin, end = period.window[0].start, period.window[-1].end
    kinds = (RecordKind.APPROVAL, RecordKind.LAUNCH)
    wanted = {
        (r.spec, r.fingerprint) for r in records if r.kind in kinds and begin <= r.recorded_at < end
    }
    found = [plans.find(spec, fingerprint) for spec, fingerprint in sorted(wanted)]
    return [priced for priced in found if not isinstance(priced, str)]


def _untagged(
    runs: MlflowRuns, month_runs: MonthRuns, names: dict[str, str], period: Period
) -> None:
    """Count the runs with no fingerprint tag in the experiments the window's versions log to.

    A job that deletes its run's tag takes its hours out of the tagged search (MLflow's
    filters leave a missing tag out), so they are searched for apart, in one search.
    """
    from gate.integrations.mlflow.runs import RunQuery

    ids = {name: eid for eid, name in names.items()}
    tracked = {ids[name]: priced for name, priced in month_runs.tracked().items() if name in ids}
    if not tracked:
        return
    first, *more = sorted(tracked)
    query = RunQuery(
        first,
        None,
        None,
        more_experiments=tuple(more),
        started=_started(period),
        page_size=5_000,
        untagged=True,
        deleted=True,
        histories_from=_ms(period.end),  # none: an untagged run is counted, not priced
    )
    for facts in runs.facts(query):
        month_runs.add_untagged(facts, tracked[facts.experiment_id])


def _started(period: Period) -> tuple[int, int]:
    """The window's start times, ``[from, before)`` in epoch ms."""
    window = period.window
    return (_ms(window[0].start), _ms(window[-1].end))


def _ms(moment: dt.datetime) -> int:
    return int(moment.timestamp() * 1000)


def _known_teams(policies: PolicySet) -> set[str]:
    """The teams the policies name: a file of their own, or the default policy's ``teams``."""
    return {*policies.teams(), *(policies.for_team(None).policy.teams or ())}


def _check_team(
    team: str | None, teams: set[str], records: list[LedgerRecord], month_runs: MonthRuns
) -> None:
    """A ``--team`` that no policy, run or ledger record knows is a typo, not an empty month."""
    if team is None or team in teams:
        return
    known = teams | {r.team for r in records if r.team}
    known |= {t for u in month_runs.unpriced for t in u.teams}
    if team not in known:
        raise InputError(
            f"--team {team}: no policy, run or ledger record knows this team",
            hint=_known_hint(known),
        )


def _known_hint(teams: set[str]) -> str:
    named = sorted(t for t in teams if t and t != NO_TEAM)
    if not named:
        return "no team is known: the policies name none and no run or record has one"
    shown = ", ".join(named[:20]) + (f" and {len(named) - 20} more" if len(named) > 20 else "")
    return f"known teams: {shown}"


def _budget(policies: PolicySet, team: str, currency: str) -> Decimal | None:
    """The team's monthly budget, where its policy sets one per team in the report's currency."""
    policy = policies.for_team(None if team == NO_TEAM else team).policy
    limits = policy.limits
    if limits.monthly_budget is None or limits.budget_scope != "team":
        return None
    return limits.monthly_budget if policy.currency == currency else None


def _policy_notes(policies: PolicySet, teams: set[str], unsigned: str | None) -> list[str]:
    """The fallbacks that priced the report, said in it (stderr is not in an issue).

    The built-in policy; teams no policy knows (no file of their own, not in the default
    policy's ``teams``: BG203), priced by the default one; records that are not signed.
    """
    notes = [unsigned] if unsigned else []
    if policies.builtin:
        return [
            "no policies/ directory: every run was priced and every budget read by the "
            "built-in default policy (budget-gate init writes it to policies/default.yaml)",
            *notes,
        ]
    named = set(policies.for_team(None).policy.teams or ())
    unknown = sorted(t for t in teams - named - {NO_TEAM} if policies.for_team(t).chain[0] != t)
    if unknown:
        notes.insert(
            0,
            "teams no policy knows (no policies/<team>.yaml, not in the default policy's "
            f"teams), priced and budgeted by the default policy: {listed(unknown)}",
        )
    return notes


def _default_month(args: argparse.Namespace, period: Period) -> tuple[str, ...]:
    if args.month is not None:
        return ()
    return (f"no --month: the last full month, {period} (UTC)",)


_SUFFIXES = {"text": "txt", "markdown": "md", "focus": "csv"}


def _check_folders(targets: list[FormatTarget]) -> None:
    """Refuse a file the report cannot be written to before the read, which can take a minute."""
    for target in targets:
        if target.path is None:
            continue
        if not Path(target.path).absolute().parent.is_dir():
            raise InputError(
                f"--format {target.name}={target.path}: the folder does not exist",
                hint="create it first, or write the file elsewhere",
            )
        if Path(target.path).is_dir():
            example = f"report.{_SUFFIXES.get(target.name, target.name)}"
            raise InputError(
                f"--format {target.name}={target.path}: that is a directory, not a file",
                hint=f"name a file, e.g. --format {target.name}={Path(target.path, example)}",
            )


def _emit(report: MonthReport, targets: list[FormatTarget]) -> None:
    """Render every format first, then write the files, then stdout."""
    rendered = [(t, load_report_renderer(t.name)(report)) for t in targets]
    for target, text in rendered:
        if target.path is not None:
            write_atomically(target.path, text)
            print(f"wrote {target.path}", file=sys.stderr)
    for target, text in rendered:
        if target.path is None:
            sys.stdout.write(text)
