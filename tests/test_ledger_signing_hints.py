"""Each signing refusal names its own fix, and ``reconcile`` shows its figures when refused.

Newcomer report, finding 2: in a repository ``init`` made (``policies/allowed_signers``),
``reconcile`` at a terminal told the user to set *their own* key, then — with it — to "use
the key allowed_signers lists for alice, or ask the policy owners to add yours", though
only CI may sign a reconciliation; an approval signed as alice for ``--by bob`` got the
same advice instead of "sign as bob". And ``reconcile`` printed no report at all.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest

from gate.errors import InputError
from gate.integrations.signing import signer_from
from gate.ledger.encoding import due_signer, seal
from gate.ledger.records import LedgerRecord, RecordKind, Source
from gate.ledger.signing import CI_PRINCIPAL, SIGNERS_FILE, Signers, Trust, may_sign
from tests.reconcile_kit import GOOD, Lab
from tests.signing_kit import Keys

NOW = dt.datetime(2026, 12, 7, 6, 0, tzinfo=dt.timezone.utc)
FILE = f"policies/{SIGNERS_FILE}"
GENERIC = "ask the policy owners to add yours"
CI_FIX = f"reconciliations count only when CI signs them as {CI_PRINCIPAL}"


def _trust(keys: Keys) -> Trust:
    content = keys.signers("alice", "bob", CI_PRINCIPAL).encode()
    return Trust(Signers.parse(content, FILE), FILE)


def _record(kind: RecordKind, by: str | None = None, source: Source = Source.LOCAL) -> LedgerRecord:
    return LedgerRecord(
        kind=kind,
        spec="experiments/sweep.yaml",
        fingerprint="sha256:" + "0" * 64,
        experiment="sweep",
        recorded_at=NOW,
        currency="USD",
        worst_cost=Decimal(100),
        team="nlp",
        by=by,
        source=source,
    )


def _refused(keys: Keys, record: LedgerRecord, who: str | None, key_of: str | None = None) -> str:
    """The one-line error (message — hint) sealing ``record`` as ``who`` gives."""
    signer = None
    if who is not None:
        signer = signer_from(keys.env(who, key_of=key_of), principal=who)
    with pytest.raises(InputError) as caught:
        seal(record, now=NOW, record_id="r1", signer=signer, trust=_trust(keys))
    return f"{caught.value.message} — {caught.value.hint}"


def test_a_reconciliation_signed_by_a_listed_user_names_ci_and_dry_run(keys: Keys):
    line = _refused(keys, _record(RecordKind.RECONCILIATION, by="budget-gate reconcile"), "alice")
    assert "a reconciliation is signed by alice, not CI" in line
    assert CI_FIX in line and "--dry-run" in line
    assert GENERIC not in line and "lists for alice" not in line


def test_a_reconciliation_without_a_key_names_ci_not_the_users_own_key(keys: Keys):
    line = _refused(keys, _record(RecordKind.RECONCILIATION, by="budget-gate reconcile"), None)
    assert "no signing key is set" in line
    assert CI_FIX in line and "--dry-run" in line
    assert "your SSH key" not in line


def test_an_approval_for_bob_signed_as_alice_says_sign_as_bob(keys: Keys):
    line = _refused(keys, _record(RecordKind.APPROVAL, by="bob"), "alice")
    assert "a local approval by bob is signed by alice" in line
    assert "sign as bob (BUDGET_GATE_SIGNER=bob with bob's key" in line
    assert GENERIC not in line


def test_an_approval_without_a_key_names_the_approvers_key(keys: Keys):
    line = _refused(keys, _record(RecordKind.REVOCATION, by="bob"), None)
    assert "set BUDGET_GATE_SIGNING_KEY to bob's SSH key" in line
    assert "BUDGET_GATE_SIGNER to bob" in line


def test_a_github_approval_signed_by_a_user_names_ci(keys: Keys):
    record = _record(RecordKind.APPROVAL, by="bob", source=Source.GITHUB_REVIEW)
    line = _refused(keys, record, "bob")
    assert f"GitHub approvals count only when CI signs them as {CI_PRINCIPAL}" in line
    assert "--dry-run" not in line and GENERIC not in line


def test_a_key_not_listed_for_the_name_keeps_the_ask_the_owners_fix(keys: Keys):
    # bob's name with alice's key: here the generic fix is the right one
    line = _refused(keys, _record(RecordKind.APPROVAL, by="bob"), "bob", key_of="alice")
    assert f"does not list for bob — use the key {FILE} lists for bob, or {GENERIC}" in line


def test_a_launch_without_a_key_keeps_your_own_key(keys: Keys):
    line = _refused(keys, _record(RecordKind.LAUNCH, by="alice"), None)
    assert "set BUDGET_GATE_SIGNING_KEY to your SSH key" in line
    assert "BUDGET_GATE_SIGNER to your name there" in line


@pytest.mark.parametrize("kind", list(RecordKind))
@pytest.mark.parametrize("source", list(Source))
def test_the_signer_a_hint_names_is_the_one_may_sign_takes(kind: RecordKind, source: Source):
    record = _record(kind, by="bob", source=source)
    due = due_signer(record)
    if due is not None:
        assert may_sign(_as(record, due)) is None
        assert may_sign(_as(record, "mallory")) is not None
    else:
        assert may_sign(_as(record, "mallory")) is None


def _as(record: LedgerRecord, signer: str) -> LedgerRecord:
    from dataclasses import replace

    return replace(record, signer=signer)


# the command: the report first, then the one-line error; nothing recorded


@pytest.fixture
def signed_lab(lab: Lab, keys: Keys, monkeypatch: pytest.MonkeyPatch) -> Lab:
    (Path(lab.team.policy_dir) / SIGNERS_FILE).write_text(
        keys.signers("alice", "carol", CI_PRINCIPAL), encoding="ascii"
    )
    for name, value in keys.env("alice").items():
        monkeypatch.setenv(name, value)
    lab.log(trial=0, hours=10, metrics=GOOD)
    return lab


def _reconciliations(lab: Lab) -> list[LedgerRecord]:
    return [r for r in lab.team.records(lab.spec) if r.kind is RecordKind.RECONCILIATION]


def test_reconcile_refused_prints_the_report_then_the_error_and_records_nothing(
    signed_lab: Lab,
):
    code, out, err = signed_lab.reconcile()
    assert code == 3
    assert "100.00" in out  # the figures: one run, 10 h at 10
    assert "ledger: not recorded — refused (exit 3): cannot record the reconciliation" in out
    assert "(exit 3: not recorded)" in out and "(exit 0)" not in out  # not "pass (exit 0)"
    [line] = [x for x in err.splitlines() if x.startswith("budget-gate: cannot record")]
    assert CI_FIX in line and "--dry-run" in line
    assert "Traceback" not in err
    assert _reconciliations(signed_lab) == []


def test_reconcile_refused_in_json_still_prints_a_whole_document(signed_lab: Lab):
    code, out, _ = signed_lab.reconcile("--format", "json")
    document = json.loads(out)
    assert code == 3
    assert document["ledger"]["record_id"] is None
    assert document["ledger"]["not_recorded"].startswith("refused (exit 3): cannot record")


def test_reconcile_with_cis_key_records_it(
    signed_lab: Lab, keys: Keys, monkeypatch: pytest.MonkeyPatch
):
    for name, value in keys.env(CI_PRINCIPAL).items():
        monkeypatch.setenv(name, value)
    code, out, err = signed_lab.reconcile()
    assert code == 0, err
    assert "not recorded" not in out
    assert len(_reconciliations(signed_lab)) == 1
