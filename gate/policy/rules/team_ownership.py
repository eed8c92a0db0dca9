"""The spec claims a team whose policy does not own its path, or leaves the team that does.

``metadata.team`` picks the policy that judges a spec and the budget it spends, so a spec
must not choose it freely: ``experiments/nlp/a.yaml`` would pass as ``team: vision`` under
vision's higher limits and be charged to vision's budget. A team policy says which specs
are its own with ``owns.specs`` (gitignore-style globs of repository paths, the same
dialect as waivers and the Action's ``specs``). A spec that claims a team whose
``owns.specs`` do not match its path fails, and so does a spec in a path some team owns
that claims another team or none; the finding names the owner. A team whose policy states
no ``owns.specs`` keeps today's behaviour: any spec may claim it, and the report says so
in a note. Specs in no team's paths that claim no team are not checked.

Passes (``policies/nlp.yaml``: ``owns: {specs: [experiments/nlp/**]}``),
``experiments/nlp/a.yaml``::

    metadata: {name: sweep, team: nlp}

Fails, ``experiments/nlp/a.yaml``::

    metadata: {name: sweep, team: vision}     # belongs to nlp
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation
from gate.spec.globs import matches_in_repository

ID = "BG204"
SLUG = "team-ownership"
TITLE = "Spec claims a team that does not own it"
DEFAULT_SEVERITY = Severity.ERROR


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Yield a violation when the spec's path and its ``metadata.team`` disagree."""
    path, team = ctx.repo_path, ctx.spec.metadata.team
    holders = sorted(
        t
        for t, owns in ctx.owners.items()
        if owns.specs and matches_in_repository(owns.specs, path)
    )
    if team in holders:
        return
    claimed = ctx.owners.get(team) if team is not None else None
    owner = _owner(holders)
    if claimed is not None and claimed.specs:
        yield Violation(
            f"{path} is not one of team {team}'s specs (owns.specs: "
            f"{', '.join(claimed.specs)}); {owner}",
            ("metadata", "team") if team is not None else ("metadata",),
        )
    elif holders:
        who = f"team {team}" if team is not None else "no team"
        yield Violation(
            f"{path} belongs to {_names(holders)} (owns.specs), but claims {who}; {owner}",
            ("metadata", "team") if team is not None else ("metadata",),
        )


def _owner(holders: list[str]) -> str:
    if not holders:
        return "no team owns it — move it under the team's paths, or add it to its owns.specs"
    return f"set metadata.team: {holders[0]}" + (
        f" (or one of {', '.join(holders[1:])})" if len(holders) > 1 else ""
    )


def _names(holders: list[str]) -> str:
    return "team " + holders[0] if len(holders) == 1 else "teams " + ", ".join(holders)
