"""Engine files with values of shapes no reader expects: refused (exit 3), never a crash.

Each case takes a real engine file (``tests/fixtures/configs``), puts an odd value (a list
where a number goes, NaN, a mapping, a huge number, a shell variable) at one of its paths,
and runs ``budget-gate check`` on it: the verdict is a pass, a violation, an approval or
bad input, never exit 70. The readers refuse the values they know at their line; one of a
shape they never expected is refused at the file (:func:`gate.formats.translate.read`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate.cli import main
from tests.conftest import ROOT

CONFIGS = ROOT / "tests" / "fixtures" / "configs"
SEEDS = sorted(
    p
    for p in CONFIGS.glob("*/*.yaml")
    if p.parent.name in ("wandb", "katib", "skypilot", "hydra", "rules")
)
ODD: list[Any] = [None, True, [], [1, 2], {}, {"a": 1}, math.nan, math.inf, -1, 10**30, 0.5,
                  "", "two", "$(X)", "${a.b}", "8000m", "²"]  # fmt: skip


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path] if path else []
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _paths(value, (*path, i))
    return found


def _put(node: Any, path: tuple[Any, ...], value: Any) -> None:
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value


@pytest.fixture(scope="module")
def policies(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("policies")
    (directory / "default.yaml").write_text("apiVersion: budget-gate/v1\nkind: Policy\n")
    return directory


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_an_odd_value_anywhere_in_an_engine_file_is_never_a_crash(
    data: st.DataObject, policies: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed = data.draw(st.sampled_from(SEEDS), label="seed")
    doc = yaml.safe_load(seed.read_text(encoding="utf-8"))
    path = data.draw(st.sampled_from(_paths(doc)), label="path")
    value = data.draw(st.sampled_from(ODD), label="value")
    _put(doc, path, value)
    target = tmp_path / seed.name
    target.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    capsys.readouterr()
    code = main(["check", str(target), "--policy-dir", str(policies), "--format", "json"])
    out, err = capsys.readouterr()
    assert code in (0, 1, 2, 3), (seed.name, path, value, err[-600:])
    assert "internal error" not in err
    assert json.loads(out)["results"], err
