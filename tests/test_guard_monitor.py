"""The plateau rule needs the metric the spec monitors; a loop that reports it under
another name must hear that no plateau will stop it."""

from __future__ import annotations

import logging

import pytest

from gate.guard.core import Guard
from gate.guard.loop import LoopGuard
from gate.guard.model import StopKind
from tests.guard_kit import Clock, approved_limits

FLAT = 0.5
"""A metric that gains nothing: at the plateau from epoch 1."""


def _run(name: str) -> list[bool]:
    clock = Clock()
    guard = Guard(approved_limits(), clock=clock)
    loop = LoopGuard(guard, "0", clock=clock)
    return [loop.step(e, {name: FLAT}, held_seconds=e * 36.0).stop for e in range(1, 31)]


@pytest.mark.parametrize("name", ["loss", "val/loss"])
def test_a_metric_under_another_name_is_said_once(name, caplog):
    """The seed spec monitors ``val_loss``; a loop that logs ``loss`` (or ``val/loss``) was
    never stopped at its plateau, and nothing said why. The guard says so, once."""
    caplog.set_level(logging.WARNING, logger="gate.guard.core")
    stops = _run(name)
    assert not any(stops)  # no plateau without the metric, as before
    said = [r.getMessage() for r in caplog.records if "plateau rule cannot stop" in r.message]
    assert len(said) == 1, said
    assert f"trial 0 reported no 'val_loss' at epoch 1 (it reported {name!r})" in said[0]


def test_the_monitored_metric_is_not_warned_about(caplog):
    caplog.set_level(logging.WARNING, logger="gate.guard.core")
    stops = _run("val_loss")
    assert stops.index(True) == 10  # the plateau at epoch 1, plus the window of 10
    assert "plateau rule cannot stop" not in caplog.text


def test_no_word_when_the_policy_does_not_stop_at_plateaus(caplog):
    caplog.set_level(logging.WARNING, logger="gate.guard.core")
    limits = approved_limits({"guard": {"stop_at_plateau": False}})
    assert limits.threshold is None
    clock = Clock()
    decision = LoopGuard(Guard(limits, clock=clock), "0", clock=clock).step(1, {"loss": FLAT})
    assert not decision.stop and decision.kind is not StopKind.PLATEAU
    assert "plateau rule cannot stop" not in caplog.text
