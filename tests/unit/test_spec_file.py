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


def test_an_absolute_path_is_refused_as_absolute_with_its_path_in_the_repository(
    tmp_path: Path,
) -> None:
    """An absolute path inside the repository was refused as "outside the repository"."""
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "a.yaml").write_text("x")
    inside = str(tmp_path / "experiments" / "a.yaml")
    with pytest.raises(SpecRefError, match=r"is an absolute path — .* \(experiments/a\.yaml\)$"):
        read_spec(inside, tmp_path, subject=f"BUDGET_GATE_SPEC={inside}")
    with pytest.raises(SpecRefError, match=r"is an absolute path — .*, e\.g\. experiments/"):
        read_spec("/etc/passwd", tmp_path, subject="BUDGET_GATE_SPEC=/etc/passwd")
