"""Which MIG slices each GPU model has, and what share of the GPU one slice is (pure data).

A ``mig_profile`` is priced as its share of a whole GPU, so it must be a profile that the
accelerator really has: ``1g.10gb`` on an L40S (no MIG at all) or ``1g.5gb`` on an
A100-80GB (a 40 GB profile) would price a GPU that cannot exist. And a trial's slices must
fit on one GPU: MIG instances of different GPUs cannot reach each other over NVLink, and a
CUDA process sees one MIG device, so a trial that wants more slices than one GPU holds
(8 × ``1g.10gb`` on an A100-80GB, which has room for 7) wants whole GPUs, and is priced so.

The profiles, their compute slices and how many fit on one GPU come from NVIDIA's
*Multi-Instance GPU User Guide*, sections "Supported GPUs" and "Supported MIG Profiles"
(https://docs.nvidia.com/datacenter/tesla/mig-user-guide/), for the GPU models of the
price catalog; B200 and B300 profile names as NVIDIA's GPU Operator publishes them. A
profile ``Ng.*`` holds N of the GPU's compute slices (7 on A100, H100, H200, B200, B300;
4 on A30) and its memory in GB; the larger of the two shares is its share of the GPU's
price (:func:`slice_share`). Media-extension profiles (``+me``) and
compute-instance sub-profiles are not priced. GPUs the guide lists without a price in the
catalog (H100 94 GB, GH200, H20) are left out until they have one.
"""

from __future__ import annotations

from decimal import Decimal
from types import MappingProxyType

_SEVEN = (("1g", 7), ("1g", 4), ("2g", 3), ("3g", 2), ("4g", 1), ("7g", 1))
"""The six profiles of a 7-slice GPU, smallest first, with how many fit on one GPU."""


def _profiles(*memory: int) -> dict[str, int]:
    """A 7-slice GPU's profiles (from their memory sizes in GB) and how many fit on one."""
    return {f"{g}.{gb}gb": fit for (g, fit), gb in zip(_SEVEN, memory, strict=True)}


MIG_PROFILES: MappingProxyType[str, tuple[int, dict[str, int]]] = MappingProxyType(
    {
        # accelerator (a price-catalog name): (compute slices of the GPU, profile → per GPU)
        "A30": (4, {"1g.6gb": 4, "2g.12gb": 2, "4g.24gb": 1}),
        "A100": (7, _profiles(5, 10, 10, 20, 20, 40)),  # the catalog's A100 is the 40 GB one
        "A100-80GB": (7, _profiles(10, 20, 20, 40, 40, 80)),
        "H100": (7, _profiles(10, 20, 20, 40, 40, 80)),
        "H200": (7, _profiles(18, 35, 35, 71, 71, 141)),
        "B200": (7, _profiles(23, 45, 45, 90, 90, 180)),
        "B300": (7, _profiles(34, 67, 67, 135, 135, 269)),
    }
)
"""MIG-capable GPUs: the whole GPU's compute slices, its profiles and how many fit on it."""

NO_MIG = frozenset(
    {"A10", "A10G", "A6000", "K80", "L4", "L40S", "M60", "P100", "P4", "RTX6000", "T4", "T4g",
     "V100", "RadeonMI25", "RadeonProV520"}
)  # fmt: skip
"""Catalog GPUs that have no MIG at all (pre-Ampere, or Ampere/Ada parts without it)."""


def _key(accelerator: str) -> str | None:
    folded = accelerator.casefold()
    return next((name for name in MIG_PROFILES if name.casefold() == folded), None)


def mig_problem(accelerator: str, profile: str, slices: int = 1) -> str | None:
    """Why ``slices`` × ``profile`` cannot be one trial on ``accelerator`` (``None``: they can)."""
    key = _key(accelerator)
    if key is None:
        if any(name.casefold() == accelerator.casefold() for name in NO_MIG):
            return f"no MIG slices exist on {accelerator} — remove mig_profile: it takes whole GPUs"
        known = ", ".join(MIG_PROFILES)
        return (
            f"budget-gate knows no MIG profiles of {accelerator} (only of {known}) — remove "
            "mig_profile to price whole GPUs"
        )
    profiles = MIG_PROFILES[key][1]
    if profile not in profiles:
        have = ", ".join(profiles)
        return f"no MIG profile {profile} exists on {key} — use one of {have}, or whole GPUs"
    fit = profiles[profile]
    if slices > fit:
        return (
            f"{slices} × {profile} do not fit on one {key}, which holds {fit}: a trial's MIG "
            f"slices share one GPU — ask for at most {fit}, or for whole GPUs (remove "
            "mig_profile)"
        )
    return None


def slice_share(accelerator: str, profile: str) -> Decimal:
    """The share of a whole GPU one ``profile`` slice is: its compute or its memory share.

    ``Ng.Mgb`` holds N of the GPU's compute slices and M of its gigabytes, and takes the
    larger share from everyone else: four ``1g.20gb`` fill an A100-80GB's memory with four
    of its seven compute slices, so each is a quarter of the GPU, not a seventh. An
    accelerator outside the table (the spec is then refused) counts seven slices.
    """
    key = _key(accelerator)
    compute = Decimal(int(profile.split("g.", 1)[0]))
    if key is None:
        return compute / 7
    slices, profiles = MIG_PROFILES[key]
    # NOTE: memory comes in eighths of a 7-slice GPU (quarters of an A30); the guide's GB
    # are rounded (3g.71gb is four eighths of an H200's 141), so count the eighths.
    eighths = 8 if slices == 7 else slices
    whole = max(_gigabytes(p) for p in profiles)
    memory = round(eighths * _gigabytes(profile) / whole)
    return max(compute / slices, Decimal(memory) / eighths)


def _gigabytes(profile: str) -> int:
    """``3g.40gb`` → 40."""
    return int(profile.split("g.", 1)[1].removesuffix("gb"))
