"""Contracts between parts: schemas match models, shipped files load, imports stay light."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import jsonschema
import pytest

from gate.commands.schema import SCHEMAS, render_schema
from gate.policy.loader import PolicySet
from gate.policy.model import Severity
from gate.reporters import REPORTERS, load_reporter
from gate.spec.loader import load_file
from tests.conftest import ROOT

EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
POLICIES = sorted((ROOT / "policies").glob("*.yaml"))


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_committed_schemas_match_the_models(name):
    committed = (ROOT / "schemas" / name).read_text(encoding="utf-8")
    assert committed == render_schema(SCHEMAS[name]), "run: budget-gate schema --write"


@pytest.mark.parametrize("name", [*sorted(SCHEMAS), "report.schema.json"])
def test_schemas_are_valid_json_schema(name):
    schema = json.loads((ROOT / "schemas" / name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("path", EXAMPLES + POLICIES, ids=lambda p: p.name)
def test_shipped_yaml_names_its_schema_and_validates_against_it(path):
    first = path.read_text(encoding="utf-8").splitlines()[0]
    kind = "experiment" if path.parent.name == "examples" else "policy"
    assert first == f"# yaml-language-server: $schema=../schemas/{kind}.schema.json"
    schema = json.loads((ROOT / "schemas" / f"{kind}.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(load_file(path).data, schema)


def test_the_json_schema_rejects_what_the_models_reject():
    schema = json.loads((ROOT / "schemas" / "experiment.schema.json").read_text(encoding="utf-8"))
    data = load_file(EXAMPLES[0]).data
    bad = {**data, "resources": {**data["resources"], "gpus_per_trail": 2}}
    with pytest.raises(jsonschema.ValidationError, match="gpus_per_trail"):
        jsonschema.validate(bad, schema)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("workload", "model", "parameters"), -8.0e9),  # a size's bounds are keywords
        (("workload", "model", "tokens_per_epoch"), 0),
        (("stopping", "max_trial_cost"), "\u0663"),  # an amount is the schema's digits
        (("stopping", "max_trial_cost"), "1e3"),
    ],
)
def test_the_json_schema_and_check_refuse_the_same_numbers(path, value, tmp_path):
    schema = json.loads((ROOT / "schemas" / "experiment.schema.json").read_text(encoding="utf-8"))
    data = json.loads(json.dumps(load_file(ROOT / "examples" / "llm-finetune-grid.yaml").data))
    node = data
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    if path[1] == "model":
        node.setdefault("parameters", 8.0e9)
        node.setdefault("tokens_per_epoch", 1.0e9)
        data["workload"].pop("epoch_minutes", None)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, schema)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(data), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "gate", "check", str(spec)],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 3, proc.stdout + proc.stderr


@pytest.mark.parametrize("team", [p.stem for p in POLICIES])
def test_every_shipped_policy_loads(team):
    loaded = PolicySet(ROOT / "policies").for_team(team)
    assert loaded.chain[0] == team
    assert loaded.chain[-1] == "default"


def test_examples_show_each_verdict():
    expected = {
        "cifar-sweep.yaml": 0,
        "llm-finetune-grid.yaml": 2,
        "imagenet-bruteforce.yaml": 1,
        "hyperband-vit.yaml": 0,
        "asha-bert-spot.yaml": 2,
    }
    for name, code in expected.items():
        proc = subprocess.run(
            [sys.executable, "-m", "gate", "check", f"examples/{name}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == code, (name, proc.stdout, proc.stderr)


def test_check_imports_no_heavy_dependency():
    probe = (
        "import sys\n"
        "from gate.cli import main\n"
        "light = not {'pydantic', 'yaml'} & set(sys.modules)\n"
        "code = main(['check', 'examples/cifar-sweep.yaml'])\n"
        "heavy = {'mlflow', 'github', 'jsonschema', 'rich', 'requests', 'optuna', 'ray'}\n"
        "heavy |= {'sky', 'starlette', 'uvicorn', 'kubernetes'}\n"
        "heavy = sorted(heavy & set(sys.modules))\n"
        "print(light, code, heavy)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert proc.stdout.splitlines()[-1] == "True 0 []"


# What a plain check (no budget, no --tracking-uri, no calibration) must never load: the
# ledger's records, signatures, approvals and sums, MLflow, reconciliation, learning a
# calibration, a base version's diff, the glob engine for plain owned paths; nor PyYAML,
# for specs and policies in the plain style, which are read a line at a time.
NOT_ON_THE_CHECK_PATH = (
    "yaml",
    "gate.spec.yaml_walk",
    "mlflow",
    "sqlalchemy",
    "pathspec",
    "jsonschema",
    "gate.reconcile",
    "gate.calibrate",
    "gate.ledger.records",
    "gate.ledger.signing",
    "gate.ledger.approvals",
    "gate.ledger.budget",
    "gate.ledger.spend",
    "gate.ledger.snapshot",
    "gate.evaluation.diff",
    "gate.evaluation.importing",
    "gate.integrations.mlflow.client",
    "gate.ci",
)


@pytest.mark.parametrize(
    ("spec", "code"), [("examples/cifar-sweep.yaml", 0), ("examples/asha-bert-spot.yaml", 2)]
)
def test_a_check_without_a_budget_loads_only_the_pure_core(spec, code):
    probe = (
        "import sys\n"
        "from gate.cli import main\n"
        f"code = main(['check', {spec!r}])\n"
        f"loaded = [m for m in sys.modules if m.split('.')[0] in {NOT_ON_THE_CHECK_PATH!r}\n"
        f"          or any(m == p or m.startswith(p + '.') for p in {NOT_ON_THE_CHECK_PATH!r})]\n"
        "print(code, sorted(loaded))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert proc.stdout.splitlines()[-1] == f"{code} []"


def test_check_with_a_calibration_imports_no_mlflow(tmp_path):
    calibration = ROOT / "policies" / "tests" / "calibration.json"
    fixture = ROOT / "policies" / "tests" / "bg308-epoch-time-understated.yaml"
    spec = tmp_path / "understated.yaml"
    spec.write_text(fixture.read_text(encoding="utf-8").split("expect:")[0], encoding="utf-8")
    probe = (
        "import sys\n"
        "from gate.cli import main\n"
        f"code = main(['check', {str(spec)!r}, '--calibration', {str(calibration)!r}])\n"
        "print(code, sorted({'mlflow', 'sqlalchemy', 'requests'} & set(sys.modules)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert "BG308" in proc.stdout  # the calibration was used
    assert proc.stdout.splitlines()[-1] == "2 []"


def test_import_gate_and_its_guard_core_import_no_engine():
    probe = (
        "import sys\n"
        "import gate, gate.guard.core, gate.guard.limits, gate.integrations\n"
        "assert callable(gate.open_guard)\n"
        "print(sorted({'optuna', 'ray', 'mlflow', 'sqlalchemy'} & set(sys.modules)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert proc.stdout.splitlines()[-1] == "[]"


def test_every_severity_is_rendered_by_every_reporter():
    from gate.errors import Location
    from gate.evaluation.report import Report, SpecResult
    from gate.policy.findings import Finding, Outcome

    findings = tuple(
        Finding("BG101", s, f"{s.value} finding", Location("s.yaml", 1, 1)) for s in Severity
    )
    report = Report((SpecResult("s.yaml", Outcome.VIOLATION, name="n", findings=findings),))
    for name in REPORTERS:
        out = load_reporter(name).render(report)
        for severity in Severity:
            assert f"{severity.value} finding" in out


def test_the_pricing_page_estimate_table_is_generated_from_the_examples(capsys, monkeypatch):
    from gate.cli import main

    monkeypatch.chdir(ROOT)
    assert main(["estimate", "--summary", "--policy-dir", str(ROOT / "policies"), "examples/"]) == 0
    table = capsys.readouterr().out
    page = (ROOT / "docs" / "pricing.md").read_text(encoding="utf-8")
    start = page.index("<!-- estimate-summary:start -->\n") + len(
        "<!-- estimate-summary:start -->\n"
    )
    end = page.index("<!-- estimate-summary:end -->")
    assert page[start:end] == table, "regenerate: budget-gate estimate --summary examples/"


def test_committed_rules_page_matches_the_docstrings():
    from gate.commands.rules import render_rules_markdown
    from gate.policy.rules import all_rule_ids, rule_info

    committed = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    expected = render_rules_markdown([rule_info(r) for r in all_rule_ids()])
    assert committed == expected, "run: budget-gate rules --write"


def test_rule_anchors_are_the_ids_github_gives_the_headings():
    import re

    from gate.policy.rules import all_rule_ids, rule_info

    headings = re.findall(r"^## (.+)$", (ROOT / "docs" / "rules.md").read_text(), re.MULTILINE)
    # GitHub: lowercase, drop punctuation other than - and _, spaces become hyphens
    github_ids = [re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings]
    assert github_ids == [rule_info(r).anchor for r in all_rule_ids()]


def test_reporters_never_load_the_rule_registry_or_the_verdict():
    probe = (
        "import sys\n"
        "from gate.reporters import REPORTERS, load_reporter\n"
        "for name in REPORTERS: load_reporter(name)\n"
        "pure = {'gate.policy.rules', 'gate.policy.verdict', 'gate.evaluation.evaluate'}\n"
        "print(sorted(pure & set(sys.modules)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert proc.stdout.strip() == "[]"


def test_only_the_skypilot_policy_imports_skypilot():
    allowed = {
        "gate/integrations/skypilot.py",
        "gate/integrations/skypilot_endpoint.py",
        "gate/commands/serve.py",
    }
    importers = set()
    for path in sorted((ROOT / "gate").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            if any(n.split(".")[0] in {"sky", "starlette", "uvicorn"} for n in names):
                importers.add(path.relative_to(ROOT).as_posix())
    assert importers == allowed


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_schema_property_has_a_description(name):
    schema = json.loads(render_schema(SCHEMAS[name]))
    missing: list[str] = []

    def walk(node: object, where: str) -> None:
        if isinstance(node, dict):
            for key, value in node.get("properties", {}).items():
                if not value.get("description"):
                    missing.append(f"{where}.{key}")
            for key, value in node.items():
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for value in node:
                walk(value, where)

    walk(schema, "")
    assert missing == [], "document these fields with a docstring under the field"
