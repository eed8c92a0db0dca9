"""Price per GPU-hour: the packaged catalog, overridden by the team's policy.

Catalog prices are public list prices in USD (median over regions); a policy may set its
own price per accelerator and capacity, and a currency with an exchange rate from USD.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from pathlib import Path

from gate.errors import InputError, Location
from gate.estimate.settings import OwnedHardware, PricingPolicy
from gate.money import to_decimal
from gate.spec.trial import Capacity
from gate.words import closest


@dataclass(frozen=True, slots=True)
class Catalog:
    """The packaged price catalog: USD per GPU-hour by accelerator, cloud and capacity."""

    source: str
    date: str
    currency: str
    prices: dict[str, dict[str, dict[str, Decimal]]]

    @property
    def accelerators(self) -> list[str]:
        """Every accelerator the catalog prices."""
        return sorted(self.prices)


@dataclass(frozen=True, slots=True)
class Quote:
    """A resolved price per GPU-hour and where it came from."""

    accelerator: str
    capacity: Capacity
    per_gpu_hour: Decimal
    currency: str
    basis: str
    cloud: str | None = None
    """The catalog cloud the price is of (``None``: a policy's own price)."""


_DATA = Path(__file__).resolve().parent.parent / "data"
"""The package's data (a directory: pip unpacks packages; importlib.resources costs a cold
check 10 ms for the same path)."""


@cache
def load_catalog() -> Catalog:
    """Read the catalog shipped inside the package (parsed once per process)."""
    raw = json.loads((_DATA / "prices.json").read_text("utf-8"))
    prices = {
        accel: {
            cloud: {cap: Decimal(value) for cap, value in caps.items()}
            for cloud, caps in clouds.items()
        }
        for accel, clouds in raw["prices"].items()
    }
    return Catalog(raw["source"], raw["date"], raw["currency"], prices)


def quote(
    catalog: Catalog,
    policy: PricingPolicy,
    accelerator: str,
    capacity: Capacity,
    cloud: str | None,
    *,
    location: Location | None = None,
    currency_at: Callable[[], Location | None] | None = None,
) -> Quote:
    """Resolve the price per GPU-hour for one accelerator, in the policy's currency.

    ``location`` is where the spec names the accelerator, ``currency_at`` finds where the
    policy names its currency (a catalog price it cannot convert is the policy's to fix).
    """
    override = policy.prices.overrides.get(accelerator)
    price = override.price_for(capacity) if override else None
    if price is not None:
        return Quote(accelerator, capacity, price, policy.currency, "policy override")
    owned = policy.prices.owned.get(accelerator)
    if capacity is Capacity.RESERVED and owned is not None:
        basis = f"owned hardware at {owned.utilization:.0%} utilization"
        return Quote(accelerator, capacity, owned_price_per_gpu_hour(owned), policy.currency, basis)
    clouds = catalog.prices.get(accelerator)
    if clouds is None:
        raise InputError(
            f"unknown accelerator {accelerator!r}",
            location=location,
            hint=_known_hint(accelerator, [*catalog.accelerators, *policy.prices.overrides]),
        )
    if capacity is Capacity.RESERVED:
        raise InputError(
            f"no price for reserved {accelerator}: the public catalog has only on-demand and spot",
            location=location,
            hint=f"set prices.owned.{accelerator} (purchase, power, utilization) or "
            f"prices.overrides.{accelerator}.reserved in the team policy",
        )
    usd, basis, cloud = _catalog_price(clouds, accelerator, capacity.value, cloud, location)
    price = _convert(usd, policy, currency_at)
    if policy.currency != "USD":  # NOTE: converted: the rate is said, as every fallback is
        rate = policy.prices.usd_exchange_rate
        basis += f"; USD catalog price × {rate:f}, the policy's prices.usd_exchange_rate"
    return Quote(accelerator, capacity, price, policy.currency, basis, cloud)


HOURS_PER_YEAR = 8760


def quoter(policy: PricingPolicy, cloud: str | None) -> Callable[[str, Capacity], Quote | None]:
    """Prices by accelerator and capacity under ``policy``; ``None`` where it has none.

    For what was tagged on runs (reconcile, calibrate), where a missing price is the
    caller's to say, not bad input.
    """
    catalog = load_catalog()

    def price(accelerator: str, capacity: Capacity) -> Quote | None:
        try:
            return quote(catalog, policy, accelerator, capacity, cloud)
        except InputError:
            return None

    return price


def electricity_per_gpu_year(power_kw: Decimal, pue: Decimal, price_per_kwh: Decimal) -> Decimal:
    """Average kW × 8760 h × PUE × price per kWh (DOMAIN.md §2)."""
    return power_kw * HOURS_PER_YEAR * pue * price_per_kwh


def owned_price_per_gpu_hour(hw: OwnedHardware) -> Decimal:
    """(Purchase ÷ amortization hours + power + facility + staff) per GPU-hour ÷ utilization.

    Dividing by expected utilization charges idle hours to the useful ones: below about 40 %
    utilization renting is usually cheaper.
    """
    years = to_decimal(hw.amortization_years)
    power = electricity_per_gpu_year(
        to_decimal(hw.power_kw), to_decimal(hw.pue), hw.electricity_per_kwh
    )
    yearly = hw.purchase_price / years + power + hw.facility_per_gpu_year + hw.staff_per_gpu_year
    return yearly / HOURS_PER_YEAR / to_decimal(hw.utilization)


def _catalog_price(
    clouds: dict[str, dict[str, Decimal]],
    accelerator: str,
    capacity: str,
    cloud: str | None,
    location: Location | None,
) -> tuple[Decimal, str, str]:
    offers = {name: caps[capacity] for name, caps in clouds.items() if capacity in caps}
    if cloud is not None:
        if cloud not in offers:
            raise InputError(
                f"the catalog has no {capacity} price for {accelerator} on {cloud!r}",
                location=location,
                hint=f"use one of: {', '.join(sorted(offers)) or 'none'}, or a policy override",
            )
        return offers[cloud], f"catalog median, {cloud} {capacity}", cloud
    if not offers:
        raise InputError(
            f"the catalog has no {capacity} price for {accelerator}",
            location=location,
            hint="choose another capacity, or set a price in the policy's prices.overrides",
        )
    # NOTE: with no cloud named, take the dearest cloud's median: a gate must not understate.
    name = max(offers, key=lambda c: offers[c])
    return (
        offers[name],
        f"catalog median, highest of {len(offers)} clouds ({name}) {capacity}",
        name,
    )


def _convert(
    usd: Decimal, policy: PricingPolicy, currency_at: Callable[[], Location | None] | None
) -> Decimal:
    """A catalog price in the policy's currency; refused at the policy's ``currency``."""
    if policy.currency == "USD":
        return usd
    rate = policy.prices.usd_exchange_rate
    if rate is None:
        raise InputError(
            f"policy currency is {policy.currency} but catalog prices are in USD, and "
            "prices.usd_exchange_rate does not convert them",
            location=currency_at() if currency_at is not None else None,
            hint="set prices.usd_exchange_rate in the policy, or price this accelerator in "
            "prices.overrides",
        )
    return usd * rate


def closest_accelerator(name: str, known: list[str]) -> str | None:
    """The known name ``name`` most likely means: the same in another case, else a close one."""
    return same_in_any_case(name, known) or closest(name, known)


def same_in_any_case(name: str, known: Iterable[str]) -> str | None:
    """The known name that is ``name`` in some case (``a10g``: ``A10G``), itself first."""
    known = list(known)
    if name in known:
        return name
    return next((k for k in known if k.lower() == name.lower()), None)


def _known_hint(name: str, known: list[str]) -> str:
    suggestion = closest_accelerator(name, known)
    prefix = f"did you mean {suggestion!r}? " if suggestion else ""
    return f"{prefix}known accelerators: {', '.join(sorted(set(known)))}"
