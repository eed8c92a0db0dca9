"""Trial names across the adapters of one guard: a name counts one trial's spend.

Two ``OptunaGuard``s over one guard (a coarse study, then a fine one) both named their
trials 0, 1, … and the guard, keeping the larger figure per name, hid one study's spend
under the other's; so did a ``LoopGuard`` trial ``"0"`` beside the first study's trial 0.
The names live on the guard, and a study's label or a loop's trial that would share one
is not given.
"""

from __future__ import annotations


class TrialNames:
    """The studies' labels and the loops' trial names one guard has given out."""

    def __init__(self) -> None:
        self._labels: set[str] = set()
        self._loop_trials: set[str] = set()

    def study_label(self, name: str) -> str:
        """The label of a study new to the guard.

        ``""`` for its first (trials by number alone), else ``name``, counted when another
        study had it (``fine#3``, ``s(2)#3``).
        """
        label = "" if not self._labels and not self._loop_trials else name
        count = 1
        while label in self._labels or any(_in_study(t, label) for t in self._loop_trials):
            count += 1
            label = f"{name}({count})"
        self._labels.add(label)
        return label

    def loop_trial(self, trial: str) -> None:
        """Note a plain loop's trial name.

        Raises:
            ValueError: a study's trial has that name (``"3"`` beside the first study's
                trial 3): their spend would count as one trial's.
        """
        if any(_in_study(trial, label) for label in self._labels):
            raise ValueError(
                f"budget-gate guard: trial {trial!r} is the name of an Optuna study's trial "
                "under this guard — give the loop's trial a name of its own"
            )
        self._loop_trials.add(trial)


def _in_study(trial: str, label: str) -> bool:
    """Whether ``trial`` is a name the study labelled ``label`` gives its trials."""
    if not label:
        return trial.isdecimal()
    number = trial.removeprefix(f"{label}#")
    return number != trial and number.isdecimal()
