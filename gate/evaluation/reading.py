"""A document read as an Experiment spec, or the INVALID result that says why it is not one.

The evaluator's first step: a policy given as a spec is named as such, the models validate
at ``file:line:col``, and a search too large to be a plan is refused before it is priced.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import PurePosixPath

from gate.errors import InputError, InputErrors, Location
from gate.estimate.trials import count_trials
from gate.evaluation.report import SpecResult
from gate.formats import SPEC_ADD, SPEC_LOOKS, Format, unmarked
from gate.model import fields_of
from gate.policy.findings import Outcome
from gate.spec.experiment import Experiment
from gate.spec.globs import is_spec_file
from gate.spec.loader import LoadedDoc
from gate.spec.validation import validate

MAX_TRIALS = 10**18
"""Beyond a quintillion trials a search is a typo, not a plan (10¹⁵ is still priced)."""


def check_size(spec: Experiment, doc: LoadedDoc) -> None:
    """Refuse a search past :data:`MAX_TRIALS`, pointing at ``search``."""
    trials = count_trials(spec.search, spec.workload.max_epochs)
    if trials > MAX_TRIALS:
        raise InputError(
            f"the search has about 10^{len(str(trials)) - 1} trials",
            location=doc.source_map.locate(("search",), key=True),
            hint="check the grid's value lists and seeds; no budget covers this many trials",
        )


def refuse_spec_named_folders(path: str) -> None:
    """Refuse a spec under a folder named like a spec file (``nightly.yaml/big.yaml``).

    Patterns are gitignore's: one that names a file (a waiver's ``nightly.yaml``, an owner's
    ``experiments/*.yaml``) also names a folder of that name and everything in it, so such
    a folder would carry one spec's waiver or owner to any number of others.
    """
    if "." not in path.rpartition("/")[0]:
        return  # NOTE: every spec is asked: most folders have no dot at all
    folders = PurePosixPath(os.path.normpath(path)).parts[:-1]
    named = next((part for part in folders if is_spec_file(part)), None)
    if named is not None:
        raise InputError(
            f"the spec lies in a folder named like a spec file ({named}/), which patterns "
            "naming that file would cover with everything in it",
            location=Location(path, 1, 1),
            hint=f"rename the folder {named}/ (drop its {PurePosixPath(named).suffix} ending)",
        )


def parse_spec(doc: LoadedDoc) -> Experiment:
    """The document as an Experiment; a policy, or a file with no spec key, is said to be one.

    A training config beside the specs would otherwise get an error per missing spec key.
    """
    kind = doc.data.get("kind")
    if kind == "Policy":
        raise InputError(
            "this file is a policy, not an experiment spec",
            location=doc.source_map.locate(("kind",)),
            hint="check specs with budget-gate check; policies go in --policy-dir",
        )
    if "apiVersion" not in doc.data and "kind" not in doc.data:
        _refuse_unmarked(doc)
    return validate(Experiment, doc)


def _refuse_unmarked(doc: LoadedDoc) -> None:
    """Refuse a file without apiVersion/kind in one line, with what else it says is wrong.

    With a spec's sections it is a spec that lost its first lines; with none it is another
    file in the specs folder (a training config), and an error per spec key would send its
    author to write a spec into it.
    """
    top = Location(doc.file, 1, 1)
    looks = InputError(SPEC_LOOKS, location=top, hint=SPEC_ADD)
    if not _SECTIONS & doc.data.keys():
        raise InputError(
            "not a budget-gate spec: no apiVersion/kind and no spec section (metadata, "
            "resources, workload, ...), nor a W&B, Katib, SkyPilot or Hydra file",
            location=top,
            hint=unmarked(doc.data),
        )
    lines = {"apiVersion": "budget-gate/v1", "kind": "Experiment"}
    try:
        validate(Experiment, dataclasses.replace(doc, data={**lines, **doc.data}))
    except InputErrors as exc:
        raise InputErrors([looks, *exc.errors]) from None
    raise looks


_SECTIONS = frozenset(f.key for f in fields_of(Experiment).values())
"""A spec's top-level keys (``apiVersion``, ``kind`` among them): a file with none is no
spec that lost its first lines, but another file (a training config) in the specs folder."""


def invalid_result(
    spec_file: str, exc: InputError | InputErrors, fmt: Format = Format.BUDGET_GATE
) -> SpecResult:
    """The INVALID result that says why; an engine's file keeps its format in the summary."""
    errors = exc.errors if isinstance(exc, InputErrors) else [exc]
    imported = None
    if fmt is not Format.BUDGET_GATE:
        from gate.formats.model import ImportSummary

        imported = ImportSummary(fmt, ())
    return SpecResult(
        spec_file, Outcome.INVALID, errors=tuple(e.problem for e in errors), imported=imported
    )
