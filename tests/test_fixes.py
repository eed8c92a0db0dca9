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
from gate.policy.loader import LoadedPolicy, PolicySet
from gate.policy.model import Severity
from tests.conftest import ROOT, TODAY

EXAMPLES = sorted(
    p.relative_to(ROOT).as_posix()
    for p in (ROOT / "examples").rglob("*.yaml")
    if "kind: Experiment" in p.read_text()
)
LIMIT_RULES = ["BG101", "BG102", "BG103", "BG104", "BG105", "BG110", "BG111", "BG402"]


def _evaluate(policies: Path, spec: Path) -> Any:
    # NOTE: the default bound on fixes (a count of re-estimates, not a time): what a user sees
    evaluator = Evaluator(PolicySet(str(policies)), load_catalog(), TODAY)
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


def _imagenet_fixes(estimates: int) -> list[tuple[str, tuple[tuple[str, Any], ...]]]:
    evaluator = Evaluator(
        PolicySet(str(ROOT / "policies")), load_catalog(), TODAY, fix_estimates=estimates
    )
    result = evaluator.evaluate(str(ROOT / "examples" / "imagenet-bruteforce.yaml"))
    return [
        (f.rule_id, tuple((e.dotted, e.value) for e in fix.edits))
        for f in result.findings
        for fix in f.fixes
    ]


def test_fixes_are_bounded_by_a_count_of_estimates_not_by_time() -> None:
    """The same spec gets the same fixes whatever the load: a smaller count gives a prefix."""
    full = _imagenet_fixes(64)
    assert len({rule for rule, _ in full}) >= 5  # limit findings of five rules or more
    assert _imagenet_fixes(64) == full
    assert _imagenet_fixes(0) == []
    previous: list[Any] = []
    for count in (1, 4, 12, 24, 48):
        found = _imagenet_fixes(count)
        assert found[: len(previous)] == previous, count
        assert len(found) <= len(full)
        previous = found
    assert 0 < len(_imagenet_fixes(24)) < len(full)


def test_a_spec_that_simulates_gets_fewer_estimates_for_its_fixes(tmp_path: Path) -> None:
    """ASHA at η = 1.1 over 10,000 epochs simulates ~400,000 steps per estimate: 1 re-estimate."""
    from gate.evaluation.fixing import WORK_STEPS, attach_fixes
    from gate.policy.rules.base import RuleContext

    spec = yaml.safe_load((ROOT / "examples" / "asha-bert-spot.yaml").read_text())
    spec["workload"]["max_epochs"] = 10_000
    spec["search"].update(max_trials=10**6)
    spec["search"]["scheduler"].update(min_epochs=1, reduction_factor=1.1)
    file = tmp_path / "asha.yaml"
    file.write_text(yaml.safe_dump(spec, sort_keys=False))
    policies = PolicySet(str(ROOT / "policies"))
    evaluation = Evaluator(policies, load_catalog(), TODAY, fix_estimates=0).evaluate_spec(
        str(file)
    )
    result = evaluation.result
    assert result.estimate is not None and evaluation.spec is not None
    steps = result.estimate.work_steps
    assert 300_000 < steps < 1_000_000
    loaded = policies.for_team(evaluation.spec.metadata.team)
    ctx = RuleContext(evaluation.spec, result.estimate, loaded.policy, str(file), TODAY)
    priced: list[object] = []

    def price(edited: Any) -> Any:
        priced.append(edited)
        return result.estimate  # the spec's own figures: every candidate still fails

    assert any(f.active for f in result.findings)
    attach_fixes(list(result.findings), ctx, loaded, str(file), price, 64)
    assert len(priced) == (WORK_STEPS - steps) // steps == 1


def _rules_a_proof_runs(policy: dict[str, Any], *, fail_on_warn: bool = False) -> set[str]:
    from gate.evaluation.findings import rules_that_may
    from gate.spec.loader import SourceMap
    from tests.conftest import make_policy

    loaded = LoadedPolicy(make_policy(policy), SourceMap(), ("test",))
    blocking = (Severity.ERROR, Severity.APPROVAL, *((Severity.WARN,) if fail_on_warn else ()))
    return {rule.ID for rule in rules_that_may(blocking, loaded)}


def test_a_fix_s_proof_runs_every_rule_that_may_block_under_the_policy() -> None:
    """A proof asks only whether a blocking finding is new: a warning rule (spot against
    on-demand: a second ASHA simulation) is left out unless the policy makes it block."""
    default = _rules_a_proof_runs({})
    assert {"BG110", "BG307", "BG402"} <= default
    assert "BG306" not in default and "BG304" not in default
    assert "BG203" in default  # a warning that grades a typo of a team as an error
    tightened = _rules_a_proof_runs(
        {"severity": {"BG306": "error", "BG110": "warn", "BG203": "off"}}
    )
    assert "BG306" in tightened
    assert not {"BG110", "BG203"} & tightened
    # a waived warning rule runs, so its waiver is used as in a full run (no BG902 invented)
    waiver = {"rule": "BG303", "reason": "tracked elsewhere", "expires": "2099-01-01"}
    assert "BG303" in _rules_a_proof_runs({"waivers": [waiver]})
    # under --fail-on warn a warning blocks: every rule the policy does not turn off runs
    assert {"BG306", "BG304", "BG303"} <= _rules_a_proof_runs({}, fail_on_warn=True)


def test_a_waived_warning_rule_does_not_make_a_proof_refuse_every_fix(tmp_path: Path) -> None:
    """Skipping a waived warning rule in a proof left its waiver unused: an unused-waiver
    finding (BG902), made an error by the policy, then refused every candidate fix."""
    shutil.copytree(ROOT / "policies", tmp_path / "policies")
    vision = tmp_path / "policies" / "vision.yaml"
    data = yaml.safe_load(vision.read_text())
    data.setdefault("waivers", []).append(
        {"rule": "BG304", "specs": "**", "reason": "fp32 on purpose: a numerics study",
         "expires": "2099-01-01"}
    )  # fmt: skip
    data.setdefault("severity", {})["BG902"] = "error"
    vision.write_text(yaml.safe_dump(data, sort_keys=False))
    spec = yaml.safe_load((ROOT / "examples" / "cifar-sweep.yaml").read_text())
    spec["resources"]["precision"] = "fp32"  # BG304, a warning, fires and is waived
    spec["search"]["max_trials"] = 200  # over the trial trigger: BG110 with fixes
    file = tmp_path / "experiments" / "vision" / "spec.yaml"
    file.parent.mkdir(parents=True)
    file.write_text(yaml.safe_dump(spec, sort_keys=False))
    result = _evaluate(tmp_path / "policies", file).result
    assert "BG902" not in _blocking(result.findings)
    large = [f for f in result.findings if f.rule_id == "BG110"]
    assert large and large[0].fixes


def test_a_rule_that_grades_a_violation_must_say_so() -> None:
    """Else a proof that leaves out its warnings could miss one it makes an error."""
    from gate.evaluation.findings import _severity_of
    from gate.policy.rules import REGISTRY, large_search, unknown_team
    from gate.policy.rules.base import Violation

    graded = Violation("x", (), Severity.ERROR)
    assert _severity_of(unknown_team, graded) is Severity.ERROR
    with pytest.raises(AssertionError, match="BG110"):
        _severity_of(large_search, graded)
    assert REGISTRY["BG203"] is unknown_team


def test_the_asha_example_is_simulated_once_per_plan_not_again_for_a_proof() -> None:
    from gate.estimate import schedule

    schedule._simulate.cache_clear()
    evaluator = Evaluator(PolicySet(str(ROOT / "policies")), load_catalog(), TODAY)
    result = evaluator.evaluate(str(ROOT / "examples" / "asha-bert-spot.yaml"))
    assert any(f.fixes for f in result.findings)
    # the expected case, and what early stopping saves; a proof's spot comparison is not run
    assert schedule._simulate.cache_info().misses == 2
