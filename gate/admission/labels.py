"""Run tags as Kubernetes labels and annotations for the pods Kueue admits (pure).

Label values are at most 63 characters of ``[A-Za-z0-9._-]``, starting and ending
alphanumeric; a spec path (``experiments/a.yaml``) or a fingerprint (``sha256:…``, 71
characters) is not one. :func:`label_value` makes one: every other character becomes
``-``, the ends are trimmed to an alphanumeric, and a value still over 63 characters keeps
its first 54 and ends with ``-`` and 8 hex digits of the SHA-256 of the original, so two
long values stay apart. The exact tags travel beside them as one JSON annotation
(:data:`RUN_TAGS_ANNOTATION`), which the pods can read (downward API) for their MLflow runs.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping

from gate.ledger import tracking

PREFIX = "budget-gate/"
SPEC_ANNOTATION = PREFIX + "spec"
"""Set by the user on the job's pod template (or the job): the spec's path in the repository."""
RUN_TAGS_ANNOTATION = PREFIX + "run-tags"
"""Set on admitted pods: every run tag as one JSON object, for ``mlflow.start_run(tags=)``."""
LABELS = {
    tracking.TEAM: PREFIX + "team",
    tracking.SPEC: PREFIX + "spec",
    tracking.FINGERPRINT: PREFIX + "fingerprint",
    tracking.APPROVAL_ID: PREFIX + "approval",
}
"""Which run tags become pod labels (for selectors and OpenCost's label allocation)."""
MAX_LABEL_VALUE = 63
_KEEP = 54
_INVALID = re.compile(r"[^A-Za-z0-9._-]")
_VALID = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def label_value(text: str) -> str:
    """``text`` as a valid label value (see the module docstring for the rule)."""
    value = _trim(_INVALID.sub("-", text))
    if len(value) > MAX_LABEL_VALUE:
        digest = hashlib.sha256(text.encode()).hexdigest()[:8]
        head = _trim(value[:_KEEP])
        value = f"{head}-{digest}" if head else digest
    assert is_label_value(value), value
    return value


def is_label_value(value: str) -> bool:
    """Whether Kubernetes accepts ``value`` as a label value."""
    return len(value) <= MAX_LABEL_VALUE and _VALID.match(value) is not None


def pod_labels(tags: Mapping[str, str]) -> dict[str, str]:
    """The labels of :data:`LABELS` for the tags present, with valid values."""
    return {key: label_value(tags[tag]) for tag, key in LABELS.items() if tags.get(tag)}


def pod_annotations(tags: Mapping[str, str]) -> dict[str, str]:
    """The exact tags as one JSON annotation."""
    return {RUN_TAGS_ANNOTATION: json.dumps(dict(tags), sort_keys=True)}


def _trim(value: str) -> str:
    return value.strip("-_.")
