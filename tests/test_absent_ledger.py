"""A ``sqlite:///`` ledger that is not there: read as empty, said aloud, made only by a write.

MLflow's client makes a store wherever a sqlite URI points, so a mistyped ledger path read
as a month with nothing approved or spent (a monthly budget passed on it without a word)
and left an empty file that read as a ledger from then on.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.ledger.signing import SIGNERS_FILE

WARNING = "no ledger at sqlite:///{path}: read as empty, nothing approved or spent is recorded"


@pytest.fixture
def team(team):
    team.policy(trials_over=35, limits=", monthly_budget: 1000")
    return team


def test_check_says_the_ledger_is_not_there_and_makes_nothing(team, tmp_path):
    typo = tmp_path / "mlfow.db"
    spec = team.spec(20)  # 200 USD of a 1,000 USD month
    code, out, _ = team.cli("check", spec, uri=f"sqlite:///{typo}")
    assert code == 0
    assert f"ledger: warning: {WARNING.format(path=typo)}" in out
    assert "give its URI (--tracking-uri or MLFLOW_TRACKING_URI)" in out
    code, out, _ = team.cli("check", spec, "--format", "json", uri=f"sqlite:///{typo}")
    assert (code, json.loads(out)["ledger"]["absent"]) == (0, True)
    code, out, _ = team.cli("check", spec, "--format", "markdown", uri=f"sqlite:///{typo}")
    assert code == 0
    assert "> Ledger: warning: no ledger at sqlite:&#8203;////" in out  # no link, escaped
    assert "/mlfow.db: read as empty, nothing approved or spent is recorded there" in out
    assert not typo.exists()


def test_a_ledger_that_is_there_draws_no_warning(team, tmp_path):
    store = tmp_path / "ledger.db"
    team.reconcile(team.spec(1), "300", uri=f"sqlite:///{store}")
    code, out, _ = team.cli("check", team.spec(20), "--format", "json", uri=f"sqlite:///{store}")
    assert code == 0
    ledger = json.loads(out)["ledger"]
    assert ledger["absent"] is False
    assert json.loads(out)["results"][0]["budget"]["spent"] == "300.00"


def test_verify_warns_then_makes_the_ledger_with_its_launch(team, tmp_path):
    store = tmp_path / "new.db"
    spec = team.spec(20)
    code, out, _ = team.cli("verify", spec, uri=f"sqlite:///{store}")
    assert code == 0
    assert f"ledger: warning: {WARNING.format(path=store)}" in out
    assert store.is_file()
    code, out, _ = team.cli("verify", spec, uri=f"sqlite:///{store}")
    assert code == 0
    assert "no ledger at" not in out
    assert "200.00 USD of 1,000.00 USD spent" in out  # the first launch, read back


def test_an_approval_into_no_ledger_says_it_made_one_not_that_it_read_it_as_empty(team, tmp_path):
    store = tmp_path / "new.db"
    spec = team.spec(40)  # over the trigger of 35: needs an approval
    code, out, err = team.cli(
        "approve", spec, "--by", "alice", "--reason", "ok", uri=f"sqlite:///{store}"
    )
    assert code == 0, err
    assert f"budget-gate: note: no ledger was at sqlite:///{store}: made it" in err
    assert "read as empty" not in out + err
    assert store.is_file()
    code, out, _ = team.cli("verify", spec, uri=f"sqlite:///{store}")
    assert code == 0, out  # the approval made the ledger and is read from it


def test_the_launch_api_logs_it(team, tmp_path, caplog):
    import gate

    store = tmp_path / "new.db"
    with caplog.at_level("WARNING", logger="gate.launch"):
        gate.require_approval(
            team.spec(20), policy_dir=team.policy_dir, tracking_uri=f"sqlite:///{store}"
        )
    assert f"ledger: {WARNING.format(path=store)}" in caplog.text


def test_a_launch_that_cannot_be_signed_makes_no_store(team, keys, tmp_path, monkeypatch):
    (Path(team.policy_dir) / SIGNERS_FILE).write_text(keys.signers("alice"), encoding="ascii")
    monkeypatch.delenv("BUDGET_GATE_SIGNING_KEY", raising=False)
    store = tmp_path / "new.db"
    code, _, err = team.cli("verify", team.spec(20), uri=f"sqlite:///{store}")
    assert code == 3
    assert "no signing key is set" in err
    assert not store.exists()  # else the next read finds an empty ledger there, unwarned


@pytest.mark.parametrize("content", [b"garbage\n", b"SQLite format 3\x00" + b"\xff" * 200])
def test_a_ledger_file_that_is_no_store_is_a_failed_backend_not_an_empty_month(
    team, tmp_path, content
):
    """Read as empty, a monthly budget would pass on it; MLflow's client crashed (exit 70)."""
    store = tmp_path / "ledger.db"
    store.write_bytes(content)
    for command in ("check", "verify"):
        code, out, err = team.cli(command, team.spec(20), uri=f"sqlite:///{store}")
        assert code == 4, (out, err)
        assert f"{store}: the MLflow store cannot be read" in err + out
        assert "internal error" not in err + out
    assert store.read_bytes() == content


def _optuna_storage(path: Path) -> bytes:
    """Another tool's SQLite file, as an Optuna study's storage is."""
    import sqlite3

    db = sqlite3.connect(path)
    db.execute("CREATE TABLE studies (study_id INTEGER PRIMARY KEY, study_name TEXT)")
    db.execute("CREATE TABLE trials (trial_id INTEGER PRIMARY KEY, study_id INTEGER)")
    db.commit()
    db.close()
    return path.read_bytes()


@pytest.mark.parametrize("command", ["check", "verify", "reconcile"])
def test_another_tools_database_is_refused_and_left_as_it_was(team, tmp_path, command):
    """An Optuna storage given as the store: MLflow's client wrote its schema into it (and
    exited 70), or a 0.00 USD month passed the budget on it."""
    store = tmp_path / "optuna.db"
    before = _optuna_storage(store)
    code, out, err = team.cli(command, team.spec(20), uri=f"sqlite:///{store}")
    assert code == 3, out + err
    assert f"{store} holds no MLflow tables (it holds: studies, trials), so it is another " in err
    assert store.read_bytes() == before


def test_a_directory_given_as_the_store_is_refused_at_once(team, tmp_path):
    """sqlite:///mlruns (MLflow's file store is a folder): retried for 105 s, then exit 70."""
    folder = tmp_path / "mlruns"
    folder.mkdir()
    for command in ("check", "reconcile"):
        code, _, err = team.cli(command, team.spec(20), uri=f"sqlite:///{folder}")
        assert code == 3
        assert f"{folder} is a directory, not an MLflow sqlite store" in err


def test_an_empty_file_reads_as_no_ledger_and_stays_empty(team, tmp_path):
    store = tmp_path / "touched.db"
    store.touch()
    code, out, _ = team.cli("check", team.spec(20), uri=f"sqlite:///{store}")
    assert code == 0
    assert f"ledger: warning: {WARNING.format(path=store)}" in out
    assert store.stat().st_size == 0  # a read makes nothing
    code, _, err = team.cli("reconcile", team.spec(20), uri=f"sqlite:///{store}")
    assert code == 3 and f"no MLflow store at {store}" in err


def test_a_sqlite_uri_that_names_no_file_is_bad_input(team):
    for command in ("check", "reconcile"):
        code, _, err = team.cli(command, team.spec(20), uri="sqlite:///")
        assert code == 3
        assert "'sqlite:///' names no file" in err
        assert "Traceback" not in err


def test_a_device_given_as_the_store_is_refused(team):
    """sqlite:////dev/null: MLflow's client failed on it with exit 70 (disk I/O error)."""
    for command in ("check", "verify"):
        code, _, err = team.cli(command, team.spec(20), uri="sqlite:////dev/null")
        assert code == 3
        assert "/dev/null is not a regular file (a device or a pipe)" in err


def test_a_directory_store_is_bad_input_that_says_how_mlflow_3_opens_it(team, tmp_path):
    """MLflow 3 opens ./mlruns only when told to: exit 4 (a failed backend) before, and the
    hint of a bad scheme offered "a directory" as a store."""
    folder = tmp_path / "mlruns"
    folder.mkdir()
    for uri in (str(folder), folder.as_uri()):
        code, out, err = team.cli("check", team.spec(20), uri=uri)
        assert code == 3, out + err
        assert "is a directory store, which MLflow 3 opens only with MLFLOW_ALLOW_FILE_STORE" in err


def test_a_ledger_uri_with_options_is_its_file_and_an_in_memory_one_is_refused(team, tmp_path):
    """``?timeout=5`` skipped the absence check (an empty store was made, the month read as
    nothing spent); ``sqlite://`` kept nothing, so an approval or a revocation was gone."""
    typo = tmp_path / "mlfow.db"
    spec = team.spec(20)
    code, out, _ = team.cli("check", spec, uri=f"sqlite:///{typo}?timeout=5")
    assert code == 0
    assert "ledger: warning: no ledger at sqlite:///" in out and "mlfow.db?timeout=***" in out
    assert not typo.exists()
    for memory in ("sqlite://", "sqlite:///:memory:"):
        code, _, err = team.cli("check", spec, uri=memory)
        assert code == 3
        assert f"'{memory}' is an in-memory store, which keeps no record past the command" in err
        code, _, err = team.cli("approve", spec, "--by", "alice", "--reason", "ok", uri=memory)
        assert code == 3, err


def test_a_database_store_without_its_driver_is_the_users_to_install(team):
    """``postgresql://`` with no psycopg was an internal error (exit 70)."""
    code, _, err = team.cli("verify", team.spec(20), uri="postgresql://u:pw@127.0.0.1:9/db")
    assert code == 3, err
    assert "postgresql://***@127.0.0.1:9/db: MLflow needs the Python module" in err
    assert "pw" not in err


@pytest.mark.parametrize("command", ["report", "reconcile", "calibrate"])
def test_the_run_readers_say_so_too(team, command):
    """``report``, ``reconcile`` and ``calibrate`` open MLflow's client themselves: the same
    store without its driver was exit 70 there."""
    args = [command] if command != "reconcile" else [command, team.spec(20)]
    code, _, err = team.cli(*args, uri="mysql://u:pw@127.0.0.1:9/db")
    assert code == 3, err
    assert "mysql://***@127.0.0.1:9/db: MLflow needs the Python module" in err
    assert "pw" not in err and "internal error" not in err
