"""The knob search of gate.policy.fixes: the passing value nearest the spec's, in few probes.

A rule's number against a knob is checked with real searches on functions whose answer is
known by trying every value: affine ones (epochs plus a fixed setup, where the line through
two failing probes lands on the limit) and any monotone one (where bisection must still
find it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from decimal import Decimal
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.policy.counterfactual import apply_edits
from gate.policy.findings import Edit
from gate.policy.fixes import MAX_PROBES, MAX_SECANTS, Knob, _Line, _search, candidates
from gate.policy.rules.base import RuleContext
from tests.conftest import TODAY, make_estimate, make_policy, make_spec

Rule = Callable[[int], Fraction]
"""How many times over its limit the rule is at a knob's value (at most 1 passes)."""


def _run(rule: Rule, current: int, bound: int, lower: bool, guess: int | None):
    knob = Knob(current, lower, lambda n: (Edit(("knob",), n),), bound=bound)
    probed: list[int] = []

    def passes(edits: tuple[Edit, ...]) -> bool:
        probed.append(edits[0].value)
        return rule(edits[0].value) <= 1

    def overshoot(edits: tuple[Edit, ...]) -> Decimal:
        return Decimal(rule(edits[0].value).numerator) / rule(edits[0].value).denominator

    line = _Line(knob, overshoot(knob.edits(current)), overshoot)
    return _search(knob, guess, passes, line), probed


def _nearest(rule: Rule, current: int, bound: int, lower: bool) -> int | None:
    values = range(current - 1, bound - 1, -1) if lower else range(current + 1, bound + 1)
    return next((v for v in values if rule(v) <= 1), None)


@given(
    setup=st.integers(0, 500),
    per_unit=st.integers(1, 50),
    current=st.integers(2, 400),
    share=st.fractions(Fraction(1, 20), Fraction(19, 20)),
)
def test_an_affine_number_is_found_from_a_failing_proportional_guess_in_few_probes(
    setup, per_unit, current, share
):
    """Cost = setup + epochs × per epoch, over a limit a share of today's: the proportional
    guess ignores the setup and fails; the line through it and today's value does not."""
    limit = (setup + per_unit * current) * share

    def rule(v: int) -> Fraction:
        return (setup + per_unit * v) / limit

    guess = int(current / (rule(current)))
    found, probed = _run(rule, current, 1, True, guess)
    assert found == _nearest(rule, current, 1, True)
    assert len(probed) <= 4 or found is None or setup == 0


@settings(max_examples=1000, deadline=None)
@given(
    data=st.data(),
    current=st.integers(2, 2000),
    lower=st.booleans(),
)
def test_any_monotone_number_is_closed_in_on_within_the_probes(data, current, lower):
    """Staircases (waves of trials), concave and affine numbers: the answer always passes,
    and from a failing start whose gap to the bound the probes can bisect (2⁸ values: the
    start, the bound and 8 halvings) it is the nearest passing value; the crossings, beside
    the probes, only narrow that gap. (From a passing start the search gallops toward the
    spec's value, as it always did.)"""
    bound = data.draw(st.integers(1, current - 1) if lower else st.integers(current + 1, 4000))
    low, high = min(bound, current), max(bound, current)
    steps = sorted(data.draw(st.lists(st.integers(low, high), max_size=12)))
    shape = data.draw(st.sampled_from(["staircase", "concave", "affine"]))
    scale = data.draw(st.integers(1, 60))

    def rule(v: int) -> Fraction:  # rising with the value (falling for a knob raised)
        x = v if lower else low + high - v
        if shape == "staircase":
            return Fraction(sum(1 for s in steps if s <= x), max(1, len(steps) // 2))
        if shape == "concave":
            return Fraction(math.isqrt(x * scale), math.isqrt((low + high) * scale // 2) or 1)
        return Fraction(scale * 10 + x, scale * 10 + (low + high) // 2)

    guess = data.draw(st.none() | st.integers(low, high))
    found, probed = _run(rule, current, bound, lower, guess)
    nearest = _nearest(rule, current, bound, lower)
    assert len(probed) <= MAX_PROBES + MAX_SECANTS
    assert (found is None) == (nearest is None)
    if found is None or nearest is None:
        return
    assert rule(found) <= 1
    assert (nearest - found) * (1 if lower else -1) >= 0  # never past the nearest
    start = guess if guess is not None and guess != current else bound
    if rule(start) > 1 and abs(start - bound) <= 2 ** (MAX_PROBES - 2):
        assert found == nearest  # from a failing start: crossings, the bound, 8 halvings


def test_a_search_over_the_trial_trigger_gets_its_trials_without_a_search():
    """Trials are max_trials × seeds for any search but a grid: the largest max_trials under
    the trigger is its quotient, proven by one probe (a search spent two, one failing)."""
    spec = make_spec({"search": {"strategy": "random", "max_trials": 40, "seeds": [0, 1, 2]}})
    policy = make_policy({"approval": {"trials_over": 32}})
    ctx = RuleContext(spec, make_estimate(spec, policy), policy, "exp/spec.yaml", TODAY)
    probed: list[tuple[Edit, ...]] = []

    def probe(edits: tuple[Edit, ...]) -> RuleContext | None:
        probed.append(edits)
        edited = apply_edits(spec, edits)
        return (
            None
            if edited is None
            else replace(ctx, spec=edited, estimate=make_estimate(edited, policy))
        )

    found = candidates("BG110", ctx, probe)
    assert found == [
        (Edit(("search", "strategy"), "asha"), Edit(("search", "max_trials"), 10)),
        (Edit(("search", "max_trials"), 10),),  # 10 × 3 seeds = 30 ≤ 32 < 11 × 3
    ]
    assert probed == found
