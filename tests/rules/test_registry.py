"""The rule registry: every rule module registered, documented, named and tested."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pytest

import gate.policy.rules
from gate.policy.model import Severity
from gate.policy.rules import POLICY_RULES, REGISTRY, WAIVER_RULES, all_rule_ids, rule_info

RULES_DIR = Path(gate.policy.rules.__file__).parent
TESTS_DIR = Path(__file__).parent
NOT_RULES = {"__init__", "base", "waivers"}
ALL_RULES: list[ModuleType] = [*REGISTRY.values(), *WAIVER_RULES.values(), *POLICY_RULES.values()]


def _module_name(rule: ModuleType) -> str:
    return rule.__name__.rsplit(".", 1)[-1]


def _ids(rules):
    return [_module_name(r) for r in rules]


def test_every_rule_module_is_registered():
    files = {p.stem for p in RULES_DIR.glob("*.py")} - NOT_RULES
    assert files == {_module_name(r) for r in ALL_RULES}


def test_ids_are_unique_and_spec_and_waiver_rules_do_not_overlap():
    ids = [r.ID for r in ALL_RULES]
    assert len(ids) == len(set(ids))
    assert not set(REGISTRY) & set(WAIVER_RULES)
    assert not (set(REGISTRY) | set(WAIVER_RULES)) & set(POLICY_RULES)
    assert all_rule_ids() == sorted(ids)


def test_registry_keys_are_the_rule_ids():
    assert all(key == rule.ID for key, rule in REGISTRY.items())
    assert all(key == rule.ID for key, rule in WAIVER_RULES.items())
    assert all(key == rule.ID for key, rule in POLICY_RULES.items())


@pytest.mark.parametrize("rule", ALL_RULES, ids=_ids(ALL_RULES))
def test_rule_constants(rule: ModuleType):
    assert re.fullmatch(r"BG\d{3}", rule.ID)
    slug = rule.SLUG
    assert slug == _module_name(rule).replace("_", "-")
    assert isinstance(rule.TITLE, str)
    assert rule.TITLE.strip()
    assert isinstance(rule.DEFAULT_SEVERITY, Severity)


@pytest.mark.parametrize("rule", ALL_RULES, ids=_ids(ALL_RULES))
def test_rule_docstring_has_examples(rule: ModuleType):
    doc = rule.__doc__ or ""
    assert "Passes" in doc
    assert "Fails" in doc or "Needs approval" in doc


@pytest.mark.parametrize("rule", ALL_RULES, ids=_ids(ALL_RULES))
def test_rule_has_a_test_file(rule: ModuleType):
    assert (TESTS_DIR / f"test_{_module_name(rule)}.py").is_file()


@pytest.mark.parametrize("rule", list(REGISTRY.values()), ids=_ids(REGISTRY.values()))
def test_spec_rules_have_check(rule: ModuleType):
    assert callable(rule.check)


@pytest.mark.parametrize("rule", list(WAIVER_RULES.values()), ids=_ids(WAIVER_RULES.values()))
def test_waiver_rules_have_check_waivers(rule: ModuleType):
    assert callable(rule.check_waivers)


@pytest.mark.parametrize("rule", list(POLICY_RULES.values()), ids=_ids(POLICY_RULES.values()))
def test_policy_rules_have_check_policy(rule: ModuleType):
    assert callable(rule.check_policy)


@pytest.mark.parametrize("rule_id", all_rule_ids())
def test_rule_info(rule_id: str):
    info = rule_info(rule_id)
    module = REGISTRY.get(rule_id) or WAIVER_RULES.get(rule_id) or POLICY_RULES[rule_id]
    assert (info.id, info.slug, info.title, info.default_severity) == (
        module.ID,
        module.SLUG,
        module.TITLE,
        module.DEFAULT_SEVERITY,
    )
    assert info.help == (module.__doc__ or "").strip()
