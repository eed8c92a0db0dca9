"""Policies from contents read elsewhere (the base commit on GitHub), not from disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.errors import InputError, InputErrors
from gate.policy.loader import PolicySet

DEFAULT = b"apiVersion: budget-gate/v1\nkind: Policy\nlimits: {max_trial_hours: 10}\n"
VISION = (
    b"apiVersion: budget-gate/v1\nkind: Policy\nextends: default\nlimits: {max_trial_hours: 20}\n"
)


def test_contents_stand_for_the_directory_which_is_never_read(tmp_path: Path) -> None:
    on_disk = tmp_path / "policies"
    on_disk.mkdir()
    (on_disk / "default.yaml").write_text("this is not read: [")
    policies = PolicySet(on_disk, {"default.yaml": DEFAULT, "vision.yaml": VISION})
    vision = policies.for_team("vision")
    assert vision.chain == ("vision", "default")
    assert vision.policy.limits.max_trial_hours == 20
    assert policies.for_team("nlp").policy.limits.max_trial_hours == 10  # no nlp.yaml


def test_positions_name_the_policy_directory_in_the_repository() -> None:
    bad = b"apiVersion: budget-gate/v1\nkind: Policy\nlimits: {max_trial_hours: -1}\n"
    with pytest.raises(InputErrors) as err:
        PolicySet("policies", {"default.yaml": bad}).for_team(None)
    assert str(err.value).startswith("policies/default.yaml:3:")


def test_a_missing_default_is_named_with_its_directory() -> None:
    with pytest.raises(InputError, match="policy 'default' not found in policies"):
        PolicySet("policies", {"vision.yaml": VISION}).for_team("vision")


NO_EXTENDS = b"apiVersion: budget-gate/v1\nkind: Policy\nlimits: {max_trial_cost: 5}\n"
SOLO = b"apiVersion: budget-gate/v1\nkind: Policy\nextends: none\nlimits: {max_trial_cost: 5}\n"


def test_default_is_the_implicit_base_of_a_team_policy() -> None:
    vision = PolicySet("policies", {"default.yaml": DEFAULT, "vision.yaml": NO_EXTENDS})
    loaded = vision.for_team("vision")
    assert loaded.chain == ("vision", "default")
    assert loaded.policy.limits.max_trial_hours == 10  # from default
    assert loaded.left_default is None


def test_extends_none_leaves_default_out_and_says_where() -> None:
    loaded = PolicySet("policies", {"default.yaml": DEFAULT, "solo.yaml": SOLO}).for_team("solo")
    assert loaded.chain == ("solo",)
    assert loaded.policy.limits.max_trial_hours is None
    assert str(loaded.left_default) == "policies/solo.yaml:3:10"


@pytest.mark.parametrize("value", ["x" * 300, "../etc/passwd", "Default", "[default]"])
def test_extends_is_validated_before_any_file_lookup(value: str, tmp_path: Path) -> None:
    (tmp_path / "default.yaml").write_bytes(DEFAULT)
    (tmp_path / "team.yaml").write_text(
        f"apiVersion: budget-gate/v1\nkind: Policy\nextends: {value}\n", encoding="utf-8"
    )
    with pytest.raises(InputError) as err:
        PolicySet(tmp_path).for_team("team")
    assert str(err.value).startswith(f"{tmp_path}/team.yaml:3:10: extends: ")
    assert "is not a policy name" in str(err.value)


def test_unknown_rule_ids_in_severity_and_waivers_are_refused() -> None:
    bad = DEFAULT + (
        b"severity: {BG999: error, BG104: warn}\n"
        b"waivers: [{rule: BG998, specs: x.yaml, reason: because, expires: 2099-01-01}]\n"
    )
    with pytest.raises(InputErrors) as err:
        PolicySet("policies", {"default.yaml": bad}).for_team(None)
    assert [str(e) for e in err.value.errors] == [
        "policies/default.yaml:4:12: severity: BG999 is not a rule — budget-gate rules lists "
        "the rule ids",
        "policies/default.yaml:5:18: waivers[0]: BG998 is not a rule — budget-gate rules "
        "lists the rule ids",
    ]


def test_a_misspelt_rule_id_key_is_named_by_its_key_not_a_placeholder() -> None:
    """``severity: {BG3O3: error}`` (letter O) said ``write [key] as a rule id``."""
    bad = DEFAULT + b"severity: {BG3O3: error}\n"
    with pytest.raises(InputErrors) as err:
        PolicySet("policies", {"default.yaml": bad}).for_team(None)
    assert [str(e) for e in err.value.errors] == [
        "policies/default.yaml:4:12: severity.BG3O3: 'BG3O3' is not a rule id such as BG104 "
        "— write the key as a rule id such as BG104",
    ]


def test_load_all_reports_every_broken_policy_and_no_other_file() -> None:
    broken = b"apiVersion: budget-gate/v1\nkind: Policy\nlimits: {max_trial_hours: -1}\n"
    files = {"default.yaml": DEFAULT, "nlp.yaml": broken, "tests/x.yaml": b"not a policy"}
    with pytest.raises(InputErrors) as err:
        PolicySet("policies", files).load_all()
    assert [str(e).split(":")[0] for e in err.value.errors] == ["policies/nlp.yaml"]
    good = PolicySet("policies", {"default.yaml": DEFAULT, "vision.yaml": VISION})
    assert [p.chain for p in good.load_all()] == [("default",), ("vision", "default")]


def test_extends_none_in_default_itself_changes_nothing() -> None:
    plain = DEFAULT + b"extends: none\n"
    loaded = PolicySet("policies", {"default.yaml": plain}).for_team(None)
    assert (loaded.chain, loaded.left_default) == (("default",), None)


@pytest.mark.parametrize(
    ("team", "key", "at"),
    [
        (b"limits: {max_trial_hours: ~}\n", "limits.max_trial_hours", "3:27"),
        (b"limits:\n  max_trial_hours:\n", "limits.max_trial_hours", "4:19"),
    ],
)
def test_an_empty_value_over_an_inherited_one_is_refused_at_its_line(
    team: bytes, key: str, at: str
) -> None:
    """``max_trial_hours:`` with its number forgotten would lift default's limit unsaid."""
    vision = b"apiVersion: budget-gate/v1\nkind: Policy\n" + team
    policies = PolicySet("policies", {"default.yaml": DEFAULT, "vision.yaml": vision})
    with pytest.raises(InputError) as err:
        policies.for_team("vision")
    assert str(err.value).startswith(
        f"policies/vision.yaml:{at}: {key} is empty (null) in vision.yaml, which would lift "
        "the value default.yaml sets"
    )
    own = vision.replace(b"~", b"30") if b"~" in team else vision.rstrip() + b" 30\n"
    assert policies_with(own).for_team("vision").policy.limits.max_trial_hours == 30


def test_an_empty_value_over_an_empty_one_is_no_lift() -> None:
    vision = b"apiVersion: budget-gate/v1\nkind: Policy\nlimits: {max_trial_cost: ~}\n"
    loaded = policies_with(vision).for_team("vision")
    assert loaded.policy.limits.max_trial_cost is None
    assert loaded.policy.limits.max_trial_hours == 10


def policies_with(vision: bytes) -> PolicySet:
    return PolicySet("policies", {"default.yaml": DEFAULT, "vision.yaml": vision})
