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
