"""``report --format NAME=FILE`` never writes over what the report reads.

``--format json=mlflow.db`` replaced the store and its ledger with the JSON report, and said
"wrote"; a spec the report priced runs with was guarded only where the run's tag named it
as the report's own directory saw it, and a journal of the store only once SQLite had made
one. The store here is a sqlite file, read as a scheduled job beside the server reads it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gate import tracking
from gate.cli import main
from tests import report_kit


def _repo(root: Path) -> tuple[Path, str]:
    """A repository with its policies and one spec, ``specs/a.yaml``, whose run is tagged with
    that relative path; the store's URI."""
    (root / ".git").mkdir(parents=True)
    kit = report_kit.one_spec(root, at="specs/a.yaml")
    tags = {**tracking.run_tags(str(kit.spec), trial_id=0), tracking.SPEC: "specs/a.yaml"}
    report_kit.log_run(kit.client, kit.experiment, tags, name="r", start=1, hours=2)
    return kit.spec, kit.uri


def _report(capsys: pytest.CaptureFixture[str], uri: str, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(
        ["report", "--policy-dir", "../policies", "--tracking-uri", uri,
         "--month", report_kit.MONTH, *args]
    )  # fmt: skip
    return code, capsys.readouterr().err


def test_a_spec_found_from_its_relative_tag_is_not_written_over(tmp_path, capsys, monkeypatch):
    spec, uri = _repo(tmp_path / "repo")
    (tmp_path / "repo" / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "repo" / "sub")
    before = spec.read_bytes()
    code, err = _report(capsys, uri, "--format", "json")
    assert code == 0, err  # the run is priced: its spec was found from the repository's root
    for target in ("../specs/a.yaml", str(spec)):
        code, err = _report(capsys, uri, "--format", f"json={target}")
        assert code == 3, err
        assert "which this run reads" in err and "wrote" not in err
    assert spec.read_bytes() == before


@pytest.mark.parametrize("journal", ["-journal", "-wal"])
def test_a_journal_sqlite_has_not_made_yet_is_refused_too(tmp_path, capsys, monkeypatch, journal):
    _, uri = _repo(tmp_path / "repo")
    monkeypatch.chdir(tmp_path / "repo" / "policies")  # any folder beside ../policies
    target = tmp_path / "repo" / f"mlflow.db{journal}"
    assert not target.exists()
    code, err = _report(capsys, uri, "--format", f"json={target}")
    assert code == 3, err
    assert "which this run reads" in err and not target.exists()
