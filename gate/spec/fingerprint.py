"""Spec fingerprint: SHA-256 of the canonical parsed spec.

Formatting, comments, key order and explicitly written defaults do not change it; any
semantic change does. Approvals bind to it.
"""

from __future__ import annotations

import hashlib
import json

from gate.spec.experiment import Experiment

ADDED_LATER = (("workload", "model"),)
"""Fields added after specs were first approved: left out while unset, so adding one does
not change the fingerprint (and void the approvals) of every spec that does not use it."""


def fingerprint(spec: Experiment) -> str:
    """Return ``sha256:<hex>`` of the spec's canonical JSON form."""
    data = spec.model_dump(mode="json", by_alias=True)
    for section, key in ADDED_LATER:
        if data[section].get(key) is None:
            data[section].pop(key, None)
    canonical = json.dumps(
        data,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
