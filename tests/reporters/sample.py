"""The shared sample reports every format's golden files are rendered from.

``sample_report()`` has one spec of each outcome, every severity, a waived finding, a
finding without a location, a cost diff against ``main`` (changed, added, unpriced and
deleted specs) and a fixed render context. ``hostile_report()`` puts markup, mentions
and control characters in every string a spec can reach.
"""

from __future__ import annotations

from gate.errors import Location, Problem
from gate.evaluation.diff import compare
from gate.evaluation.report import RenderContext, Report, SpecResult
from gate.policy.findings import Edit, Finding, Fix, Outcome
from gate.policy.model import Severity
from gate.policy.rules import all_rule_ids, rule_info
from tests.conftest import make_estimate, make_spec

CONTEXT = RenderContext(
    repository="acme/ml-experiments",
    workflow="budget-gate",
    policy_dir="policies",
    base_ref="main",
)
SOURCE = "test catalog (median list prices)"
DATE = "2026-11-01"


def _estimate(overrides: dict | None = None, price: str = "4"):
    return make_estimate(make_spec(overrides), price=price)


def _loc(file: str, line: int, col: int = 3) -> Location:
    return Location(file, line, col)


GRID_BASE = {"search": {"strategy": "grid", "parameters": {"lr": {"values": [1, 2, 3]}}}}
GRID_HEAD = {
    "resources": {"gpus_per_trial": 2},
    "search": {
        "strategy": "grid",
        "parameters": {"lr": {"values": [1, 2, 3, 4, 5, 6]}},
        "seeds": [0, 1],
    },
}


def _violation() -> SpecResult:
    file = "experiments/big-grid.yaml"
    findings = (
        Finding(
            "BG104",
            Severity.ERROR,
            "worst-case cost 192.00 USD exceeds max_experiment_cost 100.00 USD",
            _loc(file, 12),
            fixes=(
                Fix(
                    (Edit(("search", "parameters", "lr", "values"), [1, 2, 3]),),
                    "worst-case 6 trials, 6 waves of 1 (2 GPUs at once), 12.00 h, 96.00 USD, "
                    "16.00 USD per trial",
                ),
                Fix(
                    (Edit(("workload", "max_epochs"), 5),),
                    "worst-case 12 trials, 12 waves of 1 (2 GPUs at once), 12.00 h, 96.00 USD, "
                    "8.00 USD per trial",
                ),
            ),
        ),
        Finding("BG201", Severity.ERROR, "required label 'cost-center' is missing", _loc(file, 5)),
        Finding(
            "BG110",
            Severity.APPROVAL,
            "12 trials is over the approval trigger of 8",
            _loc(file, 12),
        ),
        Finding(
            "BG304",
            Severity.WARN,
            "fp32 on A100-80GB: bf16/fp16 mixed precision roughly halves GPU-hours",
            _loc(file, 9, 14),
        ),
        Finding(
            "BG102",
            Severity.ERROR,
            "worst-case trial time 60.00 h exceeds max_trial_hours 48 h",
            _loc(file, 7),
            waived_by="long runs approved by the board",
        ),
        Finding("BG901", Severity.WARN, "waiver for BG103 expired on 2026-01-31", None),
    )
    return SpecResult(
        file,
        Outcome.VIOLATION,
        name="big-grid",
        policy="vision ← default",
        fingerprint="sha256:" + "1" * 64,
        estimate=_estimate({**GRID_HEAD, "workload": {"max_epochs": 20}}),
        findings=findings,
    )


def _approval() -> SpecResult:
    file = "experiments/llm.yaml"
    return SpecResult(
        file,
        Outcome.APPROVAL_REQUIRED,
        name="llm-lora",
        policy="default",
        fingerprint="sha256:" + "2" * 64,
        estimate=_estimate({"resources": {"accelerator": "H100"}}, price="8"),
        findings=(
            Finding(
                "BG112", Severity.APPROVAL, "H100 needs approval for this team", _loc(file, 8, 16)
            ),
        ),
    )


def _passing() -> SpecResult:
    return SpecResult(
        "experiments/small.yaml",
        Outcome.PASS,
        name="small",
        policy="default",
        fingerprint="sha256:" + "3" * 64,
        estimate=_estimate(
            {"stopping": {"early_stopping": {"monitor": "val_loss", "patience": 2}}}
        ),
    )


def _invalid(file: str = "experiments/broken.yaml") -> SpecResult:
    return SpecResult(
        file,
        Outcome.INVALID,
        errors=(
            Problem(
                "unknown key 'gpus_per_trail' in resources",
                _loc(file, 9),
                "did you mean 'gpus_per_trial'?",
            ),
            Problem("file could not be read"),
        ),
    )


def sample_report() -> Report:
    """Four specs, every outcome but a backend error, and a diff against main."""
    results = (_violation(), _approval(), _passing(), _invalid())
    base_violation = SpecResult(
        results[0].file,
        Outcome.PASS,
        estimate=_estimate({**GRID_BASE, "workload": {"max_epochs": 10}}),
    )
    base_small = SpecResult("experiments/small.yaml", Outcome.PASS, estimate=results[2].estimate)
    deleted = SpecResult("experiments/old.yaml", Outcome.PASS, estimate=_estimate())
    diffs = (
        compare(results[0].file, base_violation, results[0]),
        compare(results[1].file, None, results[1]),
        compare(results[2].file, base_small, results[2]),
        compare(results[3].file, base_small, results[3]),
        compare("experiments/old.yaml", deleted, None),
        compare("experiments/gone-bad.yaml", _invalid("experiments/gone-bad.yaml"), None),
    )
    return Report(
        results=results,
        rules={rule_id: rule_info(rule_id) for rule_id in all_rule_ids()},
        catalog_source=SOURCE,
        catalog_date=DATE,
        version="0.1.0",
        context=CONTEXT,
        diffs=diffs,
    )


HOSTILE_NAME = (
    "<img src=x onerror=alert(1)> [click](javascript:alert(1))\n@org/team *bold* `code` \u202eevil"
)
HOSTILE_FILE = "specs/evil|name_<b>.yaml"
HOSTILE_LABEL = "a|b ## ~~x~~ $x$ &amp; _x_ \\"


def hostile_report() -> Report:
    """Every spec-derived string carries markup, HTML, mentions and line breaks."""
    result = SpecResult(
        HOSTILE_FILE,
        Outcome.VIOLATION,
        name=HOSTILE_NAME,
        policy="default",
        estimate=_estimate(),
        findings=(
            Finding(
                "BG202",
                Severity.ERROR,
                f"label environment={HOSTILE_LABEL!r} is not one of research",
                _loc(HOSTILE_FILE, 4, 17),
            ),
            Finding(
                "BG302",
                Severity.ERROR,
                "parameter '@here <script>' is a continuous range in a grid search,\r\nreally",
                _loc(HOSTILE_FILE, 20, 5),
            ),
        ),
    )
    return Report(
        results=(result,),
        rules={r: rule_info(r) for r in ("BG202", "BG302")},
        catalog_source=SOURCE,
        catalog_date=DATE,
        version="0.1.0",
        context=RenderContext(repository="acme/x", workflow="ci, nightly: <b>", base_ref="main"),
    )
