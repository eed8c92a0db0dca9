"""Every enforcement path refuses within 10 s of the ledger going down, whatever MLflow's settings.

``verify`` and ``check``'s budget read run as fresh CLI processes (start-up included in the
time); ``gate.require_approval`` and ``gate.open_guard`` are called in this process. Each
faces the three outages of :mod:`tests.ledger_down` — a real server stopped, a port nothing
listens on, a server that never answers — with MLflow's own retry defaults in the
environment. The SkyPilot class and ``serve skypilot-policy`` are timed the same way in
``tests/skypilot_cases.py``. Each measured time is printed (``LEDGER-DOWN`` lines).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest

import gate
from gate.cli import main
from gate.errors import BackendError, InputError
from gate.guard.ledger import LedgerCeiling
from gate.guard.limits import Ceiling
from gate.ledger.signing import Trust
from tests.conftest import ROOT
from tests.ledger_down import LIMIT_S, MLFLOW_DEFAULTS, OUTAGES, garbage, ledger_down
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
    return _mlflow_defaults(monkeypatch)


def _mlflow_defaults(patch: pytest.MonkeyPatch) -> dict[str, str]:
    for key in CLIENT_ENV:
        if key.startswith("MLFLOW_HTTP_REQUEST"):
            patch.delenv(key, raising=False)
    for key, value in MLFLOW_DEFAULTS.items():
        patch.setenv(key, value)
    patch.delenv("BUDGET_GATE_LEDGER_TIMEOUT", raising=False)
    return {k: v for k, v in os.environ.items() if not k.startswith("BUDGET_GATE_")}


@dataclass(frozen=True)
class Silence:
    """What every path did against one ledger that never answers (``uri``), all at once."""

    uri: str
    cli: dict[str, tuple[subprocess.CompletedProcess[str], float]]
    api: dict[str, tuple[BaseException | None, float]]


@pytest.fixture(scope="module")
def silence(tmp_path_factory: pytest.TempPathFactory) -> Silence:
    """The four paths against one blackhole at once, under MLflow's defaults.

    NOTE: only the timeout ends a call to a silent server, so each path waits out the
    default 5 s: in turn, the four took 20 s of the suite; side by side, 5. Each is still
    timed on its own, the CLI's from its process start.
    """
    team = Team(tmp_path_factory.mktemp("silence"), "", None)  # type: ignore[arg-type]
    team.policy(limits=BUDGET)
    argv = ("--policy-dir", team.policy_dir, "--tracking-uri")
    with pytest.MonkeyPatch.context() as patch, ledger_down("blackhole") as uri:
        env = _mlflow_defaults(patch)
        with ThreadPoolExecutor(max_workers=4) as pool:
            cli = {
                command: pool.submit(_cli, env, command, *argv, uri, team.spec(trials))
                for command, trials, _ in CLI_CASES
            }
            api = {entry: pool.submit(_call, entry, team, uri) for entry in ENTRIES}
            ran = {k: f.result() for k, f in cli.items()}
            return Silence(uri, ran, {k: f.result() for k, f in api.items()})


def _call(entry: str, team: Team, uri: str) -> tuple[BaseException | None, float]:
    began = time.monotonic()
    try:
        getattr(gate, entry)(team.spec(8), policy_dir=team.policy_dir, tracking_uri=uri)
    except BackendError as exc:
        return exc, time.monotonic() - began
    return None, time.monotonic() - began


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


CLI_CASES = [
    ("verify", 8, "finding the ledger experiment"),  # needs an approval and the budget
    ("check", 2, "finding the ledger experiment"),  # no approval needed: the budget read
]
ENTRIES = ["require_approval", "open_guard"]


@pytest.mark.parametrize("outage", OUTAGES)  # the blackhole: the paths at once (silence)
@pytest.mark.parametrize(("command", "trials", "doing"), CLI_CASES)
def test_the_cli_refuses_within_10_s(
    team, stopped, mlflow_defaults, request, capsys, outage, command, trials, doing
):
    if outage == "blackhole":
        silent: Silence = request.getfixturevalue("silence")
        uri, (proc, took) = silent.uri, silent.cli[command]
    else:
        with ledger_down(outage, stopped) as uri:
            argv = ("--policy-dir", team.policy_dir, "--tracking-uri", uri, team.spec(trials))
            proc, took = _cli(mlflow_defaults, command, *argv)
    _report(capsys, f"budget-gate {command}", outage, took)
    assert proc.returncode == 4, proc.stderr
    assert took < LIMIT_S
    assert proc.stderr.startswith(f"budget-gate: MLflow at {uri} failed while {doing}: ")
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    if outage == "blackhole":
        assert proc.stderr.endswith("no answer within 5 s (set by BUDGET_GATE_LEDGER_TIMEOUT)\n")
    else:
        assert proc.stderr.endswith("connection refused — is the tracking server running?\n")


@pytest.mark.parametrize("outage", OUTAGES)  # the blackhole: the paths at once (silence)
@pytest.mark.parametrize("entry", ENTRIES)
def test_the_launch_api_refuses_within_10_s(
    team, stopped, mlflow_defaults, request, capsys, outage, entry
):
    if outage == "blackhole":
        silent: Silence = request.getfixturevalue("silence")
        uri, (raised, took) = silent.uri, silent.api[entry]
    else:
        with ledger_down(outage, stopped) as uri:
            raised, took = _call(entry, team, uri)
    _report(capsys, f"gate.{entry}", outage, took)
    assert took < LIMIT_S
    assert isinstance(raised, BackendError)
    assert str(raised).startswith(f"MLflow at {uri} failed while finding the ledger")


GARBAGE = [
    b"[]",
    b'"x"',
    b"<html>502 Bad Gateway</html>",
    b'{"experiment": []}',
    b'{"experiment": {"experiment_id": "1", "lifecycle_stage": "active"}, "runs": [{"info": 3}]}',
]


@pytest.mark.parametrize("body", GARBAGE)
def test_answers_that_are_not_mlflows_are_a_backend_error(team, body):
    """A server up but answering nonsense is an outage (exit 4, one line), never exit 70;
    the guard keeps its ceiling, as it does when the server is down."""
    with garbage(body) as uri:
        argv = ("--policy-dir", team.policy_dir, "--tracking-uri", uri, team.spec(8))
        proc, _ = _cli(dict(os.environ), "verify", *argv)
        assert proc.returncode == 4, proc.stderr
        assert proc.stderr.startswith(f"budget-gate: MLflow at {uri} failed while ")
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
        kept = Ceiling(Decimal(60), "approved amount (r1)")
        trust = Trust(None, "allowed_signers")
        refresh = LedgerCeiling(uri, trust, "sha256:" + "0" * 64, "r1", kept)
        assert refresh() == kept


_EXPERIMENT = {"experiment_id": "1", "name": "x", "lifecycle_stage": "active"}
_RUN = {"run_id": "r1", "status": "FINISHED", "start_time": 1740902400000}
MALFORMED = {
    "tags-a-string": {"info": _RUN, "data": {"tags": "oops"}},
    "time-not-a-number": {"info": {**_RUN, "start_time": "notanumber"}, "data": {}},
    "info-a-list": {"info": [], "data": {}},
    "no-run-id": {"info": {"status": "FINISHED"}, "data": {}},
}


@pytest.mark.parametrize("read", ["the runs", "the ledger"])
@pytest.mark.parametrize("run", list(MALFORMED.values()), ids=list(MALFORMED))
def test_a_malformed_answer_is_said_to_be_one_not_in_pythons_words(capsys, run, read):
    """A run of the wrong shape read as 'failed while reading the runs: string indices must
    be integers, not 'str'': Python's words, not what was wrong with the server."""
    body = {"experiments": [_EXPERIMENT], "experiment": _EXPERIMENT, "runs": [run]}
    with garbage(json.dumps(body).encode(), no_ledger=read == "the runs") as uri:
        capsys.readouterr()
        code = main(
            [
                "report",
                "--policy-dir",
                str(ROOT / "policies"),
                "--tracking-uri",
                uri,
                "--month",
                "2025-03",
            ]
        )
        err = capsys.readouterr().err.splitlines()[-1]
    assert code == 4, err
    assert err == (
        f"budget-gate: MLflow at {uri} failed while reading {read}: the server's answer is "
        "malformed, not what MLflow answers — is it an MLflow tracking server?"
    )


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


@pytest.mark.parametrize("token", ["s3kr1t-token\n", "s3kr1t\r\nX-Evil: 1", "s3kr1t-€"])
def test_a_token_no_header_can_carry_is_refused_without_showing_it(capsys, monkeypatch, token):
    """The HTTP library's refusal ("Invalid header value b'Bearer s3kr1t...'") was the
    message, the token quoted into a CI log; it is the setting that is wrong (exit 3)."""
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", token)
    with ledger_down("refused") as uri:
        capsys.readouterr()
        code = main(["report", "--policy-dir", str(ROOT / "policies"), "--tracking-uri", uri])
    err = capsys.readouterr().err
    assert code == 3, err
    assert err.startswith("budget-gate: MLFLOW_TRACKING_TOKEN holds a line break or a character")
    assert "s3kr1t" not in err and err.count("\n") == 1


@pytest.mark.parametrize("uri", ["ftp://x", "htp://mlflow:5000"])
def test_a_tracking_uri_mlflow_keeps_no_runs_at_is_bad_input(team, uri):
    """A mistyped scheme is the user's to fix (exit 3), not an outage (exit 4)."""
    argv = ("--policy-dir", team.policy_dir, "--tracking-uri", uri, team.spec(8))
    proc, _ = _cli(dict(os.environ), "verify", *argv)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr == (
        f"budget-gate: the tracking URI {uri} has a scheme MLflow keeps no runs at — use "
        "http(s)://HOST:PORT (a tracking server) or sqlite:///PATH\n"
    )


def test_a_locked_sqlite_ledger_is_a_backend_error_not_our_bug(team, tmp_path):
    """Another process holding the sqlite store's lock is the store failing: one line, exit 4."""
    import sqlite3

    store = tmp_path / "mlflow.db"
    uri = f"sqlite:///{store}"
    assert team.cli("verify", team.spec(2), uri=uri)[0] == 0  # the store and its tables
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        argv = ("--policy-dir", team.policy_dir, "--tracking-uri", uri, team.spec(8))
        proc, _ = _cli(dict(os.environ), "verify", *argv)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert proc.returncode == 4, proc.stderr
    assert "locked by another writer" in proc.stderr and "Traceback" not in proc.stderr
    assert "internal error" not in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_a_sqlite_ledger_locked_by_a_writer_is_refused_within_the_setting(tmp_path, capsys):
    """A ``sqlite:///`` store that another process held in a write transaction was handed to
    MLflow's client, which took 18 s to fail whatever BUDGET_GATE_LEDGER_TIMEOUT said, and
    said it in SQLAlchemy's words; it now fails within the setting, saying what holds it."""
    db = tmp_path / "mlflow.db"
    team = Team(tmp_path, f"sqlite:///{db}", capsys)
    team.policy(limits=BUDGET)
    spec = team.spec(8)
    assert team.cli("approve", spec, "--by", "alice", "--reason", "ok")[0] == 0
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")
    try:
        env = {**os.environ, **CLIENT_ENV, "BUDGET_GATE_LEDGER_TIMEOUT": "1"}
        argv = ("--policy-dir", team.policy_dir, "--tracking-uri", team.uri, spec)
        proc, seconds = _cli(env, "verify", *argv)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert proc.returncode == 4, proc.stderr
    assert "stayed locked by another writer for 1 s (BUDGET_GATE_LEDGER_TIMEOUT)" in proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert seconds < 1 + LIMIT_S
