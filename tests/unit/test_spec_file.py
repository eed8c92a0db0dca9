"""The spec a launch names is the file read: its path is the resolved one (pure file reads)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.admission.spec_file import SpecRefError, read_spec


def test_a_path_through_a_symlink_is_the_path_of_the_file_read(tmp_path: Path) -> None:
    """``vision/link/../x.yaml`` with ``link`` into nlp's tree reads nlp's ``x.yaml``."""
    (tmp_path / "experiments" / "nlp" / "deep").mkdir(parents=True)
    (tmp_path / "experiments" / "vision").mkdir()
    (tmp_path / "experiments" / "nlp" / "x.yaml").write_text("nlp's")
    (tmp_path / "experiments" / "vision" / "x.yaml").write_text("vision's")
    (tmp_path / "experiments" / "vision" / "link").symlink_to("../nlp/deep")
    named = "experiments/vision/link/../x.yaml"
    assert read_spec(named, tmp_path, subject=named) == ("experiments/nlp/x.yaml", b"nlp's")
    plain = "experiments/vision/./x.yaml"
    assert read_spec(plain, tmp_path, subject=plain) == ("experiments/vision/x.yaml", b"vision's")


def test_a_symlink_out_of_the_repository_is_refused(tmp_path: Path) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "secret.yaml"
    repo.mkdir()
    outside.write_text("x")
    (repo / "s.yaml").symlink_to(outside)
    with pytest.raises(SpecRefError, match="outside the repository"):
        read_spec("s.yaml", repo, subject="BUDGET_GATE_SPEC=s.yaml")
