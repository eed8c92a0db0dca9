"""The spec's team has no policy of its own and is not a team the policy knows.

``metadata.team`` picks ``policies/<team>.yaml``; a team without that file gets the
default policy, and with it none of the team's budget, limits or approvers. A typo
(``atlsa`` for ``atlas``) would do that without a word, so it never passes silently: the
finding names the policy that applied and the closest known team. Teams that use the
default policy on purpose are listed under ``teams:`` in the policy (usually
``default.yaml``, as ``budget-gate init`` writes it). The finding is an error when the
policy lists its teams, or when the team is a typo of a known one (one or two letters
off: ``nlpp`` for ``nlp``, an edit a pre-commit hook must not let through); otherwise a
warning. A spec without ``metadata.team`` is not checked.

Passes (``policies/atlas.yaml`` exists, or policy ``teams: [atlas, nlp]``)::

    metadata: {name: sweep, team: atlas}

Fails (an error: a typo of ``atlas``; a warning for a team no known one is close to)::

    metadata: {name: sweep, team: atlsa}      # did you mean 'atlas'?
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation
from gate.words import closest

ID = "BG203"
SLUG = "unknown-team"
TITLE = "Unknown team"
DEFAULT_SEVERITY = Severity.WARN
VIOLATION_SEVERITY = True
"""An error when the policy lists its teams or the team is a typo of a known one."""


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Yield a violation when ``metadata.team`` has no policy file and is not listed."""
    team = ctx.spec.metadata.team
    listed = ctx.policy.teams
    if team is None or team in ctx.team_policies or team in (listed or ()):
        return
    if team == "default":  # the default policy's own name: no team's
        yield Violation(
            "team 'default' names the default policy, not a team: the default policy "
            "applies — name the team that owns the spec, or leave team: out",
            ("metadata", "team"),
            Severity.ERROR if listed is not None else None,
        )
        return
    known = sorted({*ctx.team_policies, *(listed or ())})
    typo = [name for name in known if _edits(team, name) <= _allowed_edits(name)]
    meant = typo[0] if typo else closest(team, known)
    close = [meant] if meant else []
    hint = f" — did you mean {close[0]!r}?" if close else ""
    if not close and listed is not None:
        hint = f" — add it to the policy's teams: or create {team}.yaml"
    where = f"has no policy file ({team}.yaml)"
    if listed is not None:
        where += " and is not in the policy's teams"
    yield Violation(
        f"team {team!r} {where}: the default policy applies{hint}",
        ("metadata", "team"),
        Severity.ERROR if listed is not None or typo else None,
    )


def _allowed_edits(name: str) -> int:
    """How many edits still read as a typo of ``name``: 1 up to 5 letters, then 2."""
    return 1 if len(name) <= 5 else 2


def _edits(a: str, b: str) -> int:
    """Edits from ``a`` to ``b``: insertions, deletions, substitutions, adjacent swaps.

    The optimal string alignment distance (Damerau-Levenshtein without re-editing), so
    ``atlsa`` is one edit from ``atlas``.
    """
    rows = [list(range(len(b) + 1))]
    for i, x in enumerate(a, 1):
        row = [i]
        for j, y in enumerate(b, 1):
            best = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + (x != y))
            if i > 1 and j > 1 and x == b[j - 2] and a[i - 2] == y:
                best = min(best, rows[-2][j - 2] + 1)
            row.append(best)
        rows.append(row)
    return rows[-1][-1]
