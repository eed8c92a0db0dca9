"""``serve kueue-admission``: the Kueue AdmissionCheck controller's options."""

from __future__ import annotations

import argparse
from typing import Any

from gate.cli.base import EPILOG, Parser, ascii_int


def seconds(text: str) -> int:
    """Whole seconds, 1 to a day."""
    number = ascii_int(text)
    if number is None or not 1 <= number <= 86400:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (1-86400)")
    return number


def add_kueue_admission(what: argparse._SubParsersAction[Any], parents: list[Parser]) -> None:
    """The ``kueue-admission`` service of ``serve``."""
    kueue = what.add_parser(
        "kueue-admission",
        parents=parents,
        help="the Kueue AdmissionCheck: admit only workloads budget-gate clears",
        description="Run the controller of Kueue AdmissionChecks whose controllerName is "
        "budget-gate/kueue-admission (see docs/kueue.md): it keeps them Active and decides "
        "every Workload waiting on one. A Workload names its spec with the annotation "
        "budget-gate/spec on its pod template (or on its job); a spec that passes "
        "budget-gate verify, asked for with the spec's accelerator, GPUs and capacity, is "
        "Ready and its pods get the run tags as labels; no approval yet: Retry; over the "
        "month's budget: Retry when the month resets; anything to change: Rejected; an "
        "unreachable ledger: Pending until it answers (fail closed). Needs the kueue extra.",
        epilog=EPILOG,
    )
    kueue.add_argument(
        "--repo", default=".", metavar="DIR", help="repository the specs' paths are relative to"
    )
    kueue.add_argument(
        "--policy-dir",
        default="policies",
        metavar="DIR",
        help="policies directory, relative to --repo (default: policies)",
    )
    kueue.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="kubeconfig to use (default: the pod's service account in a cluster, else "
        "$KUBECONFIG or ~/.kube/config)",
    )
    kueue.add_argument("--context", metavar="NAME", help="kubeconfig context (default: current)")
    kueue.add_argument(
        "--controller-name",
        default="budget-gate/kueue-admission",
        metavar="NAME",
        help="the AdmissionChecks' spec.controllerName (default: budget-gate/kueue-admission)",
    )
    kueue.add_argument(
        "--missing-spec",
        choices=("reject", "allow"),
        default="reject",
        help="what to do with a GPU workload that names no spec (default: reject)",
    )
    kueue.add_argument(
        "--approval-recheck",
        type=seconds,
        default=300,
        metavar="SECONDS",
        help="how long a workload waiting for an approval stays out of the queue before it "
        "is tried again (default: 300)",
    )
    kueue.add_argument(
        "--resync",
        type=seconds,
        default=30,
        metavar="SECONDS",
        help="how often every workload and AdmissionCheck is listed again (default: 30)",
    )
