"""Shared plumbing of the evaluating commands: spec discovery, the evaluator, the report."""

from __future__ import annotations

import argparse
import datetime as dt
import glob
import os
import sys
from pathlib import Path

from gate import __version__
from gate.errors import InputError
from gate.evaluate import Evaluator
from gate.policy_loader import PolicySet
from gate.prices import load_catalog
from gate.report import Report, SpecResult
from gate.rules import rule_info

_SPEC_SUFFIXES = (".yaml", ".yml")


def expand_specs(patterns: list[str]) -> list[str]:
    """Expand directories and quoted globs into spec paths, keeping the order given."""
    found: list[str] = []
    for pattern in patterns:
        if os.path.isdir(pattern):
            found.extend(
                str(p) for p in sorted(Path(pattern).rglob("*")) if p.suffix in _SPEC_SUFFIXES
            )
        elif glob.has_magic(pattern):
            matches = sorted(glob.glob(pattern, recursive=True))
            if not matches:
                raise InputError(f"{pattern}: no file matches", hint="check the glob")
            found.extend(matches)
        else:
            found.append(pattern)
    return list(dict.fromkeys(found))


def make_evaluator(args: argparse.Namespace, *, fail_on_warn: bool = False) -> Evaluator:
    """Build the evaluator from --policy-dir and --as-of."""
    return Evaluator(
        policies=PolicySet(args.policy_dir),
        catalog=load_catalog(),
        today=_as_of(args.as_of),
        fail_on_warn=fail_on_warn,
    )


def make_report(results: list[SpecResult], evaluator: Evaluator) -> Report:
    """Assemble the report, with the docs of every rule that fired."""
    fired = {f.rule_id for r in results for f in r.findings}
    return Report(
        results=tuple(results),
        rules={rule_id: rule_info(rule_id) for rule_id in sorted(fired)},
        catalog_source=evaluator.catalog.source,
        catalog_date=evaluator.catalog.date,
        version=__version__,
    )


def print_errors(results: list[SpecResult]) -> None:
    """Input errors are diagnostics: one line each on stderr."""
    for result in results:
        for line in result.errors:
            print(line, file=sys.stderr)


def _as_of(value: str | None) -> dt.date:
    if value is None:
        return dt.date.today()
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise InputError(f"--as-of {value!r} is not a date", hint="use YYYY-MM-DD") from None
