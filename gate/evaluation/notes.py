"""What a verdict took as given, said beside it in every format (pure).

A moment other than now (``--as-of``); no team, where teams have policies; a team that no
policy proves (``owns.specs``); a cloud the spec names over the policy's ``prices.cloud``; a
measured figure over the spec's.
"""

from __future__ import annotations

from collections.abc import Collection

from gate.estimate.measured import Measured, overruled
from gate.policy.model import Policy
from gate.spec.experiment import Experiment
from gate.spec.loader import STDIN_NAME


def verdict_notes(
    spec: Experiment,
    policy: Policy,
    measured: Measured | None,
    as_of: str | None,
    team_files: Collection[str],
    repo_path: str = "",
    owners: Collection[str] = (),
) -> tuple[str, ...]:
    """Each thing the verdict took as given, in words.

    ``team_files``: the teams with a policy file of their own, where ``owns.specs`` goes;
    ``repo_path``: the spec's path in the repository, which the ``owns.specs`` of the
    teams in ``owners`` match.
    """
    when = f"judged as of {as_of} (--as-of), not now: waivers, approvals and the "
    notes = [when + "budget month are those of that moment"] if as_of else []
    unplaced = _unplaced(repo_path, owners)
    if unplaced is not None:
        notes.append(
            f"owns.specs and waivers not applied: the spec was read from {unplaced}, no path "
            "in the repository that a team's globs match — check it by its path there"
        )
    team = spec.metadata.team
    if team is None and (team_files or policy.teams):
        notes.append(_no_team(policy, team_files))
    if team is not None and not (policy.owns is not None and policy.owns.specs):
        notes.append(
            f"team {team} is taken as the spec declares it: no policy states which specs "
            f"it owns{_where_owns_goes(team, policy, team_files)}, so any spec may claim it"
        )
    cloud, default = spec.resources.cloud, policy.prices.cloud
    if cloud is not None and cloud != default:
        instead = (
            f"the policy's prices.cloud {default}"
            if default
            else "the dearest cloud's, the policy naming none (prices.cloud)"
        )
        notes.append(
            f"priced at {cloud}'s catalog price as resources.cloud says, not at {instead}: "
            "the spec's word, held at launch by the SkyPilot policy only"
        )
    rate, mfu = policy.reliability.failure_rate, policy.estimation.mfu
    notes.extend(overruled(spec, measured, rate, mfu))
    return tuple(notes)


def _no_team(policy: Policy, team_files: Collection[str]) -> str:
    """The default policy judged a spec that names no team, where teams have policies.

    NOTE: said for a team with no policy file, but not for no team at all: a spec that left
    ``team`` out fell back to the default policy (looser than its team's) without a word.
    """
    known = ", ".join(sorted({*team_files, *(policy.teams or ())}))
    return (
        f"the spec names no team, so the default policy judged it, not a team's ({known}): "
        "write team: NAME under metadata (or in the file's budget-gate facts) to be judged by "
        "its team's policy"
    )


def _where_owns_goes(team: str, policy: Policy, team_files: Collection[str]) -> str:
    """Where the team's ``owns.specs`` would go: its own file, or one to add.

    A team no policy knows (a typo: BG203 says so) gets no file to create.
    """
    if team in team_files:
        return f" (owns.specs in {team}.yaml)"
    if policy.teams is not None and team not in policy.teams:
        return ""
    return f" (team {team} has no policy file: add {team}.yaml with owns.specs)"


def _unplaced(repo_path: str, owners: Collection[str]) -> str | None:
    """Where a spec was read from, when teams own paths and it has none in the repository.

    NOTE: the same bytes from stdin (or ``<(cat x.yaml)``, a copy elsewhere) passed, where
    their path in the repository drew BG204; now the output says so.
    """
    if not owners:
        return None
    if repo_path == STDIN_NAME:
        return "stdin"
    # NOTE: RepoPaths names a spec outside absolutely; a path given as is may climb out
    if repo_path.startswith(("/", "../")) or repo_path == "..":
        return f"{repo_path}, outside the repository"
    return None
