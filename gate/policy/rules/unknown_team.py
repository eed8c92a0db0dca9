"""The spec's team has no policy of its own and is not a team the policy knows.

``metadata.team`` picks ``policies/<team>.yaml``; a team without that file gets the
default policy, and with it none of the team's budget, limits or approvers. A typo
(``atlsa`` for ``atlas``) would do that without a word, so it never passes silently: the
finding names the policy that applied and the closest known team. Teams that use the
default policy on purpose are listed under ``teams:`` in the policy (usually
``default.yaml``); once a policy lists its teams, any other team is an error instead of a
warning. A spec without ``metadata.team`` is not checked.

Passes (``policies/atlas.yaml`` exists, or policy ``teams: [atlas, nlp]``)::

    metadata: {name: sweep, team: atlas}

Fails (warning; an error when the policy lists ``teams``)::

    metadata: {name: sweep, team: atlsa}      # did you mean 'atlas'?
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation

ID = "BG203"
SLUG = "unknown-team"
TITLE = "Unknown team"
DEFAULT_SEVERITY = Severity.WARN


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Yield a violation when ``metadata.team`` has no policy file and is not listed."""
    team = ctx.spec.metadata.team
    listed = ctx.policy.teams
    if team is None or team in ctx.team_policies or team in (listed or ()):
        return
    known = sorted({*ctx.team_policies, *(listed or ())})
    close = difflib.get_close_matches(team, known, n=1, cutoff=0.6)
    hint = f" — did you mean {close[0]!r}?" if close else ""
    where = f"has no policy file ({team}.yaml)"
    if listed is not None:
        where += " and is not in the policy's teams"
    yield Violation(
        f"team {team!r} {where}: the default policy applies{hint}",
        ("metadata", "team"),
        Severity.ERROR if listed is not None else None,
    )
