"""A team policy leaves the default policy out (``extends: none``).

``default.yaml`` holds the company-wide limits, prices and approvers, and it is the implicit
base of every team policy: a team file without ``extends`` still extends ``default``. A
policy that really stands alone says ``extends: none``; then none of the default's
settings apply to its specs (limits, the cloud the prices come from, required labels), so
every spec checked under it carries this finding, at the ``extends`` line of the policy.
``budget-gate policy check`` lists such policies too.

Passes::

    kind: Policy
    limits: {max_trial_cost: 400}          # extends default implicitly

Fails::

    kind: Policy
    extends: none
    limits: {max_trial_cost: 400}
"""

from __future__ import annotations

from collections.abc import Iterator

from gate.errors import Location
from gate.policy.model import Severity

ID = "BG903"
SLUG = "extends-none"
TITLE = "Policy leaves the default policy"
DEFAULT_SEVERITY = Severity.WARN


def check_policy(chain: tuple[str, ...], left_at: Location | None) -> Iterator[str]:
    """Yield a message when the chain ends with ``extends: none`` instead of ``default``."""
    if left_at is not None:
        yield (
            f"policy {' ← '.join(chain)} says extends: none: the default policy's limits, "
            "prices and approvers do not apply"
        )
