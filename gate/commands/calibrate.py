"""``budget-gate calibrate``: learn epoch times, plateaus and failures from finished runs.

Reads every run tagged by budget-gate in every active MLflow experiment (or the ones
named with ``--experiment``) through the reconcile reader, learns per model label,
accelerator, GPUs per trial and precision (:mod:`gate.calibrate`), prints what it learned
and, with ``--write``, writes the calibration file the team commits next to its policies.
``--backtest`` replays the history in time order and prints how accurate the calibrated
cost and epoch-time estimates were against the declared ones (:mod:`gate.commands.backtest`);
``--format json`` prints the calibration and the backtest as objects. Exit 0, 3 bad input,
4 MLflow failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from gate.calibrate.backtest import replays
from gate.calibrate.learn import learn
from gate.calibrate.model import Calibration, Entry, Stat, dump
from gate.calibrate.observe import Observation, observe
from gate.commands import backtest
from gate.commands.common import make_evaluator, quiet_mlflow, utc_now
from gate.errors import InputError
from gate.integrations import needs_mlflow
from gate.integrations.tracking_uri import resolve_tracking_uri
from gate.ledger import tracking
from gate.policy.loader import PolicySet
from gate.reconcile.actuals import RunFacts

Sink = Callable[[RunFacts, str], None]


def run(args: argparse.Namespace) -> int:
    """Read the runs, learn, print; write the file and backtest when asked."""
    policy = PolicySet(args.policy_dir).for_team(None).policy
    returns = policy.returns
    now = utc_now()
    costs = backtest.CostBacktest(make_evaluator(args), now) if args.backtest else None
    sink = costs.add if costs is not None else None
    where, observations = _observations(args, returns.min_relative_gain, sink)
    if not observations:
        raise InputError(
            "no finished runs tagged by budget-gate to learn from",
            hint="tag training runs with gate.tracking.run_tags(spec) (see README, "
            "'Calibration'), or pass the right --tracking-uri / --experiment",
        )
    plateau_by = (
        f"marginal return: {returns.min_relative_gain * 100:g} % of the metric's value "
        "per patience window (default policy's returns)"
    )
    calibration = learn(observations, now.date(), where, plateau_by)
    if args.write:
        Path(args.write).write_text(dump(calibration), encoding="utf-8")
        print(f"wrote {args.write}: commit it next to the policies", file=sys.stderr)
    min_runs = policy.calibration.min_runs
    scored = backtest.run_backtest(replays(observations), costs, min_runs) if costs else None
    if args.format == "json":
        document = {"calibration": json.loads(dump(calibration))}
        if scored is not None:
            document["backtest"] = backtest.as_json(scored)
        print(json.dumps(document, indent=2, ensure_ascii=False))
        return 0
    print(render(calibration, min_runs))
    if scored is not None:
        print()
        print(backtest.render(scored))
    return 0


def _observations(
    args: argparse.Namespace, relative_gain: float, sink: Sink | None = None
) -> tuple[str, list[Observation]]:
    """Where the runs are (redacted) and every finished run's observation.

    ``sink``, when given, also sees every run as read, with its experiment's name.
    """
    uri = resolve_tracking_uri(args.tracking_uri, os.environ)
    quiet_mlflow()
    with needs_mlflow("calibrate"):
        from gate.integrations.mlflow_runs import MlflowRuns, RunQuery

        runs = MlflowRuns(uri)
    wanted = set(args.experiment or ())
    listed = runs.experiments()
    missing = wanted - {name for _, name in listed}
    if missing:
        raise InputError(
            f"MLflow at {runs.where} has no experiment {sorted(missing)[0]!r}",
            hint="check the name, or leave out --experiment to read every experiment",
        )
    found = []
    for experiment_id, name in listed:
        if wanted and name not in wanted:
            continue
        query = RunQuery(experiment_id, None, None, history_tag=tracking.MONITOR)
        for facts in runs.facts(query):
            if sink is not None:
                sink(facts, name)
            seen = observe(facts, name, relative_gain)
            if seen is not None:
                found.append(seen)
    return runs.where, found


def render(calibration: Calibration, min_runs: int) -> str:
    """The calibration as a table, one row per key, finest keys first."""
    lines = [
        f"calibration of {calibration.runs} runs from {len(calibration.experiments)} MLflow "
        f"experiments ({', '.join(calibration.experiments)}), {calibration.created}",
        f"keys with at least {min_runs} runs price estimates; plateau by "
        f"{calibration.plateau_by or 'marginal return'}",
        "",
        f"{'key':<44} {'runs':>5}  {'epoch min p10/median/p90':<26} {'setup min':>9}  "
        f"{'plateau':>7}  {'failed':>6}  retries  preempted",
    ]
    lines.extend(_row(entry) for entry in calibration.entries)
    return "\n".join(lines)


def _row(entry: Entry) -> str:
    return (
        f"{entry.key.describe():<44} {entry.runs:>5}  {_stat(entry.epoch_minutes):<26} "
        f"{_median(entry.setup_minutes):>9}  {_share(entry.plateau_fraction):>7}  "
        f"{entry.failure_rate or 0:>6.0%}  {entry.retries:>7}  {entry.preemptions:>9}"
    )


def _stat(stat: Stat | None) -> str:
    if stat is None:
        return "—"
    return f"{stat.p10:.3g} / {stat.median:.3g} / {stat.p90:.3g} ({stat.runs})"


def _median(stat: Stat | None) -> str:
    return "—" if stat is None else f"{stat.median:.3g}"


def _share(stat: Stat | None) -> str:
    return "—" if stat is None else f"{stat.median:.0%}"
