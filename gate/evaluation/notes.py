"""What a verdict took as given, said beside it in every format (pure).

A moment other than now (``--as-of``); a team that no policy proves (``owns.specs``); a
cloud the spec names over the policy's ``prices.cloud``; a measured figure over the spec's.
"""

from __future__ import annotations

from gate.estimate.measured import Measured, overruled
from gate.policy.model import Policy
from gate.spec.experiment import Experiment


def verdict_notes(
    spec: Experiment, policy: Policy, measured: Measured | None, as_of: str | None
) -> tuple[str, ...]:
    """Each thing the verdict took as given, in words."""
    when = f"judged as of {as_of} (--as-of), not now: waivers, approvals and the "
    notes = [when + "budget month are those of that moment"] if as_of else []
    team = spec.metadata.team
    if team is not None and not (policy.owns is not None and policy.owns.specs):
        notes.append(
            f"team {team} is taken as the spec declares it: no policy states which specs "
            f"it owns (owns.specs in {team}.yaml), so any spec may claim it"
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
