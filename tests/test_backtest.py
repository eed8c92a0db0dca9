"""``budget-gate calibrate --backtest`` scores each experiment's cost through a real MLflow server.

Five versions of ``specs/sweep.yaml`` (resnet18 on L4 × 1 bf16) are committed one after
another in a real git repository, each run as many times as it has trials (the last run
of each fails at epoch 4): runs whose epoch times and held hours are known exactly. Before
each version runs, the test asks ``calibrate --write`` for the calibration of the runs so
far and ``estimate --calibration FILE --format json`` for the price of that version, and
``estimate`` without one for its declared price; the backtest, which finds the older
versions in git history, must report the MAPE, bias and coverage computed here from those
prices and the known costs. A sixth experiment's spec was never committed and is deleted:
it is scored on epoch time only, and the output says so.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from gate import tracking
from gate.money import fixed
from tests.reconcile_kit import Lab, log_run, ms
from tests.test_calibrate import SPEC, epoch_minutes  # the same spec and epoch times

LOSS = [1.0, 0.7, 0.5, 0.4, 0.35, 0.33, 0.33, 0.33, 0.33]  # plateaus at 6, stops after 9
SETUP_S = 120.0
SWEEP = "specs/sweep.yaml"


@dataclass(frozen=True)
class Version:
    """One spec version as run: its team, its prices then and what its runs cost."""

    team: str
    actual: Decimal
    declared: tuple[Decimal, Decimal]
    calibrated: tuple[Decimal, Decimal] | None


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def write(lab: Lab, path: str, declared: float, trials: int, team: str) -> None:
    text = SPEC.format(
        name=lab.experiment,
        team=team,
        declared=declared,
        trials=trials,
        plateau="",
        experiment=lab.experiment,
    )
    target = lab.team.root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def log_runs(lab: Lab, path: str, version: int, runs: int, first_hour: float) -> Decimal:
    """``runs`` runs of the spec at ``path``; the GPU-hours they held, as MLflow has them."""
    held = Decimal(0)
    for run in range(runs):
        failed = run == runs - 1
        epochs = 4 if failed else len(LOSS)
        train = epochs * epoch_minutes(version, run) * 60
        start, hours = first_hour + run, (SETUP_S + train) / 3600
        log_run(
            lab.client,
            lab.experiment_id,
            tags=tracking.run_tags(path, trial_id=run, attempt=1),
            start=start,
            hours=hours,
            status="FAILED" if failed else "FINISHED",
            metrics={tracking.TRAIN_SECONDS: train, tracking.SETUP_SECONDS: SETUP_S, "val_f1": 0.9},
            history={"val_loss": LOSS[:epochs]},
        )
        held += Decimal(ms(start + hours) - ms(start)) / 3_600_000
    return held


def prices(lab: Lab, *calibration: str) -> tuple[tuple[Decimal, Decimal], Decimal, bool]:
    """The sweep's (expected, worst) cost as ``estimate`` prints it, the price, measured?"""
    code, out, err = lab.team.cli("estimate", SWEEP, "--format", "json", *calibration, uri="")
    assert code == 0, err
    est = json.loads(out)["estimates"][0]["estimate"]
    price = Decimal(est["expected"]["drivers"]["price_per_gpu_hour"])
    notes = " ".join(est["expected"]["assumptions"])
    pair = (Decimal(est["expected"]["cost"]), Decimal(est["worst"]["cost"]))
    return pair, price, "median of" in notes


@pytest.fixture
def replayed(
    lab: Lab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Lab, list[Version]]:
    """Five committed versions run in turn, priced before each ran; a deleted sixth."""
    root = lab.team.root
    git(root, "init", "-q")
    monkeypatch.chdir(root)  # runs record the spec path relative to the repository root
    versions = []
    plans = zip((5, 6, 5, 6, 5), (2.5, 3.5, 2.75, 3.25, 3.0), strict=True)  # (trials, minutes)
    for number, (trials, declared_minutes) in enumerate(plans):
        team = lab.team.name if number % 2 == 0 else "vision"
        write(lab, SWEEP, declared_minutes, trials, team)
        git(root, "add", SWEEP)
        git(root, "commit", "-q", "-m", f"sweep v{number}")
        declared, price, _ = prices(lab)
        calibrated = None
        if number:  # the calibration of every run so far: the runs before this version
            target = str(tmp_path / f"calibration-{number}.json")
            code, _, err = lab.team.cli(
                "calibrate", "--experiment", lab.experiment, "--write", target
            )
            assert code == 0, err
            calibrated, _, measured = prices(lab, "--calibration", target)
            assert measured, "the estimate priced from the calibration"
        held = log_runs(lab, SWEEP, number, trials, first_hour=number * 24)
        versions.append(Version(team, held * price, declared, calibrated))
    write(lab, "specs/scratch.yaml", 3.0, 3, lab.team.name)  # never committed, then gone
    log_runs(lab, "specs/scratch.yaml", 9, 3, first_hour=5 * 24)
    (root / "specs/scratch.yaml").unlink()
    monkeypatch.chdir(root / "policies")  # the spec path now resolves from the git root
    return lab, versions


def accuracy(pairs: list[tuple[Decimal, tuple[Decimal, Decimal]]]) -> dict[str, Any]:
    errors = [float((expected - actual) / actual) for actual, (expected, _) in pairs]
    inside = [expected <= actual <= worst for actual, (expected, worst) in pairs]
    return {
        "cases": len(pairs),
        "mape": statistics.fmean(abs(e) for e in errors),
        "bias": statistics.fmean(errors),
        "coverage": sum(inside) / len(inside),
        "bounded": sum(actual <= worst for actual, (_, worst) in pairs) / len(pairs),
    }


def expected_scores(versions: list[Version]) -> dict[str, Any]:
    scored = [v for v in versions if v.calibrated is not None]
    return {
        "calibrated": accuracy([(v.actual, v.calibrated) for v in scored if v.calibrated]),
        "declared": accuracy([(v.actual, v.declared) for v in scored]),
    }


def assert_scores(found: dict[str, Any], wanted: dict[str, Any], versions: list[Version]) -> None:
    """Equal, up to the half cent ``estimate`` rounds each price to (÷ the smallest cost)."""
    rounding = 0.005 / float(min(v.actual for v in versions))
    for estimator in ("calibrated", "declared"):
        got, want = found[estimator], wanted[estimator]
        assert (got["cases"], got["coverage"], got["bounded"]) == (
            want["cases"],
            want["coverage"],
            want["bounded"],
        )
        for figure in ("mape", "bias"):
            assert got[figure] == pytest.approx(want[figure], abs=rounding), (estimator, figure)


def test_backtest_scores_each_experiments_cost_against_its_price_then(replayed):
    lab, versions = replayed
    started = time.monotonic()
    code, out, err = lab.team.cli("calibrate", "--experiment", lab.experiment, "--backtest")
    took = time.monotonic() - started
    assert code == 0, err
    code, doc, err = lab.team.cli(
        "calibrate", "--experiment", lab.experiment, "--backtest", "--format", "json"
    )
    assert code == 0, err
    document = json.loads(doc)
    assert document["calibration"]["kind"] == "Calibration"
    assert document["calibration"]["runs"] == 30
    backtest = document["backtest"]
    assert backtest["experiments"] == 6
    assert backtest["epoch_time_only"] == {"no_spec": 1}
    cases = backtest["cost"]["cases"]
    assert len(cases) == 5  # every committed version, the old ones found in git history
    assert all("@" in case["spec"] for case in cases[:-1])  # read from git history
    assert cases[-1]["spec"] == str(lab.team.root / SWEEP)  # the version on disk
    for case, version in zip(cases, versions, strict=True):
        assert Decimal(case["actual"]) == pytest.approx(version.actual, abs=Decimal("1e-9"))
        assert _cents(case["declared"]) == version.declared
        assert (_cents(case["calibrated"]) if case["calibrated"] else None) == version.calibrated
    overall = expected_scores(versions)
    assert_scores(backtest["cost"]["overall"], overall, versions)
    assert backtest["cost"]["overall"]["not_calibrated"] == 1  # the first version
    for team in {v.team for v in versions}:
        own = [v for v in versions if v.team == team]
        assert_scores(backtest["cost"]["teams"][team], expected_scores(own), own)
    # the text: the headline, the cost table first, what was left out said
    assert "1 experiment scored on epoch time only: no spec at its fingerprint" in out
    assert out.index("\ncost:") < out.index("\nepoch time:")
    row = _row(overall["calibrated"])
    assert f"overall              calibrated  {row}" in out, out
    assert f"                     declared    {_row(overall['declared'])}" in out
    assert "team vision" in out
    epoch = backtest["epoch_time"]["overall"]
    assert epoch["calibrated"]["cases"] == 5 and epoch["not_calibrated"] == 1  # scratch counts
    print("backtest:" + out.split("backtest:", 1)[1])  # the figures for the closing note (-s)
    print(f"calibrate --backtest took {took:.2f} s: 30 runs, 6 experiments")


def test_the_actual_cost_is_what_reconcile_charges(replayed):
    lab, _ = replayed
    _, doc, err = lab.team.cli(
        "calibrate", "--experiment", lab.experiment, "--backtest", "--format", "json"
    )
    newest = json.loads(doc)["backtest"]["cost"]["cases"][-1]
    _, report = lab.json("--dry-run", spec=str(lab.team.root / SWEEP))
    # reconcile's JSON writes money to the cent (as check's); the backtest its exact figure
    assert report["totals"]["cost"] == str(fixed(Decimal(newest["actual"]), 2)), err


def test_a_deleted_run_leaves_the_calibration_but_not_the_backtests_actual_cost(replayed):
    """Deleting a run is curation of the calibration's data, not of the spend: the backtest's
    actual cost dropped by the deleted run's, off reconcile's, which counts it."""
    lab, _ = replayed

    def backtest() -> dict[str, Any]:
        code, doc, err = lab.team.cli(
            "calibrate", "--experiment", lab.experiment, "--backtest", "--format", "json"
        )
        assert code == 0, err
        return json.loads(doc)

    before = backtest()
    [latest] = lab.client.search_runs(
        [lab.experiment_id],
        f"tags.`{tracking.SPEC}` = '{SWEEP}'",
        order_by=["start_time DESC"],
        max_results=1,
    )  # a run of the newest version
    lab.client.delete_run(latest.info.run_id)
    after = backtest()
    assert after["calibration"]["runs"] == before["calibration"]["runs"] - 1
    newest = after["backtest"]["cost"]["cases"][-1]
    assert newest["actual"] == before["backtest"]["cost"]["cases"][-1]["actual"]
    _, report = lab.json("--dry-run", spec=str(lab.team.root / SWEEP))
    assert report["totals"]["cost"] == str(fixed(Decimal(newest["actual"]), 2))


def test_reconcile_says_what_the_estimate_was_priced_from(replayed, tmp_path):
    lab, _ = replayed
    sweep = str(lab.team.root / SWEEP)
    _, out, err = lab.reconcile("--dry-run", spec=sweep)
    assert (
        "cost variance: the estimate priced each epoch from the spec's declared epoch time " in out
    ), out + err
    target = str(tmp_path / "calibration.json")
    assert lab.team.cli("calibrate", "--experiment", lab.experiment, "--write", target)[0] == 0
    _, out, err = lab.reconcile("--dry-run", "--calibration", target, spec=sweep)
    assert (
        "cost variance: the estimate priced each epoch from the measured calibration of 30 runs "
        "of resnet18 on L4 × 1 bf16, 2026-11-02 … 11-07; its plateau and failure rate measured too"
    ) in out, out + err


def test_backtest_bad_input_is_exit_3(replayed):
    lab, _ = replayed
    code, out, err = lab.team.cli("calibrate", "--experiment", "no-such-experiment", "--backtest")
    assert code == 3 and not out
    assert "has no experiment 'no-such-experiment'" in err and "Traceback" not in err


def _cents(pair: dict[str, str]) -> tuple[Decimal, Decimal]:
    cent = Decimal("0.01")
    return Decimal(pair["expected"]).quantize(cent), Decimal(pair["worst"]).quantize(cent)


def _row(figures: dict[str, Any]) -> str:
    return (
        f"{figures['cases']:>5} {figures['mape']:>8.1%} {figures['bias']:>+8.1%} "
        f"{figures['coverage']:>9.0%} {figures['bounded']:>8.0%}"
    )


def test_experiments_still_running_or_without_a_spec_are_scored_on_epoch_time_only(replayed):
    lab, _ = replayed
    tags = tracking.run_tags(str(lab.team.root / SWEEP), trial_id=99, attempt=1)
    log_run(lab.client, lab.experiment_id, tags=tags, start=4 * 24 + 10, hours=None)
    # a launcher's tag no file system can hold: a spec not found, not a crash
    odd = {**tags, tracking.SPEC: "x" * 300 + "/s.yaml", tracking.FINGERPRINT: "sha256:odd"}
    log_run(lab.client, lab.experiment_id, tags=odd, start=6 * 24, history={"val_loss": [1.0]})
    code, out, err = lab.team.cli("calibrate", "--experiment", lab.experiment, "--backtest")
    assert code == 0, err
    assert "1 experiment scored on epoch time only: its runs are still running" in out
    assert "2 experiments scored on epoch time only: no spec at their fingerprint" in out


def test_scores_count_the_ends_of_the_range_as_inside_and_skip_a_zero_cost():
    from gate.calibrate.backtest import CostCase, by_team, score

    def case(team: str, actual: str, calibrated: tuple[str, str] | None) -> CostCase:
        pair = (Decimal(calibrated[0]), Decimal(calibrated[1])) if calibrated else None
        declared = (Decimal(actual) / 2, Decimal(actual) / 2)
        return CostCase("e", "sha256:x", "s.yaml", team, Decimal(actual), pair, declared)

    found = [
        case("a", "100", ("90", "100")),  # −10 %, the actual at the worst end: inside
        case("a", "50", ("60", "80")),  # +20 %, below the range: outside
        case("b", "0", ("1", "2")),  # nothing spent: no error to take
        case("b", "10", None),  # not calibrated
    ]
    overall = score(found)
    assert overall.calibrated is not None and overall.declared is not None
    assert (overall.calibrated.cases, overall.uncalibrated) == (2, 1)
    assert overall.calibrated.mape == pytest.approx(0.15)
    assert overall.calibrated.bias == pytest.approx(0.05)
    assert overall.calibrated.coverage == 0.5
    assert overall.calibrated.bounded == 1.0  # 100 at the worst 100, 50 under 80
    assert overall.declared.bias == pytest.approx(-0.5) and overall.declared.coverage == 0
    assert overall.declared.bounded == 0
    teams = by_team(found)
    assert teams["b"].calibrated is None and teams["b"].uncalibrated == 1


def test_an_absurd_estimate_keeps_the_scores_finite():
    """A hand-made ledger record's 1E+400 made the error infinite: JSON's ``Infinity``, no
    JSON at all; two near 1e308 overflowed the mean (exit 70)."""
    import math

    from gate.calibrate.backtest import MOST_ERROR, accuracy

    one = Decimal(1)
    found = accuracy([(one, (Decimal("1E+400"), Decimal("1E+400")))])
    assert found is not None and (found.mape, found.bias) == (MOST_ERROR, MOST_ERROR)
    near = accuracy([(one, (Decimal("1e308"), Decimal("1e308")))] * 2)
    assert near is not None and math.isfinite(near.mape) and near.mape == MOST_ERROR
    sane = accuracy([(Decimal(100), (Decimal(125), Decimal(150)))])
    assert sane is not None and sane.mape == 0.25  # untouched below the cap
    json.dumps(found.mape, allow_nan=False)
