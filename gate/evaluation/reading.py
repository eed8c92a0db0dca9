"""A document read as an Experiment spec, or the INVALID result that says why it is not one.

The evaluator's first step: a policy given as a spec is named as such, the models validate
at ``file:line:col``, and a search too large to be a plan is refused before it is priced.
"""

from __future__ import annotations

from gate.errors import InputError, InputErrors
from gate.estimate.trials import count_trials
from gate.evaluation.report import SpecResult
from gate.formats import Format
from gate.policy.findings import Outcome
from gate.spec.experiment import Experiment
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


def parse_spec(doc: LoadedDoc) -> Experiment:
    """The document as an Experiment; a policy given as a spec is said to be one."""
    kind = doc.data.get("kind")
    if kind == "Policy":
        raise InputError(
            "this file is a policy, not an experiment spec",
            location=doc.source_map.locate(("kind",)),
            hint="check specs with budget-gate check; policies go in --policy-dir",
        )
    return validate(Experiment, doc)


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
