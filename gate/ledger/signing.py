"""Who may sign ledger records, and whether a record's signature holds (pure; no I/O).

Every record that grants or commits money carries an SSH signature (``ssh-keygen -Y sign
-n budget-gate``) over its payload, the canonical JSON of everything it says. Who may sign
is the policy directory's ``allowed_signers`` file, in the format git uses for SSH commit
signing (``principal[,principal…] [options] key-type base64-key``), read from the base
branch like the policies. A record counts only when its signature verifies with a key the
file lists for the principal the record names as its signer, and that principal may sign
that kind of record:

- a local approval or revocation is signed by its approver (``by``): the name typed after
  ``--by`` is proven by the approver's own key;
- a GitHub approval or revocation is signed by :data:`CI_PRINCIPAL`, the key CI holds after
  it checked the review or comment on GitHub;
- requests, launches and reconciliations by any listed principal.

Without the file, records are not signed and everything is read as written: the output
says so on every run (:data:`UNSIGNED_WARNING`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from typing import TYPE_CHECKING, Protocol

from gate.errors import GateError, InputError, Location

if TYPE_CHECKING:
    from sshsig import PublicKey

NAMESPACE = "budget-gate"
"""The ``-n`` of ``ssh-keygen -Y sign``: a signature made for git commits never verifies here."""
SIGNERS_FILE = "allowed_signers"
"""The signers file, in the policy directory."""
CI_PRINCIPAL = "budget-gate-ci"
"""The principal CI signs GitHub approvals as (its key is a repository secret)."""
MESSAGE_PREFIX = b"budget-gate ledger record\n"
"""What a record's signature covers: this line, then its payload."""
SNAPSHOT_PREFIX = b"budget-gate budget snapshot\n"
"""What a snapshot's signature covers: this line, then what :func:`snapshot_message` lists."""
UNSIGNED_WARNING = (
    "ledger records are not signed (no {file}): anyone who can write to the MLflow tracking "
    "server can record an approval or a reconciliation; add the signers file (budget-gate "
    "init writes one, see docs/threat-model.md)"
)


@dataclass(frozen=True, slots=True)
class Entry:
    """One line of the signers file: who, with which key, for which namespaces and when."""

    patterns: tuple[str, ...]
    key_text: str
    namespaces: tuple[str, ...] | None
    valid_after: dt.datetime | None
    valid_before: dt.datetime | None
    line: int

    def names(self, principal: str) -> bool:
        """Whether the entry's principals match ``principal`` as ssh-keygen matches them.

        An OpenSSH pattern list (:func:`match_pattern_list`): ``*``/``?`` globs, and a
        ``!pattern`` that matches excludes the principal whatever else matches.
        """
        return match_pattern_list(principal, self.patterns)

    def valid(self, at: dt.datetime) -> bool:
        """Whether the key may sign at ``at`` (``valid-after``/``valid-before``) here."""
        if self.namespaces is not None and NAMESPACE not in self.namespaces:
            return False
        if self.valid_after is not None and at < self.valid_after:
            return False
        return self.valid_before is None or at < self.valid_before


class Signers:
    """The parsed signers file; its digest names it in snapshots and messages."""

    def __init__(self, entries: tuple[Entry, ...], digest: str, file: str) -> None:
        self.entries = entries
        self.digest = digest
        self.file = file

    def __getstate__(self) -> dict[str, object]:
        """Picklable (Ray Tune pickles the guard): the parsed keys are rebuilt on first use."""
        return {"entries": self.entries, "digest": self.digest, "file": self.file}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)

    @classmethod
    def parse(cls, content: bytes, file: str) -> Signers:
        """Parse ``content``; a bad line is an input error naming ``file:line``."""
        try:
            text = content.decode("ascii")
        except UnicodeDecodeError as exc:
            before = content[: exc.start]
            row, col = before.count(b"\n") + 1, exc.start - (before.rfind(b"\n") + 1) + 1
            raise InputError(
                "the signers file is not ASCII (a byte-order mark, or a name or comment in "
                "another script)",
                location=Location(file, row, col),
                hint="save it as plain ASCII: principals, key types and keys are ASCII",
            ) from None
        entries = []
        for number, line in enumerate(text.splitlines(), 1):
            stripped = line.strip()
            if stripped and not stripped.startswith("#"):
                entries.append(_entry(stripped, file, number))
        if not entries:
            raise InputError(
                f"{file}: lists no signer",
                hint="add a line per approver and one for CI: "
                f"`alice ssh-ed25519 AAAA…` and `{CI_PRINCIPAL} ssh-ed25519 AAAA…`",
            )
        return cls(tuple(entries), "sha256:" + hashlib.sha256(content).hexdigest(), file)

    @cached_property
    def _keys(self) -> dict[str, PublicKey]:
        from sshsig import PublicKey

        return {e.key_text: PublicKey.from_openssh_str(e.key_text) for e in self.entries}

    def check(self, message: bytes, signature: str, principal: str, at: dt.datetime) -> str | None:
        """Why ``signature`` is not ``principal``'s over ``message`` at ``at``, or ``None``.

        ``message`` is what was signed, prefix included (:data:`MESSAGE_PREFIX`,
        :data:`SNAPSHOT_PREFIX`): a signature over one kind of message never passes for another.
        """
        from sshsig import InvalidSignature, check_signature

        try:
            key = check_signature(message, signature, NAMESPACE)
        except (InvalidSignature, ValueError, NotImplementedError):
            # NOTE: sshsig raises NotImplementedError for a key type it cannot verify (the
            # signature names it): such a record is ignored like any that does not verify.
            return "its signature does not verify"
        listed = [e for e in self.entries if self._keys[e.key_text] == key]
        if not listed:
            return f"it is signed by a key {self.file} does not list"
        if not any(e.names(principal) for e in listed):
            return f"it is signed by a key {self.file} does not list for {principal}"
        if not any(e.names(principal) and e.valid(at) for e in listed):
            return f"the key {self.file} lists for {principal} may not sign it then"
        return None


def _entry(line: str, file: str, number: int) -> Entry:
    from sshsig import PublicKey
    from sshsig.allowed_signers import AllowedSigner

    where = Location(file, number, 1)
    try:
        parsed = AllowedSigner.parse(line)
        key_text = f"{parsed.key_type} {parsed.base64_key}"
        PublicKey.from_openssh_str(key_text)
    except (ValueError, NotImplementedError, IndexError) as exc:
        # NOTE: NotImplementedError is sshsig's word for a key type it does not support.
        raise InputError(
            f"not a signer line ({str(exc) or 'not a principal, a key type and a key'})",
            location=where,
            hint="write `principal ssh-ed25519 AAAA…` as git's allowed_signers file does",
        ) from None
    options = parsed.options or {}
    if "cert-authority" in options:
        raise InputError(
            "cert-authority keys are not supported",
            location=where,
            hint="list each signer's own key",
        )
    namespaces = options.get("namespaces")
    return Entry(
        patterns=split_patterns(parsed.principals),
        key_text=key_text,
        namespaces=tuple(namespaces.split(",")) if namespaces is not None else None,
        valid_after=_stamp(options.get("valid-after"), where),
        valid_before=_stamp(options.get("valid-before"), where),
        line=number,
    )


_MAX_PATTERN = 1023
"""OpenSSH copies each pattern into a 1,024-byte buffer: a longer one makes the whole list
match nothing."""


def split_patterns(pattern_list: str) -> tuple[str, ...]:
    """The patterns of ``pattern_list`` as OpenSSH cuts them (``!`` kept on negated ones).

    NOTE: OpenSSH skips the comma after each pattern, so a trailing comma adds no empty
    pattern, while two commas in a row (or a leading one) do; nothing is stripped.
    """
    patterns: list[str] = []
    i, end = 0, len(pattern_list)
    while i < end:
        comma = pattern_list.find(",", i + (pattern_list[i] == "!"))
        stop = end if comma < 0 else comma
        patterns.append(pattern_list[i:stop])
        i = stop + 1
    return tuple(patterns)


def match_pattern_list(principal: str, patterns: tuple[str, ...]) -> bool:
    """Whether ``principal`` matches ``patterns``: one positive match and no negated one.

    OpenSSH's ``match_pattern_list`` (``match.c``), case-sensitive as ``sshsig.c`` calls it:
    ``*`` and ``?`` are the only wildcards (``[...]`` is literal), and a ``!pattern`` that
    matches refuses the principal whatever else matches. Read any other way, a line such as
    ``*,!alice`` would let its key sign as the very principals ssh-keygen refuses it for.
    """
    positive = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        body = pattern[1:] if negated else pattern
        if len(body) >= _MAX_PATTERN:
            return False
        if match_pattern(principal, body):
            if negated:
                return False
            positive = True
    return positive


def match_pattern(text: str, pattern: str) -> bool:
    """Whether ``pattern`` (``*`` and ``?`` wildcards only) matches all of ``text``.

    Greedy with one backtrack point (the last ``*``): linear in practice, quadratic at
    worst, never exponential whatever a signers file holds.
    """
    t = p = 0
    star, resume = -1, 0
    while t < len(text):
        if p < len(pattern) and pattern[p] == "*":
            star, resume = p, t
            p += 1
        elif p < len(pattern) and pattern[p] in ("?", text[t]):
            t += 1
            p += 1
        elif star >= 0:
            resume += 1
            t, p = resume, star + 1
        else:
            return False
    return all(c == "*" for c in pattern[p:])


def _stamp(value: str | None, where: Location) -> dt.datetime | None:
    """``YYYYMMDD[HHMM[SS]][Z]`` as ssh-keygen reads it (UTC here: the ledger's clock)."""
    if value is None:
        return None
    digits = value.removesuffix("Z")
    formats = {8: "%Y%m%d", 12: "%Y%m%d%H%M", 14: "%Y%m%d%H%M%S"}
    try:
        moment = dt.datetime.strptime(digits, formats[len(digits)])
    except (KeyError, ValueError):
        raise InputError(
            f"{value!r} is not a time",
            location=where,
            hint="write YYYYMMDD or YYYYMMDDHHMM[SS], in UTC",
        ) from None
    return moment.replace(tzinfo=dt.timezone.utc)


class Signer(Protocol):
    """Signs as one principal (an SSH key, :mod:`gate.integrations.signing`)."""

    @property
    def principal(self) -> str:
        """Who the signatures claim to be, as the signers file names them."""
        ...

    def sign(self, message: bytes) -> str:
        """The armored SSH signature of ``message`` in :data:`NAMESPACE`."""
        ...


class Signed(Protocol):
    """What a signature check reads of a record (a :class:`gate.ledger.records.LedgerRecord`)."""

    @property
    def kind(self) -> Enum: ...  # noqa: D102
    @property
    def source(self) -> Enum: ...  # noqa: D102
    @property
    def by(self) -> str | None: ...  # noqa: D102
    @property
    def recorded_at(self) -> dt.datetime: ...  # noqa: D102
    @property
    def signer(self) -> str | None: ...  # noqa: D102
    @property
    def signature(self) -> str | None: ...  # noqa: D102
    @property
    def payload(self) -> str | None: ...  # noqa: D102


@dataclass(frozen=True, slots=True)
class Trust:
    """How the ledger's records are judged: by a signers file, or read as written."""

    signers: Signers | None
    file: str

    @property
    def signed(self) -> bool:
        """Whether records must be signed to count."""
        return self.signers is not None

    @property
    def digest(self) -> str:
        """What names this trust in a snapshot: the signers file's digest, or ``unsigned``."""
        return self.signers.digest if self.signers is not None else "unsigned"

    def warning(self) -> str | None:
        """What every command that reads the ledger says when records are not signed."""
        return None if self.signed else UNSIGNED_WARNING.format(file=self.file)

    def refusal(self, record: Signed) -> str | None:
        """Why ``record`` does not count under this trust, or ``None`` when it does.

        The reasons are short and shared, so a command can count them ("2 records
        ignored: unsigned").
        """
        if self.signers is None:
            return None
        if record.signature is None or record.payload is None or record.signer is None:
            return "unsigned"
        refusal = self.signers.check(
            record_message(record.payload), record.signature, record.signer, record.recorded_at
        )
        if refusal is not None:
            return refusal
        return may_sign(record)


def may_sign(record: Signed) -> str | None:
    """Why the record's signer may not sign a record like it, or ``None``.

    A reconciliation lowers what the month has committed (the launch's worst case gives way
    to the actual cost), so only CI signs one, as it signs snapshots: a launcher's own key
    would otherwise release its launches.
    """
    signer = record.signer or ""
    if record.kind.value == "reconciliation" and signer != CI_PRINCIPAL:
        return f"a reconciliation is signed by {signer}, not CI"
    if record.kind.value not in ("approval", "revocation"):
        return None
    if record.source.value == "local":
        if signer != (record.by or ""):
            return f"a local {record.kind.value} by {record.by} is signed by {signer}"
        return None
    if signer != CI_PRINCIPAL:
        return f"a {record.source.value} {record.kind.value} is signed by {signer}, not CI"
    return None


def signs_as(signer: Signer | None, trust: Trust | None, principal: str, at: dt.datetime) -> bool:
    """Whether ``signer``'s records would count as ``principal``'s under ``trust``.

    Under no signers file any writer's do; else a probe is signed and checked as a reader
    checks a record, so a key the file does not list (an old secret) is found before it
    is relied on.
    """
    if signer is None or trust is None:
        return False
    if trust.signers is None:
        return True
    if signer.principal != principal:
        return False
    probe = record_message("budget-gate: a probe of the signing key")
    try:
        signature = signer.sign(probe)
    except GateError:
        return False
    return trust.signers.check(probe, signature, principal, at) is None


def record_message(payload: str) -> bytes:
    """The bytes a record's signature covers."""
    return MESSAGE_PREFIX + payload.encode()


def snapshot_message(scope: str, month: str, cutoff_ms: int, trust: str, checksum: str) -> bytes:
    """The bytes a snapshot's signature covers: whose month, to when, under which signers."""
    return SNAPSHOT_PREFIX + f"{scope}\n{month}\n{cutoff_ms}\n{trust}\n{checksum}".encode()
