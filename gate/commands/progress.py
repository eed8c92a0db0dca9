"""A one-line progress bar on stderr, for terminals only (CI logs stay clean).

The total is not known until MLflow's paged search ends, so the bar measures runs done
against runs found so far, with ``+`` after the count while the search goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

_WIDTH = 28
_INTERVAL_S = 0.1


class ProgressBar:
    """``reconcile [#######-----] 1,234/2,000+ runs, 612 runs/s``, redrawn at most 10×/s."""

    def __init__(self, stream: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.clock = clock
        self.began = clock()
        self._drawn_at: float | None = None
        self._shown = False

    def __call__(self, done: int, found: int, searching: bool) -> None:
        """Redraw, unless the last redraw was under a tenth of a second ago."""
        now = self.clock()
        if self._drawn_at is not None and now - self._drawn_at < _INTERVAL_S and searching:
            return
        self._drawn_at = now
        filled = _WIDTH * done // found if found else 0
        bar = "#" * filled + "-" * (_WIDTH - filled)
        rate = done / (now - self.began) if now > self.began else 0.0
        more = "+" if searching else ""
        line = f"reconcile [{bar}] {done:,}/{found:,}{more} runs, {rate:,.0f} runs/s"
        self.stream.write(f"\r{line}\x1b[K")
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        """Erase the bar so the report starts on a clean line."""
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def progress_for(stream: TextIO) -> ProgressBar | None:
    """A bar on ``stream`` when it is a terminal, else ``None``."""
    return ProgressBar(stream) if stream.isatty() else None
