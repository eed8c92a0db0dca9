"""The rule registry: an explicit map from rule id to rule module.

Spec rules implement ``check(ctx)``; the two waiver rules are applied by the verdict,
because they need the other findings, and so is the policy rule (about the policy's own
chain, reported in the policy file). Add a rule by writing its module and listing it here.
Rules are pure: they read the spec, the estimate, the policy and the budget status.
"""

from __future__ import annotations

from types import ModuleType

from gate.policy.findings import RuleInfo
from gate.policy.rules import (
    budget_key,
    cap_stops_every_trial,
    concurrent_gpus,
    continuous_in_grid,
    costly_experiment,
    deadline,
    epoch_time_understated,
    experiment_cost,
    expired_waiver,
    extends_none,
    fp32_on_tensor_cores,
    gpus_per_trial,
    ignored_setting,
    label_values,
    large_search,
    missing_labels,
    monthly_budget,
    monthly_budget_warning,
    no_quality_gate,
    no_stop_condition,
    restricted_accelerator,
    spot_dearer_than_on_demand,
    spot_without_checkpoints,
    team_member,
    team_ownership,
    trial_cost,
    trial_exceeds_node,
    trial_hours,
    unknown_team,
    unused_waiver,
)
from gate.policy.rules.base import Rule

_SPEC_RULES: tuple[Rule, ...] = (
    gpus_per_trial,
    trial_hours,
    trial_cost,
    experiment_cost,
    concurrent_gpus,
    large_search,
    costly_experiment,
    restricted_accelerator,
    monthly_budget,
    monthly_budget_warning,
    missing_labels,
    label_values,
    unknown_team,
    team_ownership,
    team_member,
    budget_key,
    no_stop_condition,
    continuous_in_grid,
    no_quality_gate,
    fp32_on_tensor_cores,
    spot_without_checkpoints,
    spot_dearer_than_on_demand,
    cap_stops_every_trial,
    epoch_time_understated,
    ignored_setting,
    trial_exceeds_node,
    deadline,
)
REGISTRY: dict[str, Rule] = {rule.ID: rule for rule in _SPEC_RULES}
"""Rules evaluated on every spec, by id."""

WAIVER_RULES: dict[str, ModuleType] = {m.ID: m for m in (expired_waiver, unused_waiver)}
"""Rules about the policy's waivers, applied by the verdict."""

POLICY_RULES: dict[str, ModuleType] = {m.ID: m for m in (extends_none,)}
"""Rules about the policy document itself, applied by the verdict."""


def rule_info(rule_id: str) -> RuleInfo:
    """The documentation record of any rule, spec or waiver."""
    module: Rule | ModuleType = (
        REGISTRY.get(rule_id) or WAIVER_RULES.get(rule_id) or POLICY_RULES[rule_id]
    )
    return RuleInfo(
        id=module.ID,
        slug=module.SLUG,
        title=module.TITLE,
        default_severity=module.DEFAULT_SEVERITY,
        help=(module.__doc__ or "").strip(),
    )


def all_rule_ids() -> list[str]:
    """Every rule id, sorted."""
    return sorted([*REGISTRY, *WAIVER_RULES, *POLICY_RULES])
