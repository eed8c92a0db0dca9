"""The plateau defined by marginal return (gate.estimate.returns), DOMAIN.md §2 and §6 H."""

from __future__ import annotations

import math

import pytest

from gate.estimate.returns import (
    Threshold,
    curve_plateau,
    gain,
    marginal_return,
    pays,
    plateau,
    threshold_for,
)
from gate.estimate.settings import Returns
from tests import seed_curve


def test_domain_h_marginal_return_falls_about_ninety_times():
    # epoch 50: 0.185 (200 spent), epoch 100: 0.182 (400), epoch 400: 0.1818 (1,600).
    early = marginal_return(gain(0.185, 0.182, "min"), 400 - 200)
    late = marginal_return(gain(0.182, 0.1818, "min"), 1600 - 400)
    assert early == pytest.approx(1.5e-5, rel=1e-9)
    assert late == pytest.approx(1.6667e-7, rel=1e-4)
    assert round(early / late) == 90
    # A guard with ε = 10⁻⁶ per unit of money: the first span pays, the second does not.
    eps = Threshold(window=50, per_cost=1e-6)
    assert pays(eps, 0.185, 0.182, "min", 50, cost=200)
    assert not pays(eps, 0.182, 0.1818, "min", 300, cost=1200)


def test_the_seed_case_plateaus_at_epoch_60_under_the_default_policy():
    history = seed_curve.history()
    default = threshold_for(Returns(), patience=None)
    assert (default.window, default.relative, default.min_delta) == (10, 0.001, 0.0)
    assert plateau(history, "min", default) == 60
    # 340 of 400 epochs came after it: 85 % of the training.
    assert (400 - 60) / 400 == 0.85
    # Without the floor, min_delta 0 counts every tiny gain: the old answer, epoch 400.
    assert plateau(history, "min", Threshold(window=10)) == 400


def test_a_threshold_per_gpu_hour_and_per_cost_scale_with_the_span():
    t = Threshold(window=10, relative=0.001, per_gpu_hour=1e-4, per_cost=1e-5)
    # 10 epochs at 0.5: relative 0.0005; 2 GPU-h × 1e-4 = 0.0002; 100 money × 1e-5 = 0.001.
    assert t.required(0.5, 10, 2.0, 100.0) == pytest.approx(0.001)
    # Twice the span: the per-window floor doubles too.
    assert t.required(0.5, 20, 0.0, 0.0) == pytest.approx(0.001)
    assert t.describe("USD") == (
        "0.1 % of its value per 10 epochs, 0.0001 per GPU-hour, 1e-05 per USD"
    )
    # Gains only pay when they are more than required (strictly), in either direction.
    assert pays(Threshold(min_delta=0.1), 0.5, 0.7, "max", 10)
    assert not pays(Threshold(min_delta=0.2), 0.5, 0.7, "max", 10)
    assert not pays(Threshold(), 0.5, 0.5, "min", 10)


def test_money_moves_the_plateau_earlier_than_the_relative_floor():
    history = seed_curve.history()
    # 8 A100 × 0.1 h an epoch = 0.8 GPU-h; a window of 10 must gain > 0.01 × 8 = 0.08.
    t = Threshold(window=10, relative=0.001, per_gpu_hour=0.01)
    found = plateau(history, "min", t, gpu_hours_per_epoch=0.8)
    # The loss falls 0.7·(1 − (x/60)²) … a window gains 0.08 until about epoch 27.
    assert found is not None and 20 < found < 40
    assert found < plateau(history, "min", Threshold(window=10, relative=0.001))


def test_a_later_gain_that_paid_for_itself_moves_the_plateau_on():
    # Flat from 10 to 40, then a learning-rate drop halves the loss.
    history = [1.0 - 0.05 * e for e in range(10)] + [0.55] * 30 + [0.25] * 10
    assert plateau(history, "min", Threshold(window=5, relative=0.001)) == 41
    # A drop too small to pay for the flat epochs does not.
    small = [1.0 - 0.05 * e for e in range(10)] + [0.55] * 30 + [0.5499] * 10
    assert plateau(small, "min", Threshold(window=5, relative=0.001)) == 10


def test_nan_never_improves_and_no_number_has_no_plateau():
    assert plateau([math.nan, 1.0, 0.5, math.nan], "min", Threshold()) == 3
    assert plateau([], "min", Threshold()) is None
    assert plateau([math.nan, math.nan], "min", Threshold()) is None
    assert plateau([0.5], "max", Threshold()) == 1


def test_a_learning_curve_plateaus_where_its_next_window_stops_paying():
    # gain over the window after e = 1.0 · (1 − 2^(−10/5)) · 2^(−e/5) = 0.75 · 2^(−e/5).
    t = Threshold(window=10, min_delta=0.01)
    assert curve_plateau(1.0, 5, t, 1000) == math.ceil(5 * math.log2(0.75 / 0.01))
    assert curve_plateau(1.0, 5, Threshold(window=10), 1000) == 1000  # nothing required
    assert curve_plateau(1.0, 5, Threshold(window=10, min_delta=5.0), 1000) == 0
    assert curve_plateau(1.0, 5, t, 20) == 20  # beyond max_epochs
    # ε per GPU-hour: 2 GPU-h an epoch, 20 GPU-h a window, must gain > 0.001 × 20 = 0.02.
    by_gpu = curve_plateau(1.0, 5, Threshold(window=10, per_gpu_hour=0.001), 1000, 2.0)
    assert by_gpu == math.ceil(5 * math.log2(0.75 / 0.02))
