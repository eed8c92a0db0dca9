"""``budget-gate schema``: the JSON Schemas of specs, policies and x-budget-gate facts.

With ``--docs``, the field reference generated from them (:mod:`gate.commands.schema_docs`).
"""

from __future__ import annotations

import argparse
import ast
import inspect
import itertools
import json
import sys
import textwrap
import typing
from pathlib import Path
from typing import Any

from gate.commands.output import write_atomically
from gate.commands.schema_docs import render_all
from gate.errors import InputError
from gate.model import Model, fields_of
from gate.model.mirror import mirror
from gate.policy.model import Policy
from gate.spec.experiment import Experiment
from gate.spec.facts import Facts

SCHEMAS: dict[str, type[Model]] = {
    "experiment.schema.json": Experiment,
    "policy.schema.json": Policy,
    "x-budget-gate.schema.json": Facts,
}


def render_schema(model: type[Model]) -> str:
    """The model's JSON Schema (draft 2020-12), as committed under ``schemas/``.

    pydantic writes it, from the model's mirror (:mod:`gate.model.mirror`).
    """
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **mirror(model).model_json_schema(by_alias=True, mode="validation"),
    }
    _describe_fields(schema, model)
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def _describe_fields(schema: dict[str, Any], model: type[Model]) -> None:
    """Give each property the docstring written under its field, as one line."""
    classes = {cls.__name__: cls for cls in _reachable(model)}
    nodes = [(model.__name__, schema), *schema.get("$defs", {}).items()]
    for name, node in nodes:
        cls = classes.get(name)
        if cls is None:
            continue
        properties = node.get("properties", {})
        for field, doc in field_docstrings(cls).items():
            prop = properties.get(fields_of(cls)[field].key)
            if prop is not None and "description" not in prop:
                prop["description"] = " ".join(doc.split())


def field_docstrings(cls: type) -> dict[str, str]:
    """Docstrings written under a class's annotated fields, by field name."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
    assert isinstance(body, ast.ClassDef)
    docs: dict[str, str] = {}
    for stmt, after in itertools.pairwise(body.body):
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[stmt.target.id] = after.value.value
    return docs


def _reachable(model: type[Model]) -> list[type[Model]]:
    """``model`` and every model its fields hold, however nested (the schema's ``$defs``)."""
    found: list[type[Model]] = []
    todo: list[Any] = [model]
    while todo:
        kind = todo.pop()
        if isinstance(kind, type) and issubclass(kind, Model):
            if kind in found:
                continue
            found.append(kind)
            todo.extend(f.type for f in fields_of(kind).values())
        todo.extend(typing.get_args(kind))
    return found


def run(args: argparse.Namespace) -> int:
    """Print every schema as one JSON object, or the field reference with --docs.

    With --write, each goes to a file of its own under --dir instead.
    """
    if args.docs:
        schemas = {name: json.loads(render_schema(model)) for name, model in SCHEMAS.items()}
        pages = render_all(schemas)
        if not args.write:
            sys.stdout.write("\n".join(pages.values()))
            return 0
        _write(Path(args.dir or "docs/reference"), pages)
        return 0
    if args.write:
        _write(
            Path(args.dir or "schemas"),
            {name: render_schema(model) for name, model in SCHEMAS.items()},
        )
        return 0
    combined = {name: json.loads(render_schema(model)) for name, model in SCHEMAS.items()}
    sys.stdout.write(json.dumps(combined, indent=2, ensure_ascii=False) + "\n")
    return 0


def _write(out: Path, files: dict[str, str]) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(
            f"cannot create {out}: {exc.strerror}", hint="choose another --dir"
        ) from None
    for name, text in files.items():
        write_atomically(str(out / name), text)
        print(f"wrote {out / name}", file=sys.stderr)
