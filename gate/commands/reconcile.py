"""``budget-gate reconcile``: what the experiment's MLflow runs really cost, and what it bought.

Evaluates the spec (for its price, estimate and policy), reads the runs tagged with its
fingerprint from the spec's MLflow experiment, prices and totals them
(:mod:`gate.reconcile.reconciler`), writes the actual cost back to the ledger and, with
``--pr``, the Markdown report to the pull request, then prints the report. Exit 0 pass, 1
no qualified model or spend past the policy's tolerance, 3 bad input, 4 MLflow or GitHub
failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import importlib
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import TYPE_CHECKING

from gate import __version__
from gate.commands.common import (
    default_ledger,
    make_evaluator,
    policy_home,
    print_errors,
    quiet_mlflow,
    tracking_uri_of,
    utc_now,
)
from gate.commands.output import write_stdout
from gate.commands.progress import progress_for
from gate.commands.records import new_record, say_ignored, signer_for, warn_unsigned
from gate.errors import InputError
from gate.estimate.prices import Quote, quoter
from gate.evaluation.evaluate import Evaluation
from gate.integrations import needs_github, needs_mlflow, open_ledger
from gate.integrations.mlflow.tracking_uri import redact
from gate.ledger import tracking
from gate.ledger.approvals import live_approvals
from gate.ledger.records import (
    LEDGER_EXPERIMENT,
    LedgerQuery,
    LedgerRecord,
    LedgerStore,
    RecordKind,
)
from gate.money import to_decimal
from gate.policy.findings import Outcome
from gate.policy.model import Policy
from gate.reconcile.actuals import Plan, RunFacts, RunStatus, price_run
from gate.reconcile.quality import monitor_for
from gate.reconcile.reconciler import (
    OtherVersions,
    Reconciler,
    ReconcileReport,
    Reconciliation,
)
from gate.reporters.reconcile_text import REFUSED
from gate.spec.experiment import Experiment
from gate.spec.trial import Capacity

if TYPE_CHECKING:
    from gate.integrations.github.client import GitHubClient
    from gate.integrations.mlflow.runs import MlflowRuns, Progress, RunQuery

FORMATS = {
    "text": "gate.reporters.reconcile_text",
    "json": "gate.reporters.reconcile_json",
    "markdown": "gate.reporters.reconcile_markdown",
}


def run(args: argparse.Namespace) -> int:
    """Reconcile one spec's runs; the verdict's exit code, or 3/4 on bad input or outages."""
    now = utc_now()
    github = _github(args)  # before any work: a missing token is bad input, not a late failure
    evaluator = make_evaluator(args)
    evaluation = evaluator.evaluate_spec(args.spec)
    if evaluation.result.outcome is Outcome.INVALID:
        print_errors([evaluation.result])
        return evaluation.result.outcome.exit_code
    spec, policy = evaluation.spec, evaluation.policy
    assert spec is not None and policy is not None and evaluation.result.estimate is not None
    uri = tracking_uri_of(args)
    quiet_mlflow()
    with needs_mlflow("reconcile"):
        from gate.integrations.mlflow.runs import MlflowRuns, RunQuery

        runs = MlflowRuns(uri, default=default_ledger(args))
    experiment = spec.tracking.mlflow_experiment or spec.metadata.name
    experiment_id = _experiment_id(args.spec, runs, experiment)
    trust = evaluator.policies.trust()
    warn_unsigned(trust)
    ledger = open_ledger(uri, trust)
    plan = _plan(args, evaluation, ledger, now)
    say_ignored(ledger)
    fingerprint = None if args.all_versions else plan.fingerprint
    query = RunQuery(experiment_id, fingerprint, plan.monitor.metric, deleted=True)
    result = _reconcile(plan, runs.facts, query)
    other_versions = None
    if fingerprint is not None:
        others = RunQuery(experiment_id, None, None, other_than=fingerprint, deleted=True)
        other_versions = _other_versions(runs.facts, others, experiment, plan, bool(result.runs))
    record_id, why_not, refusal = _try_record(args, evaluation, ledger, result, now)
    report = ReconcileReport(
        file=args.spec,
        name=spec.metadata.name,
        policy=evaluation.result.policy or "",
        experiment=experiment,
        where=redact(uri),
        result=result,
        version=__version__,
        all_versions=args.all_versions,
        record_id=record_id,
        not_recorded=why_not,
        repository=os.environ.get("GITHUB_REPOSITORY", ""),
        other_versions=other_versions,
    )
    if github is not None and refusal is None:
        _comment(github, args.pr, report)
    write_stdout(_renderer(args.format)(report))
    if refusal is not None:
        raise refusal  # after the report: exit 3, nothing recorded
    return result.verdict.exit_code


def _experiment_id(file: str, runs: MlflowRuns, experiment: str) -> str:
    """The id of the spec's MLflow experiment; the ledger's, or none, is bad input."""
    if experiment == LEDGER_EXPERIMENT:
        raise InputError(
            f"{file}: tracking.mlflow_experiment is the ledger's experiment "
            f"{LEDGER_EXPERIMENT!r}, which holds its records, not training runs",
            hint="set tracking.mlflow_experiment to the experiment the runs are logged in",
        )
    found = runs.experiment(experiment)
    if found is None:
        raise InputError(
            f"{file}: MLflow at {runs.where} has no experiment {experiment!r}",
            hint=f"log the runs there (mlflow.set_experiment({experiment!r}), as "
            "gate.require_approval(...).experiment names it), or pass the right --tracking-uri",
        )
    return found.experiment_id


def _reconcile(
    plan: Plan, read: Callable[[RunQuery, Progress | None], Iterable[RunFacts]], query: RunQuery
) -> Reconciliation:
    """Stream the runs through the reconciler, with a progress bar on a terminal."""
    reconciler = Reconciler(plan)
    bar = progress_for(sys.stderr)
    try:
        for facts in read(query, bar):
            reconciler.add(facts)
    finally:
        if bar is not None:
            bar.close()
    return reconciler.result()


def _other_versions(
    read: Callable[[RunQuery, Progress | None], Iterable[RunFacts]],
    query: RunQuery,
    experiment: str,
    plan: Plan,
    found: bool,
) -> OtherVersions | None:
    """What the experiment's runs of other fingerprints hold, uncounted here; said on stderr.

    After a spec edit its new version has no runs; and a run whose job retagged it (another
    fingerprint, or none: read apart, MLflow's ``!=`` leaves an absent tag out) would leave
    this version's total without a word. The reports say
    it too (a note; ``other_versions`` in JSON): stderr is not in a pull-request comment.
    """

    def ended(query: RunQuery) -> list[RunFacts]:
        # NOTE: a run deleted before it ended is never ended: what it held is not known
        return [facts for facts in read(query, None) if not facts.deleted_open]

    others = ended(query)
    untagged = ended(dataclasses.replace(query, other_than=None, untagged=True))
    versions = Counter(facts.tags.get(tracking.FINGERPRINT) for facts in others)
    if found and not others and not untagged:
        return None
    priced = [price_run(facts, plan).gpu_hours for facts in [*others, *untagged]]
    hours = sum(priced, Decimal(0)) if found else None
    said = OtherVersions(
        experiment, plan.fingerprint, len(others), len(versions), found, hours, len(untagged)
    )
    print(f"budget-gate: {said.note}", file=sys.stderr)
    return said


def _former_approvers(args: argparse.Namespace, records: list[LedgerRecord]) -> frozenset[str]:
    """Who the policies' git history lists as approvers, read only if a revocation is there.

    NOTE: judged by the current list alone, a revocation by an approver who has since left
    it stopped counting, and reconcile measured the runs against the approval it withdrew.
    """
    from gate.integrations.git.policy_history import approver_history

    history = approver_history(policy_home(args))
    if history is None or not any(r.kind is RecordKind.REVOCATION for r in records):
        return frozenset()
    return history()


def _plan(
    args: argparse.Namespace, evaluation: Evaluation, ledger: LedgerStore, now: dt.datetime
) -> Plan:
    """The spec's price and estimate, and its newest approval that no one revoked.

    An expired approval still counts: it is the amount agreed for runs that started; one
    from a source the policy's ``approval.sources`` leaves out does not.
    """
    spec, policy, result = evaluation.spec, evaluation.policy, evaluation.result
    assert spec is not None and policy is not None
    assert result.estimate is not None and result.fingerprint is not None
    records = ledger.query(LedgerQuery(fingerprint=result.fingerprint))
    counted = policy.approval.sources  # approval.sources: [github] ignores local ones here too
    revokers = (policy.approval.approvers, spec.metadata.owner)
    live = live_approvals(records, now, revokers, _former_approvers(args, records))
    approvals = [a for a in live if a.source.origin in counted]
    approval = max(approvals, key=lambda r: r.recorded_at) if approvals else None
    return Plan(
        spec=spec,
        fingerprint=result.fingerprint,
        quote=result.estimate.quote,
        estimate=result.estimate,
        monitor=monitor_for(spec, args.monitor, args.mode, args.min_delta, policy.returns),
        now=now,
        tolerance=to_decimal(policy.limits.reconcile_tolerance),
        approval=approval,
        requote=requote(spec, policy),
    )


def requote(spec: Experiment, policy: Policy) -> Callable[[str, Capacity], Quote | None]:
    """Prices for runs tagged with another accelerator or capacity (older spec versions)."""
    return quoter(policy, spec.resources.cloud or policy.prices.cloud)


def _try_record(
    args: argparse.Namespace,
    evaluation: Evaluation,
    ledger: LedgerStore,
    result: Reconciliation,
    now: dt.datetime,
) -> tuple[str | None, str | None, InputError | None]:
    """:func:`_record`, with a refusal (say, not CI's key) kept to raise after the report.

    The user who ran ``reconcile`` still wants the figures; nothing was recorded.
    """
    try:
        return (*_record(args, evaluation, ledger, result, now), None)
    except InputError as refused:
        return None, f"{REFUSED}{refused.message}", refused


def _record(
    args: argparse.Namespace,
    evaluation: Evaluation,
    ledger: LedgerStore,
    result: Reconciliation,
    now: dt.datetime,
) -> tuple[str | None, str | None]:
    """Append the reconciliation to the ledger, or say why not (dry run, nothing final)."""
    if args.dry_run:
        return None, "--dry-run"
    if not result.runs:
        return None, "no runs found"
    if result.running:
        return None, f"{result.running} run(s) still running; reconcile again once they end"
    # NOTE: a reconciliation releases what the launch committed; a run that has not started,
    # or whose end is before its start, cost nothing so far only as written: not final.
    scheduled = sum(1 for r in result.runs if r.status is RunStatus.SCHEDULED)
    if scheduled:
        return None, f"{scheduled} run(s) scheduled, not started; reconcile again once they end"
    open_ended = sum(1 for r in result.runs if r.start and r.end is None)
    if open_ended:
        return None, (
            f"{open_ended} run(s) have no end time before now (charged up to now); "
            "reconcile again once they end"
        )
    backwards = sum(1 for r in result.runs if r.start and r.end and r.end < r.start)
    if backwards:
        return None, (
            f"{backwards} run(s) end before they start, so what they held is not known; "
            "fix their times in MLflow, then reconcile again"
        )
    record = new_record(
        evaluation,
        RecordKind.RECONCILIATION,
        now,
        by="budget-gate reconcile",
        reason=None,
        pr_number=args.pr,
    )
    estimate = result.plan.estimate
    record = dataclasses.replace(
        record,
        actual_cost=result.cost,
        worst_cost=estimate.worst.cost,
        expected_cost=estimate.expected.cost,
    )
    return ledger.append(record, signer_for(None)), None


def _github(args: argparse.Namespace) -> GitHubClient | None:
    """The GitHub connection for --pr (none with --dry-run: nothing is written)."""
    if args.pr is None or args.dry_run:
        return None
    with needs_github("reconcile --pr"):
        from gate.integrations.github.client import GitHubClient

    return GitHubClient.from_env(os.environ)


def _comment(github: GitHubClient, number: int, report: ReconcileReport) -> None:
    from gate.reporters.reconcile_markdown import reconcile_marker, render

    marker = reconcile_marker(report.repository, report.file)
    url = github.upsert_comment(number, marker, render(report))
    print(f"budget-gate: wrote the reconciliation to {url}", file=sys.stderr)


def _renderer(name: str) -> Callable[[ReconcileReport], str]:
    render: Callable[[ReconcileReport], str] = importlib.import_module(FORMATS[name]).render
    return render
