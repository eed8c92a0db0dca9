"""A file in the specs folder that is no spec is refused in one line at 1:1, exit 3.

A training config beside the specs (``lr: 0.1``) got an error per missing spec key ("add
apiVersion:", "add kind:", ...), which sent its author to write a spec into it. Now it is
one line that says what it is not and what to do; half an engine's marks are named. A spec
that lost its apiVersion/kind lines still says so, with its other errors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gate.cli import main


def check(tmp_path: Path, capsys: Any, text: str) -> tuple[int, list[str]]:
    """``budget-gate check -q experiments/`` with ``text`` its one file; the output lines."""
    folder = tmp_path / "experiments"
    folder.mkdir(exist_ok=True)
    (folder / "config.yaml").write_text(text)
    capsys.readouterr()
    code = main(["check", "-q", str(folder)])
    return code, capsys.readouterr().out.splitlines()


@pytest.mark.parametrize(
    "text",
    ["lr: 0.1\nbatch: 32\n", "{}\n", "model:\n  depth: 18\noptimizer: adam\n", '{"lr": 0.1}\n'],
)
def test_a_training_config_is_one_line_saying_it_is_not_a_spec(tmp_path, capsys, text):
    code, lines = check(tmp_path, capsys, text)
    assert code == 3
    (line,) = lines
    assert line.startswith(
        f"{tmp_path / 'experiments' / 'config.yaml'}:1:1: not a budget-gate spec"
    )
    assert "move it out of the specs folder (and out of the Action's specs globs)" in line
    assert "see budget-gate import" in line and "missing required key" not in line


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "defaults:\n  - model: resnet\nlr: 0.1\n",
            "a Hydra sweep names a hydra/ group in defaults",
        ),
        ("method: grid\nlr: 0.1\n", "a W&B sweep has both method and parameters"),
        ("parameters:\n  lr: {values: [1]}\n", "a W&B sweep has both method and parameters"),
    ],
)
def test_half_an_engines_marks_are_named(tmp_path, capsys, text, said):
    code, lines = check(tmp_path, capsys, text)
    (line,) = lines
    assert code == 3 and ":1:1: not a budget-gate spec" in line and said in line


def test_a_spec_without_its_first_lines_says_so_with_its_other_errors(tmp_path, capsys):
    code, lines = check(tmp_path, capsys, "metadata: {name: x}\nsearch: {strategy: grid}\n")
    assert code == 3
    assert lines[0].endswith(
        ":1:1: this looks like a budget-gate spec without its apiVersion/kind lines — add "
        "`apiVersion: budget-gate/v1` and `kind: Experiment`"
    )
    assert not any("'apiVersion'" in line or "'kind'" in line for line in lines)
    assert any("missing required key 'resources'" in line for line in lines[1:])


def test_a_policy_and_a_kind_without_apiversion_keep_their_own_lines(tmp_path, capsys):
    _, lines = check(tmp_path, capsys, "apiVersion: budget-gate/v1\nkind: Policy\n")
    assert len(lines) == 1 and "this file is a policy, not an experiment spec" in lines[0]
    _, lines = check(tmp_path, capsys, "kind: Experiment\nmetadata: {name: x}\n")
    assert any("missing required key 'apiVersion'" in line for line in lines)
