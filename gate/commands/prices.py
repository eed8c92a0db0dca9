"""``budget-gate prices``: the packaged price catalog, for all accelerators or one."""

from __future__ import annotations

import argparse

from gate.errors import InputError
from gate.estimate.prices import load_catalog
from gate.money import format_amount
from gate.words import aligned


def run(args: argparse.Namespace) -> int:
    """Print USD per GPU-hour by accelerator, cloud and capacity, with the catalog's source."""
    catalog = load_catalog()
    names = catalog.accelerators
    if args.accelerator:
        if args.accelerator not in catalog.prices:
            from gate.estimate.prices import closest_accelerator

            close = closest_accelerator(args.accelerator, names)
            known = f"known accelerators: {', '.join(names)}"
            raise InputError(
                f"unknown accelerator {args.accelerator!r}",
                hint=f"did you mean {close!r}? ({known})" if close else known,
            )
        names = [args.accelerator]
    rows = [("accelerator", "cloud", "on-demand", "spot")]
    for name in names:
        for cloud, caps in sorted(catalog.prices[name].items()):
            rows.append(
                (
                    name,
                    cloud,
                    format_amount(caps["on-demand"], 4) if "on-demand" in caps else "-",
                    format_amount(caps["spot"], 4) if "spot" in caps else "-",
                )
            )
    for line in aligned(rows, left=(0, 1)):
        print(line)
    print(f"\n{catalog.currency} per GPU-hour. source: {catalog.source}; {catalog.date}")
    return 0
