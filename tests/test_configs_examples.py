"""docs/configs.md's example files pass ``budget-gate check`` as written, one per engine.

A newcomer copies an example into the repository ``budget-gate init`` set up: one that
lacked a fact exited 3 there. Each ``yaml`` block is checked as its own file under the
policy ``init`` writes and under the built-in default, and is read as the engine it shows.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from gate.commands.init import default_policy
from tests.conftest import ROOT

_BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.M | re.S)
EXAMPLES = _BLOCK.findall((ROOT / "docs" / "configs.md").read_text(encoding="utf-8"))
FORMATS = {"W&B sweep", "Hydra sweep", "Katib Experiment", "SkyPilot task"}


def check(tmp_path: Path, capsys: Any, text: str, *policy: str) -> tuple[int, Any]:
    """``budget-gate check FILE --format json`` (``policy``: ``--policy-dir DIR``, or none)."""
    path = tmp_path / "example.yaml"
    path.write_text(text)
    capsys.readouterr()
    code = main(["check", str(path), "--format", "json", *policy])
    return code, json.loads(capsys.readouterr().out)["results"][0]


@pytest.mark.parametrize("text", EXAMPLES, ids=[t.splitlines()[0] for t in EXAMPLES])
def test_an_example_passes_under_the_policy_init_writes(tmp_path, capsys, text) -> None:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "default.yaml").write_text(default_policy())
    code, result = check(tmp_path, capsys, text, "--policy-dir", str(policies))
    assert (code, result["errors"]) == (0, []), result
    assert result["outcome"] == "pass"
    assert not [f for f in result["findings"] if f["severity"] != "info"], result["findings"]
    assert result["imported"]["format"] in FORMATS


@pytest.mark.parametrize("text", EXAMPLES, ids=[t.splitlines()[0] for t in EXAMPLES])
def test_an_example_passes_under_the_built_in_default(tmp_path, capsys, monkeypatch, text) -> None:
    monkeypatch.chdir(tmp_path)  # NOTE: no policies/ here
    code, result = check(tmp_path, capsys, text)
    assert (code, result["errors"]) == (0, []), result


def test_the_examples_show_each_engine_once(tmp_path, capsys) -> None:
    formats = [check(tmp_path, capsys, text)[1]["imported"]["format"] for text in EXAMPLES]
    assert sorted(formats) == sorted(FORMATS)
