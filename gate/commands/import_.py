"""``budget-gate import``: a W&B, Katib, SkyPilot or Hydra file as the spec it stands for.

Every line of the spec carries a comment saying where its value came from: the engine
file's line and column, its extension point, the team policy's defaults, the calibration
or a named default. Values are written as JSON, which is YAML.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any

from gate.commands.common import make_evaluator
from gate.commands.discovery import refuse_stdin
from gate.commands.output import write_atomically, write_stdout
from gate.errors import InputError
from gate.formats import Format, sniff
from gate.formats.model import Imported, Source
from gate.spec.loader import load_file
from gate.spec.validation import validate

ORDER = ("apiVersion", "kind", "metadata", "resources", "workload", "search", "stopping")


def _same_file(a: str, b: str) -> bool:
    """Whether two names are one file (both exist, as themselves or through a link)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


def run(args: argparse.Namespace) -> int:
    """Print (or --write) the equivalent spec; exit 3 when the file cannot be read as one."""
    refuse_stdin("import", args.file)
    if args.write and _same_file(args.write, args.file):
        raise InputError(
            f"--write {args.write} is the file being imported: it would be overwritten",
            hint="write the spec to another file, e.g. --write experiments/sweep.yaml",
        )
    doc = load_file(args.file)
    fmt = sniff(doc.data)
    if fmt is Format.BUDGET_GATE:
        raise InputError(
            f"{args.file} is already a budget-gate spec (or no format budget-gate reads)",
            hint="import reads W&B sweeps, Katib Experiments, SkyPilot tasks and Hydra sweeps",
        )
    from gate.spec.experiment import Experiment

    imported = make_evaluator(args).import_doc(doc, fmt, {})
    validate(Experiment, imported.doc)  # the spec it prints is one check accepts
    text = render(imported, args.file)
    if args.write:
        replaced = " (replacing the file that was there)" if os.path.exists(args.write) else ""
        write_atomically(args.write, text)
        print(f"budget-gate: wrote {args.write} from {args.file}{replaced}", file=sys.stderr)
    else:
        write_stdout(text)
    return 0


def render(imported: Imported, file: str) -> str:
    """The spec as YAML, a source comment on each line, the engine's notes at the end."""
    sources = {row.field: row.source for row in imported.summary.fields}
    lines = [f"# budget-gate import of {file} ({imported.summary.format.value})"]
    data = imported.doc.data
    for key in sorted(data, key=lambda k: (ORDER.index(k) if k in ORDER else len(ORDER), k)):
        lines.extend(_lines(key, data[key], (key,), 0, sources))
    lines.extend(f"# note: {note}" for note in imported.summary.notes)
    return "\n".join(lines) + "\n"


def _lines(
    key: str, value: Any, path: tuple[str, ...], depth: int, sources: dict[str, Source]
) -> list[str]:
    pad = "  " * depth
    dotted = ".".join(path)
    if isinstance(value, dict) and dotted not in sources:
        out = [f"{pad}{key}:  # {sources[dotted]}" if dotted in sources else f"{pad}{key}:"]
        for child in value:
            out.extend(_lines(child, value[child], (*path, child), depth + 1, sources))
        return out
    source = sources.get(dotted)
    why = str(source) if source else "budget-gate: the translation sets it"
    name = key if re.fullmatch(r"[A-Za-z_][\w.-]*", key) else json.dumps(key)
    return [f"{pad}{name}: {json.dumps(value, ensure_ascii=False)}  # {why}"]
