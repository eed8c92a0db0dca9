"""A record's searched fields, payload and signature as MLflow params: what no job can edit (pure).

A record's tags are an index for searches and for people, and anyone who can write to the
tracking server can change or delete a tag. A launch whose ``budget_gate.kind`` tag a
training job deleted left every search, so a used approval launched again; a revocation
whose fingerprint tag it changed stopped counting; neither was said. MLflow never changes
or deletes a param once logged (``Changing param values is not allowed``), so every record
also carries, as params, the fields searches filter by (every one, empty when unset, so
none can be added later), its payload (in parts of at most :data:`PART_CHARS`, MLflow's
limit on a param value, with their count) and its signature. A run that has them is
searched and read by them alone; its tags are then only for people.
"""

from __future__ import annotations

from collections.abc import Mapping

from gate.ledger import tracking
from gate.ledger.encoding import KIND, PAYLOAD, PR_NUMBER, SIGNATURE, to_tags
from gate.ledger.records import LedgerRecord

INDEXED = (
    KIND,
    tracking.SPEC,
    tracking.FINGERPRINT,
    tracking.TEAM,
    tracking.COST_CENTER,
    PR_NUMBER,
)
"""The fields the ledger's searches filter by."""
PARTS = tracking.PREFIX + "payload_parts"
PART_CHARS = 6_000
"""MLflow's limit on a param value (a longer one is cut without a word)."""


def part_key(index: int) -> str:
    """The param holding part ``index`` of the payload (the first is named as the tag)."""
    return PAYLOAD if index == 0 else f"{PAYLOAD}.{index}"


def to_params(record: LedgerRecord) -> dict[str, str]:
    """The params of a sealed record: its searched fields, payload parts and signature."""
    tags = to_tags(record)
    text = tags[PAYLOAD]
    parts = [text[at : at + PART_CHARS] for at in range(0, len(text), PART_CHARS)] or [""]
    params = {key: tags.get(key, "") for key in INDEXED}
    params |= {part_key(i): part for i, part in enumerate(parts)}
    params[PARTS] = str(len(parts))
    params[SIGNATURE] = tags.get(SIGNATURE, "")
    return params


def sealed_view(params: Mapping[str, str]) -> dict[str, str] | None:
    """The record's fields as its tags would say them, read from its params alone.

    ``None`` when the run carries no sealed payload (one written before, or not by the
    ledger): it is read from its tags. A part count that is no number reads as no payload,
    which does not parse: the record is malformed, and said.
    """
    count = params.get(PARTS)
    if count is None:
        return None
    view = {key: params[key] for key in INDEXED if params.get(key)}
    if count.isascii() and count.isdigit() and 0 < int(count) <= 64:
        view[PAYLOAD] = "".join(params.get(part_key(i), "") for i in range(int(count)))
    else:
        view[PAYLOAD] = ""
    if params.get(SIGNATURE):
        view[SIGNATURE] = params[SIGNATURE]
    return view
