"""The prices a spec is estimated at: its own capacity's, and on-demand's beside spot."""

from __future__ import annotations

from gate.errors import InputError
from gate.estimate.prices import Catalog, Quote, quote
from gate.policy.loader import PolicySet
from gate.policy.model import Policy
from gate.spec.experiment import Experiment
from gate.spec.loader import LoadedDoc
from gate.spec.trial import Capacity


def spec_quote(
    catalog: Catalog,
    policies: PolicySet,
    spec: Experiment,
    policy: Policy,
    doc: LoadedDoc,
    capacity: Capacity | None = None,
    cloud: str | None = None,
) -> Quote:
    """The price of the spec's accelerator at ``capacity`` (its own, unless given).

    On the cloud the spec or the policy names, else ``cloud``, else the dearest.

    Raises:
        gate.errors.InputError: no price for it, at the spec's accelerator line.
    """
    team = spec.metadata.team
    return quote(
        catalog,
        policy,
        spec.resources.accelerator,
        capacity or spec.resources.capacity,
        spec.resources.cloud or policy.prices.cloud or cloud,
        location=doc.source_map.locate(("resources", "accelerator")),
        currency_at=lambda: policies.for_team(team).source_map.locate(("currency",)),
    )


def on_demand_quote(
    catalog: Catalog,
    policies: PolicySet,
    spec: Experiment,
    policy: Policy,
    doc: LoadedDoc,
    spot: Quote,
) -> Quote | None:
    """The on-demand price a spot spec is compared with, on the spot price's own cloud.

    NOTE: with no cloud named each capacity is priced at its dearest cloud: spot at one
    cloud's and on-demand at another's made up a saving no cloud offers, and hid BG306.
    """
    if spec.resources.capacity is not Capacity.SPOT:
        return None
    try:
        return spec_quote(catalog, policies, spec, policy, doc, Capacity.ON_DEMAND, spot.cloud)
    except InputError:
        return None
