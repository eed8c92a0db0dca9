"""``budget-gate calibrate``: learn epoch times, plateaus, failures and MFU from finished runs.

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
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gate.calibrate.backtest import replays
from gate.calibrate.learn import learn
from gate.calibrate.lookup import fold
from gate.calibrate.model import Calibration, Entry, Key, Stat, dump
from gate.calibrate.observe import Observation, observe
from gate.commands import backtest
from gate.commands.common import (
    default_ledger,
    load_policies,
    make_evaluator,
    quiet_mlflow,
    tracking_uri_of,
    utc_now,
)
from gate.commands.output import write_atomically
from gate.errors import InputError, one_line
from gate.estimate.prices import quoter
from gate.estimate.returns import threshold_for
from gate.estimate.settings import Returns
from gate.integrations import needs_mlflow
from gate.ledger import tracking
from gate.ledger.records import LEDGER_EXPERIMENT
from gate.policy.model import Policy
from gate.reconcile.actuals import RunFacts
from gate.spec.trial import Capacity
from gate.words import aligned, counted

Sink = Callable[[RunFacts, str], None]


def run(args: argparse.Namespace) -> int:
    """Read the runs, learn, print; write the file and backtest when asked."""
    now = utc_now()
    if args.write:
        _refuse_overwrite(Path(args.write))
    evaluator = make_evaluator(args, calibrated=False) if args.backtest else None
    policies = evaluator.policies if evaluator is not None else load_policies(args)
    policy = policies.for_team(None).policy
    costs = backtest.CostBacktest(evaluator, now) if evaluator is not None else None
    sink = costs.add if costs is not None else None
    prices = _RunPrices(policy)
    left = LeftOut()
    where, observations = _observations(args, prices, sink, left)
    if not observations:
        raise InputError(
            "no finished runs tagged by budget-gate to learn from",
            hint="tag training runs with gate.tracking.run_tags(spec) (docs/reconcile.md: what a "
            "launcher logs), or pass the right --tracking-uri / --experiment",
        )
    plateau_by = _plateau_by(policy.returns, policy.currency, prices.missing)
    calibration = learn(observations, now.date(), where, plateau_by, fold=fold)
    if args.write:
        write_atomically(args.write, dump(calibration))
        print(f"wrote {args.write}: commit it next to the policies", file=sys.stderr)
    min_runs = policy.calibration.min_runs
    scored = backtest.run_backtest(replays(observations), costs, min_runs) if costs else None
    if args.format == "json":
        document = {"calibration": json.loads(dump(calibration)), "left_out": vars(left)}
        if scored is not None:
            document["backtest"] = backtest.as_json(scored)
        print(json.dumps(document, indent=2, ensure_ascii=False))
        return 0
    print(render(calibration, min_runs, left.lines()))
    if scored is not None:
        print()
        print(backtest.render(scored))
    return 0


def _refuse_overwrite(path: Path) -> None:
    """Refuse to write over a file that is not a calibration (a policy, a spec).

    NOTE: ``--write policies/default.yaml`` replaced the policy with the calibration's JSON,
    and every command after it exited 3.
    """
    from gate.calibrate.model import parse
    from gate.errors import GateError
    from gate.spec.loader import load_file

    if not path.exists():
        return
    try:
        parse(load_file(path))
    except (GateError, OSError, ValueError):
        raise InputError(
            f"--write {path}: the file there is not a calibration; calibrate replaces only one",
            hint="write to a new file (policies/calibration.json), or move this one away",
        ) from None


def _observations(
    args: argparse.Namespace, price: _RunPrices, sink: Sink | None, left: LeftOut
) -> tuple[str, list[Observation]]:
    """Where the runs are (redacted) and every finished run's observation.

    ``sink``, when given, also sees every run as read, with its experiment's name; ``left``
    counts the runs left out, and those with no epoch time, by why.
    """
    uri = tracking_uri_of(args)
    quiet_mlflow()
    with needs_mlflow("calibrate"):
        from gate.integrations.mlflow.runs import MlflowRuns, RunQuery

        runs = MlflowRuns(uri, default=default_ledger(args))
    wanted = set(args.experiment or ())
    # NOTE: a deleted experiment or run is a team's curation of its calibration data, not
    # of its spend: the backtest (the sink) counts it, as reconcile does
    spend = sink is not None
    listed = [(e.experiment_id, e.name) for e in runs.experiments() if spend or not e.deleted]
    missing = wanted - {name for _, name in listed}
    if missing:
        raise InputError(
            f"MLflow at {runs.where} has no experiment {sorted(missing)[0]!r}",
            hint="check the name, or leave out --experiment to read every experiment",
        )
    found = []
    for experiment_id, name in listed:
        if (wanted and name not in wanted) or name == LEDGER_EXPERIMENT:  # records, not runs
            continue
        query = RunQuery(experiment_id, None, None, history_tag=tracking.MONITOR, deleted=True)
        for facts in runs.facts(query):
            if sink is not None and not facts.deleted_open:
                sink(facts, name)
            if facts.deleted:
                left.deleted += 1
                continue
            tags = facts.tags
            seen = observe(
                facts,
                name,
                price.policy.returns,
                price(tags.get(tracking.ACCELERATOR), tags.get(tracking.CAPACITY)),
            )
            left.see(facts, seen)
            if seen is not None:
                found.append(seen)
    return runs.where, found


@dataclass
class LeftOut:
    """Runs read and left out, and finished runs with no epoch time, by why (each once).

    NOTE: calibrate said "calibration of 8 runs" with epoch times of 6, and nothing of a
    running run, a deleted one, or the two whose monitored metric had no history.
    """

    running: int = 0
    deleted: int = 0
    no_monitor: int = 0
    never_logged: int = 0
    no_history: int = 0
    steps_over_max_epochs: int = 0

    def see(self, facts: RunFacts, seen: Observation | None) -> None:
        """Count ``facts`` if it is left out (``seen`` ``None``) or has no epoch time."""
        monitor = facts.tags.get(tracking.MONITOR)
        if seen is None:
            self.running += 1
        elif seen.steps_over_max:
            self.steps_over_max_epochs += 1
        elif seen.epoch_minutes is not None or facts.history:
            return
        elif not monitor:
            self.no_monitor += 1
        elif monitor not in facts.metrics:
            self.never_logged += 1
        else:
            self.no_history += 1

    def lines(self) -> list[str]:
        """One line per reason with runs, each saying what to do."""
        once = "log the monitored metric once per epoch, with step=epoch"
        tag = tracking.MONITOR
        said = [
            (self.running, "not finished (running, scheduled, or with no end time) left out"),
            (self.deleted, "deleted in MLflow left out (a team's curation): restore to learn"),
            (self.no_monitor, f"with no {tag} tag: no epoch time (tag with run_tags)"),
            (
                self.never_logged,
                f"whose {tag} tag names a metric never logged: no epoch time ({once})",
            ),
            (self.no_history, f"with no history of the monitored metric: no epoch time ({once})"),
            (
                self.steps_over_max_epochs,
                "with more steps of the monitored metric than max_epochs (steps are no epochs):"
                f" epoch time, plateau and failure point left out ({once})",
            ),
        ]
        return [f"{counted(n, 'run')} {text}" for n, text in said if n]


@dataclass
class _RunPrices:
    """The policy's price of a run's GPU-hour, for a return threshold per unit of cost.

    Accelerators it has no price for are kept in ``missing``, so the output can say that
    their runs' plateaus were found without the per-cost threshold.
    """

    policy: Policy
    missing: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._quote = quoter(self.policy, self.policy.prices.cloud)
        self._cache: dict[tuple[str, str], float | None] = {}

    def __call__(self, accelerator: str | None, capacity: str | None) -> float | None:
        """The price per GPU-hour, or ``None`` when the policy sets no per-cost threshold."""
        if self.policy.returns.min_gain_per_cost is None:
            return None
        key = (accelerator or "", capacity or Capacity.ON_DEMAND.value)
        if key not in self._cache:
            bought = Capacity(key[1]) if key[1] in {c.value for c in Capacity} else None
            found = self._quote(key[0], bought) if bought is not None else None
            self._cache[key] = None if found is None else float(found.per_gpu_hour)
            if found is None:
                self.missing.add(f"{key[0] or 'no accelerator'} {key[1]}")
        return self._cache[key]


def _plateau_by(returns: Returns, currency: str, unpriced: set[str]) -> str:
    """What the learned plateaus mean (the file records it), and any threshold left out."""
    accepted = threshold_for(returns, None).describe(currency)
    text = (
        f"marginal return: {accepted}, the window being each run's patience and its "
        "min_delta counting where larger (the default policy's returns)"
    )
    if unpriced:
        text += (
            f"; min_gain_per_cost left out for runs on {', '.join(sorted(unpriced))}: the "
            "policy has no price for them"
        )
    return text


def render(calibration: Calibration, min_runs: int, left: Sequence[str] = ()) -> str:
    """The calibration as a table, one row per key, finest keys first; ``left`` under it."""
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
    lines = [one_line(line) for line in lines]
    coarsest = [  # every run is in its model's coarsest entry once
        entry for entry in calibration.entries if entry.key == Key(model=entry.key.model)
    ]
    over = sum(entry.mfu_over_peak or 0 for entry in coarsest)
    left_out = sum(entry.left_out or 0 for entry in coarsest)
    if left_out:
        lines.append(
            f"{counted(left_out, 'measurement')} outside what a calibration holds (an epoch of "
            "0 s, a figure past 10^12) left out: check the runs' logged epochs and times"
        )
    if over:
        lines.append(
            f"{counted(over, 'run')} logged more FLOPs than the GPUs' dense peak allows in "
            "their time: their MFU is left out (check budget_gate.train_flops and the "
            "spec's workload.model)"
        )
    return "\n".join([*lines, *left])


def _row(entry: Entry) -> tuple[str, ...]:
    # NOTE: a key's parts are runs' tags (model, accelerator, precision): any text a job
    # logged, a terminal escape included, shown escaped (and aligned as shown)
    return (
        one_line(entry.key.describe()),
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
