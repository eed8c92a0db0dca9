"""``budget-gate schema``: the JSON Schemas of specs and policies, generated from the models."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pydantic import BaseModel

from gate.commands.output import write_atomically
from gate.errors import InputError
from gate.policy.model import Policy
from gate.spec.experiment import Experiment

SCHEMAS: dict[str, type[BaseModel]] = {
    "experiment.schema.json": Experiment,
    "policy.schema.json": Policy,
}


def render_schema(model: type[BaseModel]) -> str:
    """The model's JSON Schema (draft 2020-12), as committed under ``schemas/``."""
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **model.model_json_schema(by_alias=True, mode="validation"),
    }
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def run(args: argparse.Namespace) -> int:
    """Print both schemas as one JSON object, or write one file each with --write."""
    if args.write:
        out = Path(args.dir)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(
                f"cannot create {out}: {exc.strerror}", hint="choose another --dir"
            ) from None
        for name, model in SCHEMAS.items():
            write_atomically(str(out / name), render_schema(model))
            print(f"wrote {out / name}", file=sys.stderr)
        return 0
    combined = {name: json.loads(render_schema(model)) for name, model in SCHEMAS.items()}
    sys.stdout.write(json.dumps(combined, indent=2, ensure_ascii=False) + "\n")
    return 0
