"""``report``'s flags refused before the read: --format targets, --month, --trend.

None of these reaches the tracking server (an unreachable one would be exit 4): a flag
that cannot be right is exit 3 before the read, which can take a minute.
"""

from __future__ import annotations

import pytest

from gate.cli import main
from tests.conftest import ROOT

POLICIES = str(ROOT / "policies")
UNREACHABLE = "http://127.0.0.1:9"


def report(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["report", "--policy-dir", POLICIES, "--tracking-uri", UNREACHABLE, *args])
    return code, capsys.readouterr().err


def test_a_link_to_another_formats_file_is_the_same_file(tmp_path, capsys):
    """The link's own path was compared while the write goes through it: the Markdown
    replaced the JSON, both said 'wrote', exit 0."""
    (tmp_path / "link.json").symlink_to(tmp_path / "b.json")
    code, err = report(
        capsys,
        "--format",
        f"json={tmp_path / 'b.json'}",
        "--format",
        f"markdown={tmp_path / 'link.json'}",
    )
    assert code == 3, err
    assert "two formats write the same file" in err and "wrote" not in err
    assert not (tmp_path / "b.json").exists()


def test_two_formats_on_stdout_are_told_to_use_a_format_report_has(capsys):
    """The hint was check's (--format sarif=gate.sarif), a format report refuses."""
    code, err = report(capsys, "--format", "text", "--format", "text")
    assert code == 3, err
    assert err.strip().endswith("e.g. --format json=report.json") and "sarif" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("name", ["focus", "html"])
def test_a_directory_as_the_format_file_is_refused_before_reading(tmp_path, capsys, name):
    """It was refused only after the whole read, with the hint to check that the
    directory exists and is writable, which it was."""
    code, err = report(capsys, "--format", f"{name}={tmp_path}")
    assert code == 3, err
    assert f"--format {name}={tmp_path}: that is a directory, not a file" in err
    assert "name a file, e.g. --format" in err and "writable" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("month", ["２０２５-03", "2025-٠٣", "2025-03\n..2025-04"])
def test_a_month_in_other_digits_than_ascii_is_not_a_month(capsys, month):
    """``\\d`` matched full-width digits and ``int`` read them: ２０２５-03 was March 2025
    (and ``$`` let a line break through before the range's dots)."""
    code, err = report(capsys, "--month", month)
    assert code == 3, err
    assert f"--month {month!r} is not a month" in err and "Traceback" not in err


@pytest.mark.parametrize("journal", ["", "-wal"])
def test_the_store_it_reads_is_never_a_format_file(tmp_path, capsys, journal):
    """``--format json=mlflow.db`` replaced the store, its runs and its ledger, with the JSON
    report, and said "wrote"."""
    store = tmp_path / "mlflow.db"
    store.write_bytes(b"the runs and the ledger")
    (tmp_path / f"mlflow.db{journal}").write_bytes(b"the runs and the ledger")
    capsys.readouterr()
    code = main(
        ["report", "--policy-dir", POLICIES, "--tracking-uri", f"sqlite:///{store}",
         "--format", f"json={tmp_path / f'mlflow.db{journal}'}"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 3, err
    assert "which this run reads" in err and "wrote" not in err
    assert store.read_bytes() == (tmp_path / f"mlflow.db{journal}").read_bytes()
    assert store.read_bytes() == b"the runs and the ledger"


def test_the_policy_directory_is_never_where_a_format_file_goes(capsys):
    target = f"{POLICIES}/report.yaml"
    code, err = report(capsys, "--format", f"text={target}")
    assert code == 3, err
    assert "the policy directory this run reads" in err
    assert not (ROOT / "policies" / "report.yaml").exists()


@pytest.mark.parametrize(
    ("flag", "said"),
    [("--month", "--month '' is not a month"), ("--tracking-uri", "--tracking-uri is empty")],
)
def test_an_empty_month_or_store_is_refused_not_the_default(capsys, flag, said):
    """``--month "$MONTH"`` with the variable unset reported the last full month, and said
    "no --month"; an empty ``--tracking-uri`` read the default ledger."""
    capsys.readouterr()
    code = main(["report", "--policy-dir", POLICIES, flag, ""])
    err = capsys.readouterr().err
    assert code == 3, err
    assert said in err and len(err.strip().splitlines()) == 1


def test_a_dash_is_stdout_not_a_file_named_dash(tmp_path, capsys, monkeypatch):
    """``--format json=-`` wrote a file named ``-`` and said "wrote -"."""
    monkeypatch.chdir(tmp_path)
    code, err = report(capsys, "--format", "json=-", "--format", "text=-")
    assert code == 3, err
    assert "formats json, text all want stdout" in err
    assert not (tmp_path / "-").exists()
