"""Money: exact decimals in, rounded strings out (rounding happens only when rendering)."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal
from typing import Annotated, Any

from gate.model import Before, Field, JsonSchema

MAX_MONEY = Decimal(10**15)
"""The largest amount: a quadrillion in any currency is a typo, and past 10^15 the estimate's
arithmetic (28 significant digits) could no longer round to a nanohour."""
MONEY_PLACES = 6
"""Amounts have at most six decimals (a millionth): 1e-30 per GPU-hour is not a price."""

AMOUNT_PATTERN = r"^[0-9]{1,16}(\.[0-9]{1,6})?$"
"""A quoted amount, as the JSON Schema and the models both take it."""
_AMOUNT_TEXT = re.compile(AMOUNT_PATTERN)


def _amount_text(value: Any) -> Any:
    """A quoted amount in the schema's digits only: no ``٣``, ``1_000``, ``1e3`` or `` 2 ``.

    Python's Decimal (and pydantic) read those as numbers, the JSON Schema and every other
    tool as text: a spec's ``max_trial_cost: "٣"`` was a cap of 3 to the gate alone.
    """
    if isinstance(value, str) and not _AMOUNT_TEXT.fullmatch(value):
        raise ValueError("a quoted amount is digits with at most six decimals, like '12.50'")
    return value


# NOTE: the JSON Schema is spelled out so it does not change with pydantic's Decimal schema.
Money = Annotated[
    Decimal,
    Field(ge=0, le=MAX_MONEY, decimal_places=MONEY_PLACES, allow_inf_nan=False),
    Before(_amount_text),  # NOTE: after Field, so pydantic checks the bounds as we do
    JsonSchema(
        {
            "anyOf": [
                {"type": "number", "minimum": 0, "maximum": 10**15},
                {"type": "string", "pattern": AMOUNT_PATTERN},
            ],
            "description": "An amount in the policy's currency: 0 to 10^15, at most six decimals.",
        }
    ),
]
"""A non-negative amount in the policy's currency, at most 10^15 with at most six decimals."""

CENT = Decimal("0.01")


def to_decimal(value: float | int | Decimal) -> Decimal:
    """Convert a YAML number to Decimal through its shortest repr, so 3.5 stays 3.5."""
    return value if isinstance(value, Decimal) else Decimal(str(value))


def fixed(amount: Decimal, places: int) -> Decimal:
    """Round half-up to ``places`` decimals; astronomically large values keep their precision.

    Zero is never astronomical, whatever its exponent (``0 / 1E-26`` is ``0E+26``).
    """
    if amount.is_zero():
        return Decimal(0).quantize(Decimal(1).scaleb(-places))
    if amount.adjusted() + places >= 27:  # past what the decimal context can quantize
        return amount
    return amount.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


def at_most(amount: Decimal, places: int) -> Decimal:
    """``amount`` rounded half-up to at most ``places`` decimals, and no longer than it was.

    112 stays 112 (not 112.000000000000), 1.2500000000001 is 1.25; astronomically large
    values keep their precision, as in :func:`fixed`.
    """
    exponent = amount.as_tuple().exponent
    if not isinstance(exponent, int) or exponent >= -places:
        return amount
    rounded = fixed(amount, places)
    if rounded is amount:
        return amount
    trimmed = rounded.normalize()  # NOTE: 100.0000000000 normalizes to 1E+2, so:
    return trimmed.quantize(Decimal(1)) if trimmed == trimmed.to_integral_value() else trimmed


def format_amount(amount: Decimal, places: int = 2) -> str:
    """Round half-up for display, with thousands separators (1,234.50); zero is never -0."""
    rounded = fixed(amount, places)
    if rounded is amount:
        return f"{amount:.3E}"
    return f"{rounded.copy_abs() if rounded.is_zero() else rounded:,}"


def format_money(amount: Decimal, currency: str) -> str:
    """Render an amount with its currency code, e.g. ``1,234.50 USD``."""
    return f"{format_amount(amount)} {currency}"


def format_small(amount: Decimal, places: int = 2) -> str:
    """Like :func:`format_amount`, with three significant digits below 1 (0.00321).

    Reconciled runs can be seconds long: their cost and GPU-hours would all read 0.00.
    """
    if amount == 0 or abs(amount) >= 1 or not amount.is_finite():
        return format_amount(amount, places)
    return format_amount(amount, max(places, 2 - amount.adjusted()))


def format_nonzero(amount: Decimal, places: int = 2) -> str:
    """Like :func:`format_amount`, but a figure that would round to zero shows 3 digits.

    A tiny spec costs 0.00276 USD, not "0.00 USD"; figures that round to something keep
    the usual places, so tables stay aligned.
    """
    if amount == 0 or not amount.is_finite() or abs(amount) >= Decimal(10) ** -places / 2:
        return format_amount(amount, places)
    return format_small(amount, places)
