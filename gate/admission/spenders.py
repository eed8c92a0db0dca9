"""Who may spend a team's budget at launch: its namespaces (Kueue) and users (SkyPilot).

A spec names its team and the launch uses that team's approval and budget; without a check,
anyone who can submit a workload or a task naming an approved spec spends them. A team
policy's ``owns.namespaces`` and ``owns.skypilot_users`` list who may; a team that lists
none lets anyone (pure).
"""

from __future__ import annotations

from gate.evaluation.evaluate import Evaluation
from gate.policy.model import Ownership


def namespace_refusal(evaluation: Evaluation, namespace: str, workload: str) -> str | None:
    """Why a Kueue workload in ``namespace`` may not spend its spec's team budget, or None."""
    team, owns = _team_owns(evaluation)
    owned = owns.namespaces if owns else []
    if not owned or namespace in owned:
        return None
    return (
        f"workload {workload} runs in namespace {namespace!r}, but {evaluation.result.file} "
        f"spends team {team}'s budget, which only namespaces {', '.join(owned)} may spend "
        f"(owns.namespaces) — submit it there, or add {namespace} to owns.namespaces in "
        f"team {team}'s policy"
    )


def user_refusal(
    evaluation: Evaluation, user: str | None, identities: tuple[str, ...], task: str
) -> str | None:
    """Why a SkyPilot ``user`` may not launch ``task`` under its spec's team, or None.

    ``identities`` are what a listed entry may match: the user's id, and their name unless
    anyone may choose it (a service account's).
    """
    team, owns = _team_owns(evaluation)
    owned = owns.skypilot_users if owns else []
    if not owned or any(entry in owned for entry in identities):
        return None
    who = f"user {user!r}" if user else "an unnamed user (the API server authenticates none)"
    return (
        f"task {task!r} is launched by {who}, but {evaluation.result.file} spends team "
        f"{team}'s budget, which only {', '.join(owned)} may spend (owns.skypilot_users) — "
        f"ask one of them to launch it, or add the user to owns.skypilot_users in team "
        f"{team}'s policy"
    )


def _team_owns(evaluation: Evaluation) -> tuple[str, Ownership | None]:
    """The spec's team and what its policy owns (None: no team, or a policy that owns none)."""
    spec, policy = evaluation.spec, evaluation.policy
    team = spec.metadata.team if spec is not None else None
    if team is None or policy is None:
        return "", None
    return team, policy.owns
