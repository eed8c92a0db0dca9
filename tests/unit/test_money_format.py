"""Amounts as the reports print them."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gate.money import at_most, format_amount


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


@pytest.mark.parametrize(
    ("amount", "places", "kept"),
    [
        ("112", 12, "112"),  # no trailing zeros added
        ("1.485617084816666666666666667", 12, "1.485617084817"),
        ("100.00000000000001", 12, "100"),  # not 1E+2
        ("1.25000000000001", 12, "1.25"),
        ("0.0000000000004", 12, "0"),
        ("0.0000000000005", 12, "1E-12"),  # half up
        ("4.117065123456789", 8, "4.11706512"),
        ("1E+30", 12, "1E+30"),  # past what the context rounds: kept
    ],
)
def test_at_most_rounds_half_up_and_keeps_short_amounts_as_they_are(amount, places, kept):
    result = at_most(Decimal(amount), places)
    assert str(result) == kept
    assert result == Decimal(kept)
