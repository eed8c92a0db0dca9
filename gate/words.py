"""Counts in words for messages: ``1 trial``, ``2 trials``, ``1,000 GPUs``."""

from __future__ import annotations

_IRREGULAR = {"GPU-hour": "GPU-hours"}


def every_epoch(n: int) -> str:
    """``all 3 epochs``, or ``its 1 epoch``."""
    return "its 1 epoch" if n == 1 else f"all {n:,} epochs"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` with ``noun`` in the right number; the plural adds ``s`` unless given."""
    word = noun if n == 1 else (plural or _IRREGULAR.get(noun, noun + "s"))
    return f"{n:,} {word}"
