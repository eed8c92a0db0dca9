"""``estimate --alternatives`` and the comment's cheaper plans: priced, ranked, honest.

Each alternative's price is checked against ``estimate`` of a spec file with its edits
written in, so the listed edits are exactly the plan that was priced.
"""

from __future__ import annotations

import contextlib
import io
import json
from decimal import Decimal
from pathlib import Path

import yaml

from gate.cli import main
from tests.conftest import ROOT


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(list(argv))
    return code, out.getvalue()


def _json_estimate(spec: str) -> dict:
    code, out = _run("estimate", spec, "--alternatives", "--format", "json")
    assert code == 0
    return json.loads(out)["estimates"][0]


def test_alternatives_are_ranked_by_saving_and_say_what_they_give_up():
    found = _json_estimate("examples/imagenet-bruteforce.yaml")
    alternatives = found["alternatives"]
    names = [a["name"] for a in alternatives]
    # fp32 on H100, a grid of 8 configurations × 8 seeds, spot already: no spot plan. Half
    # the configurations is 32 trials: the name says configurations, not "4 trials".
    random = "random search, 4 configurations × 8 seeds"
    assert set(names) == {"ASHA", "Hyperband", random, "bf16"}
    savings = [Decimal(a["saving"]) for a in alternatives]
    assert savings == sorted(savings, reverse=True)
    assert all(a["gives_up"] for a in alternatives)
    expected = Decimal(found["estimate"]["expected"]["cost"])
    for a in alternatives:
        # Each amount is rounded to the cent on its own: a cent apart at most.
        assert abs(Decimal(a["saving"]) - (expected - Decimal(a["expected"]["cost"]))) <= Decimal(
            "0.01"
        )


def test_each_alternative_is_the_price_of_its_edits(tmp_path: Path):
    spec = "examples/llm-finetune-grid.yaml"
    for alt in _json_estimate(spec)["alternatives"]:
        data = yaml.safe_load((ROOT / spec).read_text())
        for edit in alt["edits"]:
            node = data
            *parents, last = edit["path"].split(".")
            for key in parents:
                node = node.setdefault(key, {})
            node[last] = edit["value"]
        edited = tmp_path / "edited.yaml"
        edited.write_text(yaml.safe_dump(data, sort_keys=False))
        code, out = _run("estimate", str(edited), "--format", "json")
        assert code == 0
        priced = json.loads(out)["estimates"][0]["estimate"]
        assert priced["expected"]["cost"] == alt["expected"]["cost"], alt["name"]
        assert priced["worst"]["cost"] == alt["worst"]["cost"], alt["name"]


def test_text_lists_cheaper_plans_only_when_asked():
    _, plain = _run("estimate", "examples/llm-finetune-grid.yaml")
    _, asked = _run("estimate", "examples/llm-finetune-grid.yaml", "--alternatives")
    assert "cheaper plans" not in plain
    assert "cheaper plans (expected / worst cost" in asked
    assert "  spot with checkpoints: 241.72 USD / 241.72 USD, saves 369.59 USD" in asked
    assert "first result 1.1 h (the first trial finished)" in plain


def test_the_comment_shows_cheaper_plans_for_blocked_specs_only(tmp_path: Path):
    comment = tmp_path / "comment.md"
    _run(
        "check",
        "examples/llm-finetune-grid.yaml",
        "examples/cifar-sweep.yaml",
        "--format",
        f"markdown={comment}",
    )
    text = comment.read_text()
    assert text.count("<details><summary>Cheaper plans</summary>") == 1
    blocked = text.index("llm-finetune-grid.yaml")
    assert text.index("Cheaper plans") > blocked
    _, json_out = _run("check", "examples/llm-finetune-grid.yaml", "--format", "json")
    assert json.loads(json_out)["results"][0]["alternatives"] == []
