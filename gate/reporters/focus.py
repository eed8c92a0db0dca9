"""The period's runs as FOCUS 1.2 rows (CSV): one usage charge per run, for FinOps tools.

The FinOps Open Cost and Usage Specification (FOCUS) is what Vantage, Datadog, Cloudability
and the clouds' own exports speak. Each priced run of the period is one ``Usage`` row:

- the costs (``BilledCost``, ``EffectiveCost``, ``ListCost``, ``ContractedCost``) are the
  run's cost as reconcile priced it: GPU-hours × the policy's price per GPU-hour, with no
  discount, so they are equal (``x_CostSource`` says they are derived, not billed);
- ``ConsumedQuantity`` and ``PricingQuantity`` are its GPU-hours (``GPU-Hours``), and
  ``ListUnitPrice`` and ``ContractedUnitPrice`` the price: their product is the cost;
- ``ChargePeriodStart``/``End`` are the run's start and end, in whole seconds that hold it
  (a run still running: the report's clock), ``BillingPeriodStart``/``End`` the month it
  started in (a run is counted whole there, so one that crosses the month's end charges
  past it);
- ``ResourceId`` is the MLflow run id and ``ResourceName`` its name (null without one, never
  the id); ``Tags`` (ASCII JSON) hold every label of the spec, then team, model, spec,
  fingerprint, experiment and trial (which win a clash with a label of the same name; an
  empty one of them is left out); ``BillingAccountId`` is the team and ``SubAccountId`` the
  experiment;
- ``SkuId`` is the accelerator, whatever its pricing category, ``SkuPriceId`` the
  accelerator and capacity it was charged as, ``SkuMeter`` ``GPU Usage``;
- ``PricingCategory`` is ``Dynamic`` for spot, ``Standard`` otherwise;
- ``ProviderName`` and ``PublisherName`` are the cloud the policy prices at (its
  ``prices.cloud``, or the spec's ``resources.cloud``), else ``budget-gate``, which is
  always the ``InvoiceIssuerName``: nobody invoiced these amounts.

Text that a training job writes (a run name, a tag) reaches the cells: one that a
spreadsheet would read as a formula (a leading ``=``, ``+``, ``-`` or ``@``) gets a leading
``'``, and a control character its escape (FOCUS asks for strings as written: safety
first). Columns prefixed ``x_`` are budget-gate's own (FOCUS allows custom columns so
prefixed).
Amounts are exact decimals (a run's GPU-hours to 12 decimals, its price to 8: see
:data:`gate.reconcile.actuals.HOUR_PLACES`), so ``EffectiveCost`` sums to the report's
actual total exactly, whatever the order or precision of the sum. The SKU and pricing
category are what the run was charged as, not what its job tagged.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from decimal import Decimal

from gate.errors import one_line
from gate.report.model import MonthReport
from gate.report.runs import RunLine
from gate.spec.trial import Capacity

VERSION = "1.2"
COLUMNS = (
    "BilledCost",
    "EffectiveCost",
    "ListCost",
    "ContractedCost",
    "BillingCurrency",
    "BillingAccountId",
    "BillingAccountName",
    "SubAccountId",
    "SubAccountName",
    "BillingPeriodStart",
    "BillingPeriodEnd",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargeFrequency",
    "ConsumedQuantity",
    "ConsumedUnit",
    "PricingQuantity",
    "PricingUnit",
    "PricingCategory",
    "ListUnitPrice",
    "ContractedUnitPrice",
    "InvoiceIssuerName",
    "ProviderName",
    "PublisherName",
    "ServiceCategory",
    "ServiceSubcategory",
    "ServiceName",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "SkuId",
    "SkuPriceId",
    "SkuMeter",
    "SkuPriceDetails",
    "Tags",
    "x_CostSource",
    "x_PriceBasis",
    "x_Accelerator",
    "x_Capacity",
    "x_RunStatus",
    "x_Qualified",
    "x_FocusVersion",
)
UNIT = "GPU-Hours"
METER = "GPU Usage"
COST_SOURCE = "derived: GPU-hours held × price per GPU-hour (budget-gate), not a billed amount"


def render(report: MonthReport) -> str:
    """A CSV header and one row per priced run of the period."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for line in report.lines:
        writer.writerow(_row(line, report))
    return out.getvalue()


def _row(line: RunLine, report: MonthReport) -> list[str]:
    run, priced = line.result, line.priced
    cost = _number(run.cost)
    price = _number(run.price)
    quantity = _number(run.gpu_hours)
    start = run.start or report.generated_at
    end = run.end or max(report.generated_at, start)
    # NOTE: whole seconds that hold the run: 0.4 s, or 0 s, held is no empty period
    end = max(_whole_seconds_up(end), start.replace(microsecond=0) + dt.timedelta(seconds=1))
    provider = priced.provider or "budget-gate"  # the cloud whose prices it was charged at
    values = {
        "BilledCost": cost,
        "EffectiveCost": cost,
        "ListCost": cost,
        "ContractedCost": cost,
        "BillingCurrency": priced.currency,
        "BillingAccountId": priced.team,
        "BillingAccountName": priced.team,
        "SubAccountId": priced.experiment,
        "SubAccountName": priced.experiment,
        "BillingPeriodStart": _time(line.month.start),
        "BillingPeriodEnd": _time(line.month.end),
        "ChargePeriodStart": _time(start),
        "ChargePeriodEnd": _time(end),
        "ChargeCategory": "Usage",
        "ChargeClass": "",
        "ChargeDescription": f"GPU time of MLflow run {run.run_id} ({line.accelerator} "
        f"{line.capacity})",
        "ChargeFrequency": "Usage-Based",
        "ConsumedQuantity": quantity,
        "ConsumedUnit": UNIT,
        "PricingQuantity": quantity,
        "PricingUnit": UNIT,
        "PricingCategory": "Dynamic" if line.capacity == Capacity.SPOT.value else "Standard",
        "ListUnitPrice": price,
        "ContractedUnitPrice": price,
        "InvoiceIssuerName": "budget-gate",
        "ProviderName": provider,
        "PublisherName": provider,
        "ServiceCategory": "AI and Machine Learning",
        "ServiceSubcategory": "Machine Learning",
        "ServiceName": "ML training runs (MLflow)",
        "ResourceId": run.run_id,
        "ResourceName": run.name,  # FOCUS: null, never the id, when it has no name
        "ResourceType": "MLflow run",
        "SkuId": line.accelerator,  # FOCUS: one SKU whatever its pricing category
        "SkuPriceId": f"{line.accelerator}/{line.capacity}",
        "SkuMeter": METER,
        "SkuPriceDetails": "",
        **_our_columns(line),
    }
    return [values[c] if c in _NUMERIC else inert_cell(values[c]) for c in COLUMNS]


def _our_columns(line: RunLine) -> dict[str, str]:
    """``Tags`` and the ``x_`` columns: what budget-gate knows of the run beside its cost."""
    run, priced = line.result, line.priced
    ours = {
        "team": priced.team,
        "model": priced.model,
        "spec": priced.spec,
        "fingerprint": priced.plan.fingerprint,
        "experiment": priced.experiment,
        "trial": run.trial,
    }
    tags = {**priced.plan.spec.metadata.labels, **{k: v for k, v in ours.items() if v}}
    return {
        # NOTE: ASCII JSON (\u00a0, not a raw no-break space), which inert_cell keeps whole
        "Tags": json.dumps(tags, sort_keys=True),
        "x_CostSource": COST_SOURCE,
        "x_PriceBasis": priced.plan.quote.basis,
        "x_Accelerator": line.accelerator,
        "x_Capacity": line.capacity,
        "x_RunStatus": run.status.value,
        "x_Qualified": "true" if run.qualified else "false",
        "x_FocusVersion": VERSION,
    }


_NUMERIC = frozenset(
    {
        "BilledCost",
        "EffectiveCost",
        "ListCost",
        "ContractedCost",
        "ConsumedQuantity",
        "PricingQuantity",
        "ListUnitPrice",
        "ContractedUnitPrice",
    }
)
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def inert_cell(text: str) -> str:
    """A text cell a spreadsheet shows as text, not a formula it runs.

    A run name or tag a training job chose that starts with ``=``, ``+``, ``-`` or ``@``
    (after spaces too) gets a leading ``'``; a control character (a NUL, an escape, a line
    break) is written as its escape, as every other output shows it.
    """
    text = one_line(text)
    return f"'{text}" if text.lstrip(" ").startswith(_FORMULA) else text


def _number(amount: Decimal) -> str:
    """A plain decimal, never in exponent notation (FOCUS' numeric format allows no sign +)."""
    return f"{amount:f}"


def _time(moment: dt.datetime) -> str:
    """``YYYY-MM-DDTHH:mm:ssZ`` in UTC, as FOCUS' date/time format requires."""
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _whole_seconds_up(moment: dt.datetime) -> dt.datetime:
    """``moment`` rounded up to its next whole second, so a period's end is never cut short."""
    whole = moment.replace(microsecond=0)
    return whole if whole == moment else whole + dt.timedelta(seconds=1)
