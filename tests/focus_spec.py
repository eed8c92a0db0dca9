"""Validate a FOCUS CSV against the FOCUS 1.2 specification's own column requirements.

The requirements are read from the specification's column files, vendored unchanged in
``tests/fixtures/focus/1.2`` (see its README for source and licence): each column's
*Content constraints* table gives its feature level (Mandatory columns must be present),
whether it allows nulls, its data type (Decimal in the numeric format, Date/Time as
``YYYY-MM-DDTHH:mm:ssZ``, JSON as a key-value object) and, where it has one, the table of
allowed values. On top of the tables, the conditional requirements the columns' text
states for usage rows are checked (ChargeClass, ConsumedQuantity/Unit, PricingQuantity/Unit,
PricingCategory, the unit price × quantity = cost rules, ServiceSubcategory's parent,
charge and billing periods in order; unit prices, SKU and SKU price set and not negative;
the columns null together; tag values no object or list; dates that exist). Custom columns
must start with ``x_``.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path

SPEC_DIR = Path(__file__).parent / "fixtures" / "focus" / "1.2" / "columns"
_NUMERIC = re.compile(r"^-?(\d+(\.\d+)?|\.\d+)(E-?\d+)?$")
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


@dataclass(frozen=True)
class Column:
    """One column's requirements as the specification's tables state them."""

    name: str
    level: str
    nulls: bool
    data_type: str
    allowed: tuple[str, ...] = ()
    parents: dict[str, str] | None = None  # ServiceSubcategory → its ServiceCategory


@cache
def columns() -> dict[str, Column]:
    """Every column of the specification, by its Column ID."""
    found = {}
    for path in sorted(SPEC_DIR.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        name = re.search(r"^## Column ID\s+(\S+)", text, re.MULTILINE)
        if name is None:
            continue
        table = {
            key.strip().lower(): value.strip()
            for key, value in re.findall(r"^\|\s*([A-Za-z ]+?)\s*\|\s*(.+?)\s*\|\s*$", text, re.M)
        }
        allowed, parents = _allowed(text)
        found[name.group(1)] = Column(
            name=name.group(1),
            level=table["feature level"],
            nulls=table["allows nulls"] == "True",
            data_type=table["data type"],
            allowed=allowed,
            parents=parents,
        )
    return found


def _allowed(text: str) -> tuple[tuple[str, ...], dict[str, str] | None]:
    """The values of the *Allowed values* table (and each subcategory's category)."""
    _, marker, rest = text.partition("Allowed values:")
    if not marker:
        return (), None
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in rest.splitlines()
        if line.strip().startswith("|")
    ]
    body = [r for r in rows[1:] if not set("".join(r)) <= set(":- ")]
    if rows and rows[0][:2] == ["Service Category", "Service Subcategory"]:
        return tuple(r[1] for r in body), {r[1]: r[0] for r in body}
    return tuple(r[0] for r in body), None


def validate_focus(text: str) -> list[str]:
    """Every requirement a FOCUS CSV breaks, as ``row N: column: what``; empty when none."""
    spec = columns()
    reader = csv.DictReader(io.StringIO(text))
    header = reader.fieldnames or []
    errors = [
        f"missing Mandatory column {c.name}"
        for c in spec.values()
        if c.level == "Mandatory" and c.name not in header
    ]
    errors += [
        f"column {h} is neither FOCUS nor x_-prefixed"
        for h in header
        if h not in spec and not h.startswith("x_")
    ]
    for number, row in enumerate(reader, start=2):
        errors += [f"row {number}: {e}" for e in _row_errors(row, spec)]
    return errors


def _row_errors(row: dict[str, str], spec: dict[str, Column]) -> list[str]:
    errors = []
    for name, value in row.items():
        column = spec.get(name)
        if column is None:
            continue
        if value == "":
            if not column.nulls:
                errors.append(f"{name}: null, and the column allows no nulls")
            continue
        errors += [f"{name}: {e}" for e in _value_errors(column, value, row)]
    return errors + _conditional(row)


def _value_errors(column: Column, value: str, row: dict[str, str]) -> list[str]:
    kind = column.data_type
    if kind == "Decimal" and not _NUMERIC.match(value):
        return [f"{value!r} is not in the numeric format"]
    if kind == "Date/Time" and not _real_time(value):
        return [f"{value!r} is not YYYY-MM-DDTHH:mm:ssZ"]
    if kind == "JSON":
        try:
            parsed = json.loads(value)
        except ValueError:
            return [f"{value!r} is not JSON"]
        if not isinstance(parsed, dict):
            return ["is not a key-value object"]
        if any(isinstance(v, (dict, list)) for v in parsed.values()):
            return ["a value is an object or an array"]  # key_value_format.md
    if column.allowed and value not in column.allowed:
        return [f"{value!r} is not an allowed value"]
    if column.parents and column.parents.get(value) != row.get("ServiceCategory"):
        return [f"{value!r} is not a subcategory of {row.get('ServiceCategory')!r}"]
    return []


def _real_time(value: str) -> bool:
    """The date/time format, and a moment that exists (not 2025-02-30T25:61:00Z)."""
    try:
        dt.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return False
    return bool(_DATETIME.match(value))


_USAGE_SET = ("ListUnitPrice", "ContractedUnitPrice", "SkuId", "SkuPriceId")
"""Not null on a Usage row that is no correction (listunitprice.md, skuid.md, …)."""
_NULL_WITH = (
    ("ResourceName", "ResourceId"),
    ("ResourceType", "ResourceId"),
    ("SubAccountName", "SubAccountId"),
    ("SkuMeter", "SkuId"),
)
"""Each first column is null when the second is (resourcename.md, skumeter.md, …)."""
_SKU_COLUMNS = ("SkuId", "SkuPriceId", "SkuMeter", "SkuPriceDetails")
"""Present together: one condition (a provider that publishes price lists) for all four."""


def _conditional(row: dict[str, str]) -> list[str]:
    """The requirements the columns' text states beyond their tables, for these rows."""
    errors = []
    usage = row.get("ChargeCategory") == "Usage" and row.get("ChargeClass", "") == ""
    if any(c in row for c in _SKU_COLUMNS) and not all(c in row for c in _SKU_COLUMNS):
        errors.append(f"{', '.join(_SKU_COLUMNS)}: present together or not at all")
    errors += [f"{c}: must not be null on a Usage row" for c in _USAGE_SET if usage and c in row
               and not row[c]]  # fmt: skip
    for price in ("ListUnitPrice", "ContractedUnitPrice"):
        if row.get(price, "").startswith("-"):
            errors.append(f"{price}: negative")
    errors += [f"{a}: not null, while {b} is" for a, b in _NULL_WITH if row.get(a) and
               b in row and not row[b]]  # fmt: skip
    if row.get("ResourceName") and row.get("ResourceName") == row.get("ResourceId"):
        errors.append("ResourceName: duplicates ResourceId (must be null without a name)")
    if not re.fullmatch(r"[A-Z]{3}", row.get("BillingCurrency") or "XXX"):
        errors.append(f"BillingCurrency: {row['BillingCurrency']!r} is no ISO 4217 code")
    if row.get("ChargeClass") not in ("", "Correction", None):
        errors.append("ChargeClass: must be null or Correction")
    for quantity, unit in (
        ("ConsumedQuantity", "ConsumedUnit"),
        ("PricingQuantity", "PricingUnit"),
    ):
        if usage and not row.get(quantity):
            errors.append(f"{quantity}: must not be null on a Usage row")
        if bool(row.get(quantity)) != bool(row.get(unit)):
            errors.append(f"{unit}: must be null exactly when {quantity} is")
    if usage and not row.get("PricingCategory"):
        errors.append("PricingCategory: must not be null on a Usage row")
    for price, cost in (("ListUnitPrice", "ListCost"), ("ContractedUnitPrice", "ContractedCost")):
        if row.get(price) and row.get("PricingQuantity") and usage:
            try:
                product = Decimal(row[price]) * Decimal(row["PricingQuantity"])
                if product != Decimal(row[cost]):
                    errors.append(f"{cost}: {row[cost]} is not {price} × PricingQuantity")
            except InvalidOperation:
                pass  # reported as a format error
    for start, end in (
        ("ChargePeriodStart", "ChargePeriodEnd"),
        ("BillingPeriodStart", "BillingPeriodEnd"),
    ):
        if row.get(start) and row.get(end) and row[start] > row[end]:
            errors.append(f"{end}: before {start}")
    cost = row.get("BilledCost", "")
    empty = row.get("ChargePeriodStart") and row["ChargePeriodStart"] == row.get("ChargePeriodEnd")
    if empty and _NUMERIC.match(cost) and Decimal(cost) > 0:
        errors.append("ChargePeriodEnd: the period is empty (its end is exclusive)")
    return errors
