"""On a pull request, the author is not a member of the spec's team on GitHub.

A team's budget is spent by the people of that team. ``owns.github_teams`` in
``policies/<team>.yaml`` lists the GitHub teams (``org/slug``, or ``slug`` in the
repository's organization) whose members may change the team's specs; the pull-request
flow asks GitHub whether the pull request's author is an active member of one, and a spec
claiming the team fails when they are not, or when GitHub will not say (the token needs
``read:org``: an answer it cannot get is a refusal, not a pass). Outside a pull request
(``check``, ``verify``, the SkyPilot policy) there is no author to prove, and nothing is
checked; a policy without ``github_teams`` checks nothing either.

Passes (``policies/nlp.yaml``: ``owns: {github_teams: [acme/nlp]}``, the author is a member
of acme/nlp)::

    metadata: {name: sweep, team: nlp}

Fails (the author is not a member)::

    metadata: {name: sweep, team: nlp}
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.policy.model import Severity
from gate.policy.rules.base import RuleContext, Violation

ID = "BG205"
SLUG = "team-member"
TITLE = "Pull-request author is not in the team's GitHub teams"
DEFAULT_SEVERITY = Severity.ERROR


def check(ctx: RuleContext) -> Iterator[Violation]:
    """Yield a violation when the spender is proven to be in none of the team's GitHub teams."""
    spender, team, owns = ctx.spender, ctx.spec.metadata.team, ctx.policy.owns
    if spender is None or team is None or owns is None or not owns.github_teams:
        return
    if any(entry in spender.member_of for entry in owns.github_teams):
        return
    teams = ", ".join(owns.github_teams)
    unknown = [entry for entry in owns.github_teams if entry in spender.unknown]
    if unknown:
        yield Violation(
            f"GitHub would not say whether @{spender.login} (the pull request's author) is in "
            f"{', '.join(unknown)}, so they cannot spend team {team}'s budget — give the "
            "workflow a token that can read the organization's teams (read:org)",
            ("metadata", "team"),
        )
        return
    yield Violation(
        f"@{spender.login} (the pull request's author) is in none of team {team}'s GitHub "
        f"teams ({teams}), so cannot spend its budget — a member must open the pull request, "
        "or the team's owns.github_teams must list them",
        ("metadata", "team"),
    )
