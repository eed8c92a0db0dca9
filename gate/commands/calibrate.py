"""``budget-gate calibrate``: learn epoch times, plateaus and failures from finished runs.

Reads every run tagged by budget-gate in every active MLflow experiment (or the ones
named with ``--experiment``) through the reconcile reader, learns per model label,
accelerator, GPUs per trial and precision (:mod:`gate.calibrate`), prints what it learned
and, with ``--write``, writes the calibration file the team commits next to its policies.
``--backtest`` replays the history in time order and prints how accurate calibrated
epoch times were against the declared ones. Exit 0, 3 bad input, 4 MLflow failed.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path

from gate.calibrate.backtest import Accuracy, Scores, by_team, cases, score
from gate.calibrate.learn import learn
from gate.calibrate.model import Calibration, Entry, Key, Stat, dump
from gate.calibrate.observe import Observation, observe
from gate.commands.common import load_policies, quiet_mlflow, utc_now
from gate.errors import InputError
from gate.estimate.prices import load_catalog, quote
from gate.estimate.settings import Returns
from gate.integrations import needs_mlflow
from gate.integrations.tracking_uri import resolve_tracking_uri
from gate.ledger import tracking
from gate.policy.model import Policy
from gate.spec.experiment import Capacity
from gate.words import aligned, counted


def run(args: argparse.Namespace) -> int:
    """Read the runs, learn, print; write the file and backtest when asked."""
    policy = load_policies(args).for_team(None).policy
    returns = policy.returns
    where, observations = _observations(args, policy)
    if not observations:
        raise InputError(
            "no finished runs tagged by budget-gate to learn from",
            hint="tag training runs with gate.tracking.run_tags(spec) (see README, "
            "'Calibration'), or pass the right --tracking-uri / --experiment",
        )
    plateau_by = _plateau_by(returns, policy.currency)
    calibration = learn(observations, utc_now().date(), where, plateau_by)
    print(render(calibration, policy.calibration.min_runs))
    if args.write:
        Path(args.write).write_text(dump(calibration), encoding="utf-8")
        print(f"wrote {args.write}: commit it next to the policies", file=sys.stderr)
    if args.backtest:
        print()
        print(render_backtest(observations, policy.calibration.min_runs))
    return 0


def _observations(args: argparse.Namespace, policy: Policy) -> tuple[str, list[Observation]]:
    """Where the runs are (redacted) and every finished run's observation."""
    price = _price_per_gpu_hour(policy)
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
            tags = facts.tags
            seen = observe(
                facts,
                name,
                policy.returns,
                price(tags.get(tracking.ACCELERATOR), tags.get(tracking.CAPACITY)),
            )
            if seen is not None:
                found.append(seen)
    return runs.where, found


def _price_per_gpu_hour(policy: Policy) -> Callable[[str | None, str | None], float | None]:
    """The policy's price of a run's GPU-hour, for a return threshold per unit of cost."""
    if policy.returns.min_gain_per_cost is None:
        return lambda accelerator, capacity: None
    catalog = load_catalog()

    @functools.cache
    def price(accelerator: str | None, capacity: str | None) -> float | None:
        try:
            bought = Capacity(capacity or Capacity.ON_DEMAND.value)
            found = quote(catalog, policy, accelerator or "", bought, policy.prices.cloud)
        except (InputError, ValueError):
            return None
        return float(found.per_gpu_hour)

    return price


def _plateau_by(returns: Returns, currency: str) -> str:
    """What the learned plateaus mean: the accepted return, as the file records it."""
    parts = [f"{returns.min_relative_gain * 100:g} % of the metric's value"]
    if returns.min_gain_per_gpu_hour is not None:
        parts.append(f"{returns.min_gain_per_gpu_hour:g} per GPU-hour")
    if returns.min_gain_per_cost is not None:
        parts.append(f"{returns.min_gain_per_cost:g} per {currency}")
    return (
        f"marginal return: {' and '.join(parts)} per patience window (each run's patience, "
        f"else {returns.patience_epochs} epochs, and its min_delta where larger; the default "
        "policy's returns)"
    )


def render(calibration: Calibration, min_runs: int) -> str:
    """The calibration as a table, one row per key, finest keys first."""
    experiments = counted(len(calibration.experiments), "MLflow experiment")
    header = (
        "key",
        "runs",
        "epoch min p10 / median / p90",
        "setup min",
        "plateau",
        "MFU",
        "failed",
        "retries",
        "preempted",
    )
    lines = [
        f"calibration of {counted(calibration.runs, 'run')} from {experiments} "
        f"({', '.join(calibration.experiments)}), {calibration.created}",
        f"keys with at least {counted(min_runs, 'run')} price estimates; plateau by "
        f"{calibration.plateau_by or 'marginal return'}",
        "",
        *aligned([header, *(_row(entry) for entry in calibration.entries)], left=(0, 2)),
    ]
    over = sum(  # every run is in its model's coarsest entry once
        entry.mfu_over_peak or 0
        for entry in calibration.entries
        if entry.key == Key(model=entry.key.model)
    )
    if over:
        lines.append(
            f"{counted(over, 'run')} logged more FLOPs than the GPUs' dense peak allows in "
            "their time: their MFU is left out (check budget_gate.train_flops and the "
            "spec's workload.model)"
        )
    return "\n".join(lines)


def _row(entry: Entry) -> tuple[str, ...]:
    return (
        entry.key.describe(),
        str(entry.runs),
        _stat(entry.epoch_minutes),
        _median(entry.setup_minutes),
        _share(entry.plateau_fraction),
        _mfu(entry.mfu),
        f"{entry.failure_rate or 0:.0%}",
        str(entry.retries),
        str(entry.preemptions),
    )


def _mfu(stat: Stat | None) -> str:
    return "—" if stat is None else f"{stat.median:.2f}"


def _stat(stat: Stat | None) -> str:
    if stat is None:
        return "—"
    return f"{stat.p10:.3g} / {stat.median:.3g} / {stat.p90:.3g} ({stat.runs})"


def _median(stat: Stat | None) -> str:
    return "—" if stat is None else f"{stat.median:.3g}"


def _share(stat: Stat | None) -> str:
    return "—" if stat is None else f"{stat.median:.0%}"


def render_backtest(observations: list[Observation], min_runs: int) -> str:
    """MAPE, bias and coverage, calibrated against declared, overall and per team."""
    found = cases(observations, min_runs)
    overall = score(found)
    lines = [
        f"backtest: {len(found)} experiments in time order, each estimated from the runs "
        f"before it ({overall.uncalibrated} had fewer than {min_runs} earlier runs of "
        "their key)",
        "epoch time, (estimate − actual) ÷ actual; coverage: actual within expected–worst",
        "",
        f"{'':<20} {'estimator':<11} {'cases':>5} {'MAPE':>8} {'bias':>8} {'coverage':>9}",
        *_score_rows("overall", overall),
    ]
    for team, scores in by_team(found).items():
        lines.extend(_score_rows(f"team {team}", scores))
    return "\n".join(lines)


def _score_rows(label: str, scores: Scores) -> list[str]:
    rows = []
    for name, accuracy in (("calibrated", scores.calibrated), ("declared", scores.declared)):
        rows.append(f"{label:<20} {name:<11} {_accuracy(accuracy)}")
        label = ""
    return rows


def _accuracy(accuracy: Accuracy | None) -> str:
    if accuracy is None:
        return f"{0:>5} {'—':>8} {'—':>8} {'—':>9}"
    return (
        f"{accuracy.cases:>5} {accuracy.mape:>8.1%} {accuracy.bias:>+8.1%} "
        f"{accuracy.coverage:>9.0%}"
    )
