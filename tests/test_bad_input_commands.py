"""Commands beside ``check`` refuse what ``check`` refuses, in one line, exit 3.

An acceptance fuzzer found ``estimate`` of an empty folder passing (exit 0, a price footer
and nothing else) where ``check`` says no specs were found; ``estimate -``, ``import -`` and
``diff - -`` answering "no such file" (twice for diff) where only ``check`` reads stdin; an
empty ``approve --expires ''`` taken as the default; and a malformed
``BUDGET_GATE_LEDGER_TIMEOUT`` accepted without a word when the ledger is a sqlite file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.cli import main
from tests.conftest import ROOT

POLICIES = str(ROOT / "policies")
EXIT_INVALID = 3


def _one_error(capsys: pytest.CaptureFixture[str], code: int) -> str:
    out, err = capsys.readouterr()
    assert code == EXIT_INVALID, out + err
    assert "Traceback" not in out + err and "internal error" not in err
    assert out == ""
    lines = [line for line in err.splitlines() if "warning" not in line]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("fmt", [[], ["--format", "json"], ["--summary"]])
def test_estimate_of_a_folder_without_specs_is_refused_as_check_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: list[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("no spec here\n")
    line = _one_error(capsys, main(["estimate", "--policy-dir", POLICIES, *fmt, str(empty)]))
    assert line.startswith(f"budget-gate: no specs found in {empty} (directories are searched")


@pytest.mark.parametrize(
    "args",
    [["estimate", "-"], ["import", "-"], ["diff", "-", "-"], ["diff", "/dev/null", "-"]],
    ids=["estimate", "import", "diff", "diff-one-side"],
)
def test_only_check_reads_stdin_and_the_others_say_so_once(
    capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    line = _one_error(capsys, main([*args, "--policy-dir", POLICIES]))
    assert line == (
        f"budget-gate: {args[0]} does not read a spec from stdin (-): only budget-gate check "
        "does — save the spec to a file and pass its path (a file named - is ./-), or pipe it "
        "to budget-gate check -"
    )


_POLICY = """\
apiVersion: budget-gate/v1
kind: Policy
prices: {overrides: {L4: {on-demand: 10}}}
approval: {trials_over: 1, approvers: {users: [alice]}}
"""
_SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {name: tiny, owner: carol, labels: {cost-center: cc-1}}
resources: {accelerator: L4, gpus_per_trial: 1, precision: bf16}
workload: {max_epochs: 10, epoch_minutes: 6}
search: {strategy: random, max_trials: 4}
"""


def _approve(tmp_path: Path, *extra: str) -> list[str]:
    """``approve`` of a spec that needs approval by alice, into a sqlite ledger in tmp_path."""
    policies = tmp_path / "policies"
    policies.mkdir(exist_ok=True)
    (policies / "default.yaml").write_text(_POLICY)
    spec = tmp_path / "spec.yaml"
    spec.write_text(_SPEC)
    uri = f"sqlite:///{tmp_path / 'ledger.db'}"
    return ["approve", str(spec), "--policy-dir", str(policies), "--tracking-uri", uri,
            "--by", "alice", "--reason", "worth it", *extra]  # fmt: skip


def test_an_empty_expiry_is_refused_not_taken_as_the_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_error(capsys, main(_approve(tmp_path, "--expires", "")))
    assert line.startswith("budget-gate: --expires '' is not a duration or a date — use e.g. ")
    assert not (tmp_path / "ledger.db").exists()


@pytest.mark.parametrize("value", ["abc", "-1", "nan", "1e400"])
def test_a_malformed_ledger_timeout_is_refused_for_a_sqlite_ledger_too(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    value: str,
) -> None:
    """Refused for a tracking server; a sqlite ledger took it without a word and wrote."""
    monkeypatch.setenv("BUDGET_GATE_LEDGER_TIMEOUT", value)
    line = _one_error(capsys, main(_approve(tmp_path)))
    assert line.startswith(
        f"budget-gate: BUDGET_GATE_LEDGER_TIMEOUT is {value!r}, not a number of seconds from "
    )


def test_a_malformed_ledger_timeout_is_refused_when_a_sqlite_ledger_is_only_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``verify --dry-run`` reads the ledger only: the bad value passed without a word."""
    argv = _approve(tmp_path)
    spec, policies, uri = argv[1], argv[3], argv[5]
    monkeypatch.setenv("BUDGET_GATE_LEDGER_TIMEOUT", "abc")
    code = main(["verify", spec, "--dry-run", "--policy-dir", policies, "--tracking-uri", uri])
    out, err = capsys.readouterr()
    assert code == EXIT_INVALID, out + err
    assert "BUDGET_GATE_LEDGER_TIMEOUT is 'abc', not a number of seconds from " in err


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["report", "--trend", "２"], "'２' is not a number of months from 0 to 24"),
        (["approve", "s.yaml", "--by", "a", "--reason", "r", "--pr", "１２"], "pull request"),
        (["request-approval", "s.yaml", "--reason", "r", "--pr", "٣"], "pull request"),
        (["reconcile", "s.yaml", "--min-delta", "０.１"], "'０.１' is not a number >= 0"),
        (["check", "--jobs", "４", "s.yaml"], "'４' is not a whole number from 1 to 1000"),
        (["serve", "skypilot-policy", "--port", "０"], "'０' is not a TCP port"),
        (["serve", "kueue-admission", "--resync", "６０"], "'６０' is not a number of seconds"),
    ],
    ids=["trend", "approve-pr", "request-pr", "min-delta", "jobs", "port", "resync"],
)
def test_number_flags_take_ascii_digits_only(
    capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    """``str.isdigit``, ``int`` and ``float`` read full-width and other scripts' digits:
    ``--trend ２`` was 2 and ``--port ０`` a free port. The flag after them is unknown, so
    a value taken would end in another refusal (and never start a server)."""
    code = main([*args, "--no-such-flag"])
    out, err = capsys.readouterr()
    assert code == EXIT_INVALID, out + err
    assert said in err.splitlines()[-1] and "Traceback" not in err
