"""What an Optuna storage holds for the guard: each trial's spend, and one launch's studies.

Every worker of a launch (one ``BUDGET_GATE_LAUNCH_KEY``) holds one approval's ceiling, and
its spend is read from the storage, study by study. A worker that ran a study of its own
(``study_name=f"sweep-{i}"``) was counted by no other worker, so N workers spent N
ceilings. Each guard marks the studies it runs with the launch's key (a study attribute
of its own per launch) and reads, beside its own, every study in the storage that bears it.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import TYPE_CHECKING, Any

from gate.guard.engines import missing_engine

try:
    import optuna
except ModuleNotFoundError:
    raise missing_engine(__name__, "Optuna") from None

from gate.guard.model import GPU_SECONDS_ATTR, GPU_SECONDS_OF_ATTR

if TYPE_CHECKING:
    from collections.abc import Sequence

    from optuna.trial import FrozenTrial

LAUNCH_ATTR = "budget_gate.launch"
"""The prefix of the study attributes that name the launches whose workers ran it
(``budget_gate.launch.<key>``)."""


def launch_attr(launch_key: str) -> str:
    """The study attribute that marks a study as run by ``launch_key``'s workers.

    NOTE: one attribute per launch, never one overwritten or kept: a study marked by an
    earlier launch and joined again (``load_if_exists=True`` after a relaunch) kept the old
    key, so no worker of the new launch counted it, and N workers spent N ceilings.
    """
    return f"{LAUNCH_ATTR}.{launch_key}"


class LaunchStudies:
    """The other studies of a launch in a study's storage, listed at every read (~1 ms)."""

    def __init__(self, launch_key: str | None) -> None:
        self._key = launch_key
        self._marked: set[tuple[object, int]] = set()
        self._handles: dict[tuple[object, int, str], optuna.Study] = {}

    def others(self, study: optuna.Study) -> list[optuna.Study]:
        """Mark ``study`` as the launch's; the launch's other studies in its storage."""
        if self._key is None:
            return []
        where, mark = storage_of(study), launch_attr(self._key)
        if (where, study._study_id) not in self._marked:
            if not study.user_attrs.get(mark):
                study.set_user_attr(mark, True)
            self._marked.add((where, study._study_id))
        storage = study._storage
        found = []
        for listed in storage.get_all_studies():
            if listed._study_id == study._study_id or not listed.user_attrs.get(mark):
                continue
            handle = (where, listed._study_id, listed.study_name)
            if handle not in self._handles:
                self._handles[handle] = optuna.Study(study_name=listed.study_name, storage=storage)
            found.append(self._handles[handle])
        return found


def storage_of(study: optuna.Study) -> object:
    """The storage ``study`` lives in: an RDB's URL, else the storage object itself.

    NOTE: every ``load_study`` of an RDB study makes a new storage object; its URL says
    which database it is, so one study loaded twice is counted once.
    """
    storage: Any = study._storage
    backend = getattr(storage, "_backend", storage)  # _CachedStorage wraps an RDBStorage
    url = getattr(getattr(backend, "engine", None), "url", None)
    return storage if url is None else str(url)


def anchor(trials: Sequence[FrozenTrial]) -> dt.datetime | None:
    """When a study's trial 0 started: a study re-created under the same id started later."""
    return trials[0].datetime_start if trials else None


def charge(trial: FrozenTrial, gpus: float, now: dt.datetime, done: bool) -> float | None:
    """The GPU-seconds to count for another trial; ``None`` while it has reported none.

    Its stored figure, and at least its start-to-end time once it ended (a trial that
    failed before its first report, or ran on after its last, held its GPUs throughout).
    NOTE: a stored figure that is no finite number >= 0 (a broken timer an older guard
    stored, or a hand's edit) counts as the time held so far: refused, it stopped every
    worker that read it.
    """
    stored = trial.user_attrs.get(GPU_SECONDS_ATTR)
    if trial.user_attrs.get(GPU_SECONDS_OF_ATTR, trial.number) != trial.number:
        stored = None  # a retry's copy of its dead trial's figure: that one is counted
    held_so_far = figure(stored)
    broken = stored is not None and held_so_far is None
    if trial.datetime_start is None or not (done or broken):
        return held_so_far
    end = (trial.datetime_complete if done else None) or now
    held = max((end - trial.datetime_start).total_seconds(), 0.0) * gpus
    return held if held_so_far is None else max(held_so_far, held)


def figure(stored: object) -> float | None:
    """A stored figure as GPU-seconds, or ``None`` when it is none (NaN, inf, < 0, text)."""
    if isinstance(stored, bool) or not isinstance(stored, (int, float)):
        return None
    try:
        seconds = float(stored)
    except OverflowError:  # an int past a float's range
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def completed(trial: FrozenTrial) -> tuple[dt.datetime, int]:
    """A finished trial's place in the order its end is counted in."""
    assert trial.datetime_complete is not None
    return trial.datetime_complete, trial.number


def spend_of(study: optuna.Study) -> dict[str, Any]:
    """The study's GPU-seconds per trial, as its trials recorded them (for reports and tests)."""
    return {
        str(t.number): t.user_attrs[GPU_SECONDS_ATTR]
        for t in study.get_trials(deepcopy=False)
        if GPU_SECONDS_ATTR in t.user_attrs
    }
