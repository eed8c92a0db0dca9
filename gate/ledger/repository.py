"""Which repository a GitHub approval counts in: the one it was given in (pure).

CI records each GitHub approval with the repository (``owner/name``) whose pull request
gave it, inside the signed payload. A ledger and a CI key may serve several repositories
(an organization's secret), and a spec at the same path with the same content in another
repository is another team's decision under another policy: an approval counts only
where it was given. A local approval names no repository and counts wherever its path
and fingerprint match, as before.
"""

from __future__ import annotations

from gate.ledger.records import LedgerRecord, Source


def given_on_github(approval: LedgerRecord) -> bool:
    """Whether ``approval`` was recorded by CI from a review or a comment."""
    return approval.source is not Source.LOCAL


def repository_refusal(approval: LedgerRecord, here: str | None) -> str | None:
    """Why a GitHub approval does not count in repository ``here``, or ``None``.

    NOTE: nothing read the signed ``repository`` before: repository B's launches and pull
    requests were cleared by an approval given on repository A's pull request, by
    approvers B's policy does not list. One that names no repository is refused too: it
    cannot show it was given here. ``here`` unknown (``None``) refuses nothing; the
    caller says it was not checked (:func:`repository_note`).
    """
    if here is None or not given_on_github(approval):
        return None
    given = approval.repository
    if given is not None and given.casefold() == here.casefold():
        return None
    where = f"in {given}" if given else "in a repository it does not name"
    return f"was given on GitHub {where}, not in {here}: approve it in this repository"


def repository_note(approval: LedgerRecord, here: str | None) -> str | None:
    """What is said when a GitHub approval's repository could not be checked, or ``None``."""
    if here is not None or not given_on_github(approval):
        return None
    given = approval.repository or "a repository it does not name"
    return (
        f"{approval.summary()} was given on GitHub in {given}; which repository this is "
        "is unknown, so that was not checked (set GITHUB_REPOSITORY=owner/name, or give "
        "the work tree a remote named origin)"
    )
