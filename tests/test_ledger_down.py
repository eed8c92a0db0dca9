"""Every enforcement path refuses within 10 s of the ledger going down, whatever MLflow's settings.

``verify`` and ``check``'s budget read run as fresh CLI processes (start-up included in the
time); ``gate.require_approval`` and ``gate.open_guard`` are called in this process. Each
faces the three outages of :mod:`tests.ledger_down` — a real server stopped, a port nothing
listens on, a server that never answers — with MLflow's own retry defaults in the
environment. The SkyPilot class and ``serve skypilot-policy`` are timed the same way in
``tests/skypilot_cases.py``. Each measured time is printed (``LEDGER-DOWN`` lines).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import gate
from gate.errors import BackendError, InputError
from tests.conftest import ROOT
from tests.ledger_down import LIMIT_S, MLFLOW_DEFAULTS, OUTAGES, ledger_down
from tests.ledger_kit import Team
from tests.mlflow_server import CLIENT_ENV, MlflowServer

BUDGET = ", monthly_budget: 5000"


@pytest.fixture(scope="module")
def stopped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    """A real tracking server of this module's own, to be stopped by the first test using it."""
    server = MlflowServer(tmp_path_factory.mktemp("stopped")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def team(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Team:
    """A team whose policy has a monthly budget and an approval trigger (4 trials)."""
    team = Team(tmp_path, "", capsys)
    team.policy(limits=BUDGET)
    return team


@pytest.fixture
def mlflow_defaults(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """MLflow's own retry defaults in this process and its children (none set to 0)."""
    for key in CLIENT_ENV:
        if key.startswith("MLFLOW_HTTP_REQUEST"):
            monkeypatch.delenv(key, raising=False)
    for key, value in MLFLOW_DEFAULTS.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("BUDGET_GATE_LEDGER_TIMEOUT", raising=False)
    return {k: v for k, v in os.environ.items() if not k.startswith("BUDGET_GATE_")}


def _report(capsys: pytest.CaptureFixture[str], path: str, outage: str, seconds: float) -> None:
    with capsys.disabled():  # the measured time, shown in every run of the suite
        print(f"\nLEDGER-DOWN {path} ({outage}): refused in {seconds:.2f} s")


def _cli(env: dict[str, str], *argv: str) -> tuple[subprocess.CompletedProcess[str], float]:
    began = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "gate", *argv],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return proc, time.monotonic() - began


@pytest.mark.parametrize("outage", OUTAGES)
@pytest.mark.parametrize(
    ("command", "trials", "doing"),
    [
        ("verify", 8, "finding the ledger experiment"),  # needs an approval and the budget
        ("check", 2, "finding the ledger experiment"),  # no approval needed: the budget read
    ],
)
def test_the_cli_refuses_within_10_s(
    team, stopped, mlflow_defaults, capsys, outage, command, trials, doing
):
    spec = team.spec(trials)
    with ledger_down(outage, stopped) as uri:
        proc, took = _cli(
            mlflow_defaults, command, "--policy-dir", team.policy_dir, "--tracking-uri", uri, spec
        )
    _report(capsys, f"budget-gate {command}", outage, took)
    assert proc.returncode == 4, proc.stderr
    assert took < LIMIT_S
    assert proc.stderr.startswith(f"budget-gate: MLflow at {uri} failed while {doing}: ")
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    if outage == "blackhole":
        assert proc.stderr.endswith("no answer within 5 s (set by BUDGET_GATE_LEDGER_TIMEOUT)\n")
    else:
        assert proc.stderr.endswith("connection refused — is the tracking server running?\n")


@pytest.mark.parametrize("outage", OUTAGES)
@pytest.mark.parametrize("entry", ["require_approval", "open_guard"])
def test_the_launch_api_refuses_within_10_s(team, stopped, mlflow_defaults, capsys, outage, entry):
    spec = team.spec(8)
    call = getattr(gate, entry)
    with ledger_down(outage, stopped) as uri:
        began = time.monotonic()
        with pytest.raises(BackendError) as raised:
            call(spec, policy_dir=team.policy_dir, tracking_uri=uri)
        took = time.monotonic() - began
    _report(capsys, f"gate.{entry}", outage, took)
    assert took < LIMIT_S
    assert str(raised.value).startswith(f"MLflow at {uri} failed while finding the ledger")


def test_the_one_setting_bounds_the_wait(team, mlflow_defaults, monkeypatch):
    spec = team.spec(8)
    monkeypatch.setenv("BUDGET_GATE_LEDGER_TIMEOUT", "1.5")
    with ledger_down("blackhole") as uri:
        began = time.monotonic()
        with pytest.raises(BackendError, match=r"no answer within 1\.5 s \(set by BUDGET_GATE"):
            gate.require_approval(spec, policy_dir=team.policy_dir, tracking_uri=uri)
    assert 1.4 < time.monotonic() - began < 3.0


@pytest.mark.parametrize("value", ["abc", "0", "-1", "nan", "inf", "1e9", "5s"])
def test_a_malformed_setting_is_one_line(team, mlflow_defaults, value):
    env = {**mlflow_defaults, "BUDGET_GATE_LEDGER_TIMEOUT": value}
    with ledger_down("refused") as uri:
        proc, _ = _cli(env, "verify", "--policy-dir", team.policy_dir, "--tracking-uri", uri,
                       team.spec(8))  # fmt: skip
    assert proc.returncode == 3
    assert proc.stderr.startswith(f"budget-gate: BUDGET_GATE_LEDGER_TIMEOUT is {value!r}, not ")
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_a_malformed_setting_is_an_input_error_for_the_launch_api(team, monkeypatch):
    monkeypatch.setenv("BUDGET_GATE_LEDGER_TIMEOUT", "soon")
    with ledger_down("refused") as uri, pytest.raises(InputError, match="LEDGER_TIMEOUT is 'soon'"):
        gate.require_approval(team.spec(8), policy_dir=team.policy_dir, tracking_uri=uri)
