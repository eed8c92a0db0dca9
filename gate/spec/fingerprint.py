"""Spec fingerprint: SHA-256 of the canonical parsed spec.

Formatting, comments, key order and explicitly written defaults do not change it; any
semantic change does. Approvals bind to it.
"""

from __future__ import annotations

import hashlib
import json

from gate.spec.experiment import Experiment


def fingerprint(spec: Experiment) -> str:
    """Return ``sha256:<hex>`` of the spec's canonical JSON form."""
    canonical = json.dumps(
        spec.model_dump(mode="json", by_alias=True),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
