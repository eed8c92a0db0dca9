"""A missing default ledger is named as the default, with how to point elsewhere.

Newcomer report, finding 7: in a fresh ``init``'d repository, ``report`` and ``calibrate``
said "sqlite:////tmp/nu3/mlflow.db: no MLflow store at /tmp/nu3/mlflow.db — check the
path", for a path the user never gave. A path the user did give keeps "check the path".
"""

from __future__ import annotations

import pytest

from tests.ledger_kit import Team

COMMANDS = [("report",), ("calibrate",), ("reconcile", "SPEC")]


def _run(team: Team, argv: tuple[str, ...], uri: str) -> tuple[int, str]:
    args = [team.spec(10) if arg == "SPEC" else arg for arg in argv[1:]]
    code, _, err = team.cli(argv[0], *args, uri=uri)
    return code, err


@pytest.mark.parametrize("argv", COMMANDS)
def test_the_default_ledger_is_said_to_be_the_default(
    team: Team, argv: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    store = team.root / "mlflow.db"  # beside the policies: no git work tree here
    code, err = _run(team, argv, uri="")
    assert code == 3
    assert err.strip() == (
        f"budget-gate: no MLflow store at {store}, the default ledger (nothing logged here "
        "yet?) — pass --tracking-uri or set MLFLOW_TRACKING_URI to the tracking server or "
        "sqlite file the runs were logged to"
    )
    assert not store.exists()


@pytest.mark.parametrize("argv", COMMANDS)
def test_a_path_the_user_gave_keeps_check_the_path(
    team: Team, argv: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
):
    typo = team.root / "mlfow.db"
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    code, err = _run(team, argv, uri=f"sqlite:///{typo}")
    assert code == 3
    assert f"no MLflow store at {typo} — check the path" in err
    assert "default ledger" not in err

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{typo}")
    code, err = _run(team, argv, uri="")
    assert code == 3
    assert f"no MLflow store at {typo} — check the path" in err
    assert "default ledger" not in err
