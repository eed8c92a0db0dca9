"""Amounts as the reports print them."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gate.money import format_amount


@pytest.mark.parametrize(
    ("amount", "places", "shown"),
    [
        (Decimal("1234.5"), 2, "1,234.50"),
        (Decimal("-1.505"), 2, "-1.51"),  # half-up, away from zero
        (Decimal("-0.0"), 5, "0.00000"),  # a policy's price of -0.0 (the fuzzer's case)
        (Decimal("-0.000001"), 2, "0.00"),  # rounds to zero: no minus sign before it
    ],
)
def test_amounts_round_half_up_and_zero_has_no_sign(amount, places, shown):
    assert format_amount(amount, places) == shown


def test_a_quoted_amount_in_plain_digits_is_read_exactly():
    from gate.spec.search import Stopping

    assert Stopping.model_validate({"max_trial_cost": "300.50"}).max_trial_cost == Decimal("300.50")
