"""A Hydra multirun config → spec fields: the Optuna sweeper, the basic sweeper, Submitit.

Optuna sweeper (``override hydra/sweeper: optuna``): ``n_trials`` trials (default 20),
``n_jobs`` at once (default 2), its sampler (``grid`` stops at the grid's size). Basic
sweeper: one job per combination of ``hydra.sweeper.params`` (comma lists, ``range``,
``choice``), one at a time unless the launcher runs them in parallel. Any other sweeper
(Nevergrad, Ax) is refused: its trial count is in a form of its own, and read as the basic
sweeper's grid it would be a guess. Submitit's ``gpus_per_node`` × ``nodes`` are a trial's
GPUs, and ``timeout_min`` (default 60) ends a trial; ``hydra.job.env_set``'s epochs count.
Facts go in an ``x-budget-gate:``
block, which Hydra keeps as any other key, or in a ``# x-budget-gate:`` comment block (for a
config checked against a structured schema, which refuses unknown keys).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from gate.errors import InputError
from gate.formats.command_lines import names_epochs
from gate.formats.extension import COMMENT, block_facts, comment_facts
from gate.formats.hydra_defaults import chosen as chosen_groups
from gate.formats.hydra_defaults import refuse_unread_groups
from gate.formats.hydra_launchers import launcher, slurm_pins
from gate.formats.hydra_sweepers import sweeper_trials
from gate.formats.hydra_sweeps import range_top, sweep
from gate.formats.model import (
    Draft,
    FactMap,
    Mapped,
    Origin,
    Source,
    Traced,
    has_path,
    mapping,
    most_epochs,
    value_at,
    whole_epochs,
    within,
)
from gate.spec.facts import EXTENSION_KEY
from gate.spec.loader import LoadedDoc

EPOCH_KEYS = (
    ("trainer", "max_epochs"),
    ("max_epochs",),
    ("epochs",),
    ("num_epochs",),
    ("training", "epochs"),
    ("train", "epochs"),
)


def read(doc: LoadedDoc) -> Mapped:
    """The sweeper's trial count and parallelism, its params, the launcher's GPUs."""
    data = doc.yaml12()  # NOTE: as OmegaConf reads it: a plain 1e3 is 1000.0

    def at(*path: str | int, key: bool = False) -> Any:
        return doc.source_map.locate(tuple(path), key=key)

    refuse_unread_groups(doc)
    chosen = chosen_groups(data.get("defaults"))
    hydra = mapping(data.get("hydra"))
    sweeper = mapping(hydra.get("sweeper"))
    draft: Draft = {}
    params = mapping(sweeper.get("params"))
    counts: dict[str, int] = {}
    for name, text in params.items():
        value, count = sweep(str(text), name, at("hydra", "sweeper", "params", name))
        counts[name] = count
        draft[("search", "parameters", name)] = Traced(
            value,
            Source(
                Origin.FILE,
                f"hydra.sweeper.params.{name}: {text}",
                at("hydra", "sweeper", "params", name),
            ),
        )
    notes = ["command-line overrides (python app.py -m x=1,2) are not in the file: not counted"]
    notes.extend(_step_budgets(data))
    if "method" in data and "parameters" in data:
        notes.append(
            "method and parameters are read as the app's own keys, not as a W&B sweep (a "
            "sweep has no top-level hydra or defaults): keep a W&B sweep in a file of its own"
        )
    sweeper_trials(draft, sweeper, chosen, counts, at, notes, data.get("defaults"))
    launcher(draft, hydra, chosen, at, notes)
    pins = slurm_pins(mapping(hydra.get("launcher")), at, notes)
    inclusive = chosen.get("hydra/sweeper") == "optuna" and (
        chosen.get("hydra/sweeper/sampler") != "grid"
    )
    epochs = _epochs(draft, data, params, at, inclusive)
    study = sweeper.get("study_name") or mapping(hydra.get("job")).get("name")
    if isinstance(study, str) and study:
        draft[("metadata", "name")] = Traced(
            study, Source(Origin.FILE, "the study or job name", at("hydra"))
        )
    return Mapped(
        draft,
        _facts(doc),
        tuple(notes),
        where=_where,
        native=_NATIVE,
        spell=lambda path, value: (
            _fewer_epochs(epochs, value)
            if path == ("workload", "max_epochs")
            else _spell(path, value, chosen, mapping(hydra.get("launcher")))
        ),
        pinned=pins,
    )


def _facts(doc: LoadedDoc) -> FactMap:
    """The ``x-budget-gate:`` key or the ``# x-budget-gate:`` comment block, not both."""
    key, comment = block_facts(doc), comment_facts(doc)
    if key and comment:
        raise InputError(
            f"both an {EXTENSION_KEY} key and a {COMMENT} comment block",
            location=doc.source_map.locate((EXTENSION_KEY,), key=True),
            hint="keep one of them",
        )
    return key or comment


def _where(fact: str, value: str) -> str:
    return f"{EXTENSION_KEY}: {{{fact}: {value}}} at the top level"


_NATIVE = {
    "gpus_per_trial": "hydra.launcher.gpus_per_node: N with the Submitit launcher",
    "max_epochs": "trainer.max_epochs: N (or epochs: N)",
}


def _spell(
    path: tuple[str | int, ...], value: Any, chosen: dict[str, str], launcher: dict[str, Any]
) -> str | None:
    """A spec edit as a change of the config's own keys, where it has them."""
    optuna = chosen.get("hydra/sweeper") == "optuna"
    submitit = chosen.get("hydra/launcher", "").startswith("submitit")
    nodes = launcher.get("nodes", 1) if isinstance(launcher.get("nodes", 1), int) else 1
    match path:
        case ("search", "max_trials") if optuna:
            return f"hydra.sweeper.n_trials: {value}"
        case ("search", "max_concurrent_trials") if optuna:
            return f"hydra.sweeper.n_jobs: {value}"
        case ("search", "max_concurrent_trials") if submitit:
            return f"hydra.launcher.array_parallelism: {value}"
        case ("search", "parameters", str(name), "values") if isinstance(value, list):
            return f"hydra.sweeper.params.{name}: {','.join(str(v) for v in value)}"
        case ("search", "strategy") if optuna and value in _SAMPLER_OF:
            return f"override hydra/sweeper/sampler: {_SAMPLER_OF[value]} in defaults"
        case ("resources", "gpus_per_trial") if submitit and value % nodes == 0:
            return f"hydra.launcher.gpus_per_node: {value // nodes}"
        case ("stopping", "max_trial_hours") if submitit:
            requeues = str(launcher.get("max_num_timeout", 0)).strip()  # held once per requeue
            held = 1 + (int(requeues) if requeues.isdigit() else 0)
            return f"hydra.launcher.timeout_min: {math.floor(value * 60 / held)}"
    return None


_SAMPLER_OF = {"random": "random", "bayesian": "tpe", "grid": "grid"}


@dataclass(frozen=True, slots=True)
class _Epochs:
    """One epoch key's most epochs a job may be handed, and how to lower it."""

    top: int
    detail: str
    location: Any
    key: str
    """The key to edit: a sweep's ``hydra.sweeper.params.NAME`` or the base config's."""
    values: tuple[Any, ...] | None
    """The sweep's values (a list, ``range``, ``choice``); None for an interval or a base."""
    low: Any = None
    call: str = "interval"
    """How the sweep is written when it is not a list: ``interval(low, top)`` or a range."""


def _epochs(
    draft: Draft, data: dict[str, Any], params: dict[str, Any], at: Any, inclusive: bool
) -> list[_Epochs]:
    """max_epochs: the most epochs any job is handed, over every epoch key.

    A sweep of the key (its largest value, an ``interval``'s top: Optuna may draw any value
    up to it) overrides its base value; of several epoch keys the largest decides. The
    Optuna sweeper's samplers (not its grid) draw a ``range`` up to its stop included: it
    becomes an ``IntUniformDistribution(start, stop, step)``.
    """
    swept = {str(name).lstrip("+"): name for name in params}  # +key, ++key: the same key
    found: list[_Epochs] = []
    for path in _epoch_paths(data, swept):
        dotted = ".".join(path)
        name = swept.get(dotted)
        text = str(params[name]) if name is not None else ""
        entry = _swept_epochs(draft, name, dotted, text, inclusive)
        if entry is None:
            node = value_at(data, path)
            if node is None and path in EPOCH_KEYS and has_path(data, path):
                raise InputError(
                    f"{dotted} is null: no bound on the epochs (Lightning's trainer then trains "
                    "1,000, or to max_steps)",
                    location=at(*path),
                    hint=f"write the most epochs a job trains at {dotted}",
                )
            if path not in EPOCH_KEYS:
                node = _other_epochs(node, data, dotted, at(*path))
            _plain_epochs(node, dotted, at(*path))
            top = None if isinstance(node, str) else whole_epochs(node)
            if top is not None and top > 0:
                entry = _Epochs(top, dotted, at(*path), dotted, None)
        if entry is not None:
            found.append(entry)
    found.extend(_env_epochs(data, swept, at))
    if found:
        best = max(found, key=lambda e: e.top)
        draft[("workload", "max_epochs")] = Traced(
            best.top, Source(Origin.FILE, best.detail, best.location)
        )
    return found


_MAX_DEPTH = 8


def _step_budgets(data: dict[str, Any], path: tuple[str, ...] = ()) -> list[str]:
    """What a positive ``max_steps`` may do, said: Hugging Face's Trainer runs it over epochs."""
    said = []
    for key, value in data.items() if isinstance(data, dict) and len(path) < _MAX_DEPTH else ():
        here = (*path, str(key))
        if here == ("hydra",):
            continue
        if (
            key == "max_steps"
            and isinstance(value, int)
            and not isinstance(value, bool)
            and value > 0
        ):
            said.append(
                f"{'.'.join(here)}: {value} bounds training by steps, which budget-gate does not "
                "price (Hugging Face's Trainer runs them past num_train_epochs): the epochs "
                "priced are the config's"
            )
        said.extend(_step_budgets(value, here))
    return said


_REFERENCE = re.compile(r"^\$\{([A-Za-z_][\w.]*)\}$")


def _epoch_paths(data: dict[str, Any], swept: dict[str, Any]) -> list[tuple[str, ...]]:
    """The keys that set epochs: the usual ones, then any other named like epochs.

    Any key of the config outside ``hydra``, or swept, counts (``model.n_epochs``,
    ``optim.epochs``: :func:`gate.formats.command_lines.names_epochs`).
    """
    paths = list(EPOCH_KEYS)
    pending: list[tuple[tuple[str, ...], Any]] = [((), data)]
    while pending:
        path, node = pending.pop()
        if not isinstance(node, dict) or len(path) >= _MAX_DEPTH:
            continue
        for key, value in node.items():
            here = (*path, str(key))
            if here in (("hydra",), ("defaults",)):
                continue
            if names_epochs(str(key)) and here not in paths:
                paths.append(here)
            pending.append((here, value))
    for dotted in swept:
        path = tuple(dotted.split("."))
        if names_epochs(path[-1]) and path not in paths:
            paths.append(path)
    return paths


_ENVS = (
    ("hydra", "job", "env_set"),
    ("hydra", "launcher", "ray", "remote", "runtime_env", "env_vars"),
    ("hydra", "launcher", "ray", "init", "runtime_env", "env_vars"),
)
"""Where a job's environment is set: Hydra's ``env_set``, Ray's ``runtime_env`` for the task."""


def _env_epochs(data: dict[str, Any], swept: dict[str, Any], at: Any) -> list[_Epochs]:
    """The epochs the job's environment hands its program (``NUM_EPOCHS: 1000``).

    Hydra (and Ray) set them before the app runs, so they count as a SkyPilot task's envs
    do; one ``env_copy`` takes from the launching shell is not in the file.
    """
    found = []
    for where in _ENVS:
        for name, value in mapping(value_at(data, where)).items():
            path = (*where, str(name))
            if not names_epochs(str(name), abbreviated=False) or ".".join(path) in swept:
                continue
            top = whole_epochs(_other_epochs(value, data, "", None))
            if top is None or top < 1:
                raise InputError(
                    f"{'.'.join(path)} is {value!r}: the epochs it hands the job are not a "
                    "number in the file",
                    location=at(*path),
                    hint=f"write the number of epochs as {name}'s value",
                )
            detail = f"{'.'.join(path)}: {top}, in the job's environment"
            found.append(_Epochs(top, detail, at(*path), ".".join(path), None))
    job = mapping(mapping(data.get("hydra")).get("job"))
    copied = job.get("env_copy")
    for i, name in enumerate(copied if isinstance(copied, list) else []):
        if names_epochs(str(name), abbreviated=False):
            raise InputError(
                f"hydra.job.env_copy copies {name} from the launching shell: the epochs it "
                "hands the job are not in the file",
                location=at("hydra", "job", "env_copy", i),
                hint=f"set {name} in hydra.job.env_set to the number of epochs",
            )
    return found


def _other_epochs(node: Any, data: dict[str, Any], dotted: str, where: Any) -> Any:
    """An epochs key beyond the usual ones: ``${a.b}`` read where it points, 0 no epochs.

    NOTE: such keys often restate the trainer's (``warmup_epochs: 0``,
    ``scheduler.total_epochs: ${trainer.max_epochs}``) or say less than one epoch (0.5,
    -1): those count nothing; other interpolations are refused as on the usual keys.
    """
    if isinstance(node, str) and (ref := _REFERENCE.match(node.strip())):
        target = value_at(data, tuple(ref.group(1).split(".")))
        if whole_epochs(target) is not None:
            return target
    if isinstance(node, (int, float)) and not isinstance(node, bool) and node < 1:
        return None  # a warmup of 0.5 epochs, or -1 for "as the trainer": no count of its own
    return node


def _plain_epochs(node: Any, dotted: str, where: Any) -> None:
    """Refuse an epochs value Hydra resolves to a number budget-gate cannot see."""
    if isinstance(node, str) and "${" in node:
        raise InputError(
            f"{dotted} is {node}, an interpolation budget-gate does not resolve",
            location=where,
            hint=f"write the number of epochs at {dotted}",
        )
    if isinstance(node, (int, float)) and not isinstance(node, bool) and node < 1:
        raise InputError(
            f"{dotted} is {node}: no bound on the epochs (Lightning's -1 trains for ever)",
            location=where,
            hint=f"write the most epochs a job trains at {dotted}",
        )


def _swept_epochs(
    draft: Draft, name: Any, dotted: str, text: str, inclusive: bool
) -> _Epochs | None:
    if name is None:
        return None
    swept = draft[("search", "parameters", name)]
    key = f"hydra.sweeper.params.{name}"
    ranged = range_top(text) if inclusive else None
    if ranged is not None:
        top, start, call = ranged
        detail = f"{swept.source.detail}: Optuna draws up to {top}, its stop included"
        return _Epochs(top, detail, swept.source.location, key, None, start, call)
    values = swept.value.get("values")
    if values:
        most = most_epochs(values)
        if most is None:
            return None
        detail = f"the largest of the swept {dotted}"
        return _Epochs(most, detail, swept.source.location, key, tuple(values))
    high = whole_epochs(swept.value.get("high"))
    if high is None:
        return None
    detail = f"{swept.source.detail}, so a job may train up to {high}"
    return _Epochs(high, detail, swept.source.location, key, None, swept.value.get("low"))


def _fewer_epochs(found: list[_Epochs], value: Any) -> str | None:
    """The edits of each epoch key that hand a job more than ``value`` epochs."""
    if not isinstance(value, int):
        return None
    edits = []
    for entry in found:
        if entry.top <= value:
            continue
        if entry.values is not None:
            kept = within(list(entry.values), value)
            edits.append(f"{entry.key}: {','.join(str(v) for v in kept or [value])}")
        elif entry.key.startswith("hydra.") and isinstance(entry.low, (int, float)):
            low = int(entry.low) if float(entry.low).is_integer() else entry.low
            call = f"interval({low}, {{}})" if entry.call == "interval" else entry.call
            edits.append(f"{entry.key}: {call.format(value) if low <= value else value}")
        else:
            edits.append(f"{entry.key}: {value}")
    return "; ".join(edits) or None
