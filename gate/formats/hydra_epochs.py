"""The epochs a Hydra sweep hands its jobs: the config's epoch keys, swept or not, and env.

Every key named like the epochs counts (``trainer.max_epochs``, ``model.n_epochs``), its
sweep over its base value, and so do the epochs ``hydra.job.env_set`` (or Ray's
``runtime_env``) hands the program; of all of them the largest is priced.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from gate.errors import InputError
from gate.formats.command_lines import names_epochs
from gate.formats.hydra_sweeps import range_top, swept_dicts
from gate.formats.model import (
    Draft,
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

EPOCH_KEYS = (
    ("trainer", "max_epochs"),
    ("max_epochs",),
    ("epochs",),
    ("num_epochs",),
    ("training", "epochs"),
    ("train", "epochs"),
)


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


def epochs(
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
        entry = _swept_epochs(draft, name, (data, path), text, inclusive)
        if entry is None:
            entry = _base_epochs(data, path, at(*path))
        if entry is not None:
            found.append(entry)
    found.extend(_env_epochs(data, swept, at))
    found.extend(_dict_epochs(draft, data, params))
    _refuse_deleted(draft, data, params, _epoch_paths(data, swept))
    _refuse_trainer_default(data, swept, at)
    if found:
        best = max(found, key=lambda e: e.top)
        draft[("workload", "max_epochs")] = Traced(
            best.top, Source(Origin.FILE, best.detail, best.location)
        )
    return found


def _base_epochs(data: dict[str, Any], path: tuple[str, ...], where: Any) -> _Epochs | None:
    """One epochs key's value in the config: a count, its text (``"1000"``), or refused."""
    dotted, node = ".".join(path), value_at(data, path)
    null = node is None and has_path(data, path)
    top = whole_epochs(_counted(node, null, data, path, dotted, where))
    return _Epochs(top, dotted, where, dotted, None) if top is not None and top > 0 else None


def _counted(
    node: Any, null: bool, data: dict[str, Any], path: tuple[str, ...], dotted: str, where: Any
) -> Any:
    """One value an epochs key is given (its base, or one a sweep hands), or refused.

    ``null`` (Lightning's 1,000), -1 (for ever), ``inf``, text and interpolations say no
    count: refused at ``dotted``, where read as none a smaller value would be priced.
    """
    if null and path in EPOCH_KEYS:
        raise InputError(
            f"{dotted} is null: no bound on the epochs (Lightning's trainer then trains "
            "1,000, or to max_steps)",
            location=where,
            hint=f"write the most epochs a job trains at {dotted}",
        )
    node = _spelled(node)  # NOTE: a structured config casts "1000" to 1000
    if path not in EPOCH_KEYS:
        node = _spelled(_other_epochs(node, data, dotted, where))
    _plain_epochs(node, dotted, where)
    return node


def _spelled(node: Any) -> Any:
    """Text that spells a number (``"1000"``, ``"1e3"``, ``"1_000"``) as that number."""
    if not isinstance(node, str) or "${" in node:
        return node
    text = node.strip()
    if re.fullmatch(r"[+-]?\d(?:_?\d)*", text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        return node


_MAX_DEPTH = 8


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
    """Refuse an epochs value Hydra resolves to a number budget-gate cannot see.

    Text that is no number, and an infinite one, say no count: refused at the key, where
    read as none the declared epochs would be priced.
    """
    if isinstance(node, str) and "${" in node:
        raise InputError(
            f"{dotted} is {node}, an interpolation budget-gate does not resolve",
            location=where,
            hint=f"write the number of epochs at {dotted}",
        )
    if isinstance(node, str):
        raise InputError(
            f"{dotted} is {node!r}, text that is no number: it does not say the epochs",
            location=where,
            hint=f"write the number of epochs at {dotted}",
        )
    if isinstance(node, float) and not math.isfinite(node):
        raise InputError(
            f"{dotted} is {node}: not a number of epochs a job could train",
            location=where,
            hint=f"write the most epochs a job trains at {dotted}",
        )
    if isinstance(node, (int, float)) and not isinstance(node, bool) and node < 1:
        raise InputError(
            f"{dotted} is {node}: no bound on the epochs (Lightning's -1 trains for ever)",
            location=where,
            hint=f"write the most epochs a job trains at {dotted}",
        )


def _swept_epochs(
    draft: Draft,
    name: Any,
    keyed: tuple[dict[str, Any], tuple[str, ...]],
    text: str,
    inclusive: bool,
) -> _Epochs | None:
    if name is None:
        return None
    swept = draft[("search", "parameters", name)]
    key, (data, path), dotted = f"hydra.sweeper.params.{name}", keyed, ".".join(keyed[1])
    for value in [*swept.value.get("values", ()), *_ends(swept.value)]:
        null = value is None or (isinstance(value, str) and value.strip().lower() == "null")
        _counted(None if null else value, null, data, path, key, swept.source.location)
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


def _dict_epochs(draft: Draft, data: dict[str, Any], params: dict[str, Any]) -> list[_Epochs]:
    """Epoch keys inside a swept dict (``trainer: '{max_epochs: 1000}'``): Hydra merges it."""
    found = []
    for name, text in params.items():
        if str(name).startswith("~"):
            continue
        where = draft[("search", "parameters", name)].source.location
        key = f"hydra.sweeper.params.{name}"
        for given in swept_dicts(str(text)):
            for path, node in _leaves(given, tuple(str(name).lstrip("+").split("."))):
                if path not in EPOCH_KEYS and not names_epochs(path[-1]):
                    continue
                said = f"{'.'.join(path)} in {key}"
                top = whole_epochs(_counted(node, node is None, data, path, said, where))
                if top is not None and top > 0:
                    found.append(_Epochs(top, f"{said}, a swept dict", where, said, None))
    return found


def _leaves(given: dict[str, Any], path: tuple[str, ...]) -> list[tuple[tuple[str, ...], Any]]:
    """Each key of a nested dict under ``path``, with its value."""
    found: list[tuple[tuple[str, ...], Any]] = []
    for key, value in given.items():
        here = (*path, *str(key).split("."))
        if isinstance(value, dict):
            found.extend(_leaves(value, here))
        else:
            found.append((here, value))
    return found


def _refuse_deleted(
    draft: Draft, data: dict[str, Any], params: dict[str, Any], paths: list[tuple[str, ...]]
) -> None:
    """``~trainer.max_epochs`` deletes the key: the trainer's own default epochs then apply."""
    for name in params:
        path = tuple(str(name).lstrip("~").split("."))
        if not str(name).startswith("~"):
            continue
        if names_epochs(path[-1]) or any(p[: len(path)] == path for p in paths):
            raise InputError(
                f"hydra.sweeper.params.{name} deletes {'.'.join(path)}: the epochs are then "
                "the trainer's default (Lightning's 1,000), not in the file",
                location=draft[("search", "parameters", name)].source.location,
                hint="set the most epochs a job trains instead of deleting the key",
            )


_LIGHTNING_TRAINER = {
    f"{m}.Trainer" for m in ("lightning", "lightning.pytorch", "pytorch_lightning")
}
"""The ``_target_`` of Lightning's ``Trainer``, as configs name it."""


def _refuse_trainer_default(data: dict[str, Any], swept: dict[str, Any], at: Any) -> None:
    """Refuse a Lightning ``Trainer`` node that sets no bound: Lightning trains 1,000 epochs.

    NOTE: ``instantiate(cfg.trainer)`` with no ``max_epochs`` (nor ``max_steps`` or
    ``max_time``) is ``Trainer(max_epochs=None)``, which fits 1,000 epochs; written
    ``max_epochs: null`` it was refused, left out it was priced at the declared epochs.
    """
    for path, node in _nodes(data, ()):
        if (
            str(node.get("_target_")).replace(".trainer.Trainer", ".Trainer")
            not in _LIGHTNING_TRAINER
        ):
            continue
        bounds = ("max_epochs", "max_steps", "max_time")
        if any(b in node or ".".join((*path, b)) in swept for b in bounds):
            continue
        raise InputError(
            f"{'.'.join(path) or 'the config'} is a Lightning Trainer with no max_epochs: "
            "Lightning trains 1,000 epochs then, not the epochs declared",
            location=at(*path, "_target_"),
            hint=f"set {'.'.join((*path, 'max_epochs'))}: the most epochs a job trains",
        )


def _nodes(node: Any, path: tuple[str, ...], depth: int = 0) -> list[tuple[tuple[str, ...], Any]]:
    """Each mapping in the config, where it is (to 8 levels: a trainer sits near the top)."""
    if not isinstance(node, dict) or depth > 8:
        return []
    found: list[tuple[tuple[str, ...], Any]] = [(path, node)]
    for key, value in node.items():
        if str(key) != "hydra":
            found.extend(_nodes(value, (*path, str(key)), depth + 1))
    return found


def _ends(value: dict[str, Any]) -> list[Any]:
    """An interval's ends, each a value a job may be handed."""
    return [value[end] for end in ("low", "high") if end in value]


def fewer_epochs(found: list[_Epochs], value: Any) -> str | None:
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
