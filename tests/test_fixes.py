"""Every limit finding says how to pass, and the fix it says is proven on the file itself.

For each example and each limit rule, the policy (or the spec's deadline) is tightened to
half of what the example needs, so the rule fires. Every fix the report suggests is then
written into a copy of the spec file, and the copy is checked again from scratch: the
finding must be gone, with no new error or approval.
"""

from __future__ import annotations

import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from gate.estimate.prices import load_catalog
from gate.evaluation.evaluate import Evaluator
from gate.policy.findings import Finding
from gate.policy.loader import PolicySet
from gate.policy.model import Severity
from tests.conftest import ROOT, TODAY

EXAMPLES = sorted(
    p.relative_to(ROOT).as_posix()
    for p in (ROOT / "examples").rglob("*.yaml")
    if "kind: Experiment" in p.read_text()
)
LIMIT_RULES = ["BG101", "BG102", "BG103", "BG104", "BG105", "BG110", "BG111", "BG402"]


def _evaluate(policies: Path, spec: Path) -> Any:
    # NOTE: a generous time budget for fixes: a loaded machine must not change what is proven.
    evaluator = Evaluator(PolicySet(str(policies)), load_catalog(), TODAY, fix_seconds=30)
    return evaluator.evaluate_spec(str(spec))


def _blocking(findings: tuple[Finding, ...]) -> set[str]:
    return {
        f.rule_id
        for f in findings
        if f.active and f.severity in (Severity.ERROR, Severity.APPROVAL)
    }


def _half(value: Decimal) -> float:
    return float(max(Decimal("0.000001"), (value / 2).quantize(Decimal("0.000001"))))


def _tighten(rule: str, spec: dict[str, Any], baseline: Any) -> tuple[str, str, Any] | None:
    """(section, key, value) that makes ``rule`` fire on this spec, or None where none can."""
    s = baseline.result.estimate.scenario(baseline.policy.limits.scenario)
    gpus = spec["resources"]["gpus_per_trial"]
    peak = min(spec.get("search", {}).get("max_concurrent_trials", 1), s.trials) * gpus
    table: dict[str, tuple[str, str, Any] | None] = {
        "BG101": ("limits", "max_gpus_per_trial", gpus // 2) if gpus > 1 else None,
        "BG102": ("limits", "max_trial_hours", _half(s.hours_per_trial)),
        "BG103": ("limits", "max_trial_cost", _half(s.cost_per_trial)),
        "BG104": ("limits", "max_experiment_cost", _half(s.cost)),
        "BG105": ("limits", "max_concurrent_gpus", peak - 1) if peak > 1 else None,
        "BG110": ("approval", "trials_over", s.trials // 2) if s.trials > 1 else None,
        "BG111": ("approval", "cost_over", _half(s.cost)),
        "BG402": ("spec", "deadline_hours", _half(s.wall_clock_hours)),
    }
    return table[rule]


def _set(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        data = data.setdefault(key, {})
    data[path[-1]] = value


def _can_fire(example: str, rule: str) -> bool:
    """BG101 and BG105 need more than one GPU per trial, or at once, to have a lower limit."""
    spec = yaml.safe_load((ROOT / example).read_text())
    gpus = spec["resources"]["gpus_per_trial"]
    at_once = spec.get("search", {}).get("max_concurrent_trials", 1)
    return {"BG101": gpus > 1, "BG105": gpus * at_once > 1}.get(rule, True)


CASES = [(e, r) for e in EXAMPLES for r in LIMIT_RULES if _can_fire(e, r)]


@pytest.mark.parametrize(("example", "rule"), CASES)
def test_every_suggested_fix_passes(example: str, rule: str, tmp_path: Path) -> None:
    spec = yaml.safe_load((ROOT / example).read_text())
    baseline = _evaluate(ROOT / "policies", ROOT / example)
    tightening = _tighten(rule, spec, baseline)
    assert tightening is not None, "every case here can fire"
    section, key, value = tightening
    policies = tmp_path / "policies"
    shutil.copytree(ROOT / "policies", policies)
    if section == "spec":
        spec[key] = value
    else:
        for file in policies.glob("*.yaml"):
            doc = yaml.safe_load(file.read_text())
            doc.setdefault(section, {})[key] = value
            file.write_text(yaml.safe_dump(doc, sort_keys=False))
    tight = tmp_path / "spec.yaml"
    tight.write_text(yaml.safe_dump(spec, sort_keys=False))
    result = _evaluate(policies, tight).result
    fired = [f for f in result.findings if f.rule_id == rule and f.active]
    assert fired, f"{rule} should fire with {key} {value}"
    fixes = [fix for f in fired for fix in f.fixes]
    assert fixes, f"{rule} on {example} suggests no fix"
    before = _blocking(result.findings)
    for n, fix in enumerate(fixes):
        edited = yaml.safe_load(tight.read_text())
        for edit in fix.edits:
            _set(edited, edit.path, edit.value)
        fixed = tmp_path / f"fixed-{n}.yaml"
        fixed.write_text(yaml.safe_dump(edited, sort_keys=False))
        again = _evaluate(policies, fixed).result
        after = _blocking(again.findings)
        assert again.errors == (), again.errors
        assert rule not in {f.rule_id for f in again.findings if f.active}, str(fix)
        assert after <= before, f"{fix} adds {after - before}"


def test_deadline_fix_of_the_issue(tmp_path: Path) -> None:
    """20 one-hour trials, 4 at a time (5 h) against 3 h: 7 at once (3 waves), or 12 trials."""
    spec = yaml.safe_load((ROOT / "examples" / "cifar-sweep.yaml").read_text())
    spec["resources"].update(gpus_per_trial=2, precision="bf16")
    spec["workload"] = {"max_epochs": 10, "epoch_minutes": 6}
    spec["search"].update(strategy="random", max_trials=20, max_concurrent_trials=4, seeds=[0])
    spec["stopping"] = {}
    spec["deadline_hours"] = 3
    file = tmp_path / "deadline.yaml"
    file.write_text(yaml.safe_dump(spec, sort_keys=False))
    policies = tmp_path / "policies"
    shutil.copytree(ROOT / "policies", policies)
    for policy in policies.glob("*.yaml"):
        doc = yaml.safe_load(policy.read_text())
        doc.setdefault("limits", {})["max_concurrent_gpus"] = 16
        policy.write_text(yaml.safe_dump(doc, sort_keys=False))
    result = _evaluate(policies, file).result
    (finding,) = [f for f in result.findings if f.rule_id == "BG402"]
    edits = [[(e.dotted, e.value) for e in fix.edits] for fix in finding.fixes]
    assert [("search.max_concurrent_trials", 7)] in edits
    assert [("search.max_trials", 12)] in edits
    concurrency = next(f for f in finding.fixes if f.edits[0].value == 7)
    assert "3 waves of 7 (14 GPUs at once), 3.00 h" in concurrency.summary
