"""Build the packaged price catalog (``gate/data/prices.json``) from the public price data.

Run ``python -m gate.estimate.prices_build [DATA_DIR [OUT]]`` from the repository root. The
input is the SkyPilot v8 extract in ``tests/fixtures/prices/gpu_prices.csv`` (its SOURCES.md
gives the source and caveats). The catalog keeps, per accelerator and cloud, the median
per-GPU-hour price over regions and instance types, on-demand and spot.

NOTE: GCP rows the data README flags as priced from a discounted SKU (about half the list
price, in the regions listed below) are dropped before the median, so a gate never
understates a bill. Where a GCP accelerator is left with no rows it is simply absent.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

SOURCE = (
    "SkyPilot v8 public price catalogs (skypilot-org/skypilot-catalog; Azure from the "
    "coopslarhette fork, US regions only), median per-GPU-hour list price over regions"
)
DATE = "snapshot of late 2025 or later (exact date unknown)"

# (accelerator, instance-type prefix) -> regions whose GCP GPU price looks like a discounted SKU.
GCP_FLAGGED: dict[tuple[str, str], frozenset[str]] = {
    ("H100", "a3-highgpu"): frozenset(
        [
            "asia-northeast1",
            "asia-southeast1",
            "australia-southeast1",
            "northamerica-northeast2",
            "us-central1",
            "us-west1",
            "us-west4",
        ]
    ),
    ("H100", "a3-megagpu"): frozenset(
        [
            "asia-northeast1",
            "asia-northeast3",
            "asia-south1",
            "asia-southeast1",
            "europe-west1",
            "europe-west3",
            "northamerica-northeast2",
            "us-east5",
        ]
    ),
    ("H200", ""): frozenset(
        ["asia-south1", "asia-south2", "europe-west1", "europe-west4", "us-east5", "us-south1"]
    ),
    ("A100-80GB", ""): frozenset(["us-central1", "europe-west4", "us-east4"]),
    ("A100", ""): frozenset(
        ["europe-west4", "asia-northeast1", "asia-northeast3", "asia-southeast1"]
    ),
    ("B200", ""): frozenset(
        ["asia-northeast1", "asia-southeast1", "europe-north1", "us-east4", "us-west2", "us-west3"]
    ),
}


def is_flagged(row: dict[str, str]) -> bool:
    """Whether a GCP row is one the data README flags as understated."""
    if row["cloud"] != "gcp":
        return False
    return any(
        row["accelerator"] == accel
        and row["instance_type"].startswith(prefix)
        and row["region"] in regions
        for (accel, prefix), regions in GCP_FLAGGED.items()
    )


def build(csv_path: Path) -> dict[str, object]:
    """Aggregate the per-row CSV into the catalog document."""
    samples: dict[tuple[str, str, str], list[Decimal]] = defaultdict(list)
    dropped = 0
    with csv_path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if is_flagged(row):
                dropped += 1
                continue
            for capacity, column in (
                ("on-demand", "on_demand_usd_per_gpu_hour"),
                ("spot", "spot_usd_per_gpu_hour"),
            ):
                if row[column]:
                    samples[(row["accelerator"], row["cloud"], capacity)].append(
                        Decimal(row[column])
                    )
    prices: dict[str, dict[str, dict[str, str]]] = {}
    for (accel, cloud, capacity), values in sorted(samples.items()):
        median = Decimal(statistics.median(values)).quantize(Decimal("0.00001"))
        prices.setdefault(accel, {}).setdefault(cloud, {})[capacity] = str(median)
    return {
        "source": SOURCE,
        "date": DATE,
        "currency": "USD",
        "notes": f"{dropped} GCP rows flagged as discounted SKUs were dropped",
        "prices": prices,
    }


PACKAGED = Path(__file__).resolve().parents[1] / "data" / "prices.json"
"""The catalog the package ships: ``gate/data/prices.json``."""


def main(argv: list[str] | None = None) -> int:
    """Write the catalog JSON; the default output is the packaged data file."""
    parser = argparse.ArgumentParser(
        prog="python -m gate.estimate.prices_build",
        description="Build budget-gate's price catalog from SkyPilot's public price extract.",
    )
    parser.add_argument(
        "data_dir",
        nargs="?",
        default="tests/fixtures/prices",
        metavar="DATA_DIR",
        help="folder holding gpu_prices.csv (default: tests/fixtures/prices)",
    )
    parser.add_argument(
        "out", nargs="?", default=str(PACKAGED), metavar="OUT", help=f"default: {PACKAGED}"
    )
    args = parser.parse_args(argv)
    source = Path(args.data_dir) / "gpu_prices.csv"
    if not source.is_file():
        parser.error(f"{source} not found")
    Path(args.out).write_text(json.dumps(build(source), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
