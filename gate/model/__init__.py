"""Declared models validated with pydantic's rules, without pydantic's start-up.

Owns: ``fields`` (what a field declares: ``Field``, ``Strict``, ``Check``, ``Before``,
``JsonSchema``), ``shapes`` (annotations compiled into validators that report pydantic's
errors), ``base`` (the strict, immutable ``Model`` and its ``ValidationError``) and
``mirror`` (the same declarations as pydantic models, for the JSON Schema and the tests;
the only module here that imports pydantic).

Pure; imports nothing of gate.
"""

from gate.model.base import (
    Model,
    ValidationError,
    edited,
    field_check,
    fields_of,
    model_check,
)
from gate.model.fields import (
    Before,
    Check,
    Field,
    JsonSchema,
    Strict,
    StrictBool,
    StrictFloat,
    StrictInt,
)

__all__ = [
    "Before",
    "Check",
    "Field",
    "JsonSchema",
    "Model",
    "Strict",
    "StrictBool",
    "StrictFloat",
    "StrictInt",
    "ValidationError",
    "edited",
    "field_check",
    "fields_of",
    "model_check",
]
