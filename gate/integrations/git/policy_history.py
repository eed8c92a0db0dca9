"""Who the policies' git history lists as approvers: their revocations stay in force.

A revocation counts when its author could revoke; one written by an approver who has
since left ``approval.approvers.users`` must keep withdrawing what it withdrew, while a
key the policies never listed as an approver (a launcher's) cancels nothing. The signers
file cannot tell the two apart, so the committed versions of the policy files do.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

from gate.errors import GateError
from gate.integrations.git.repo import file_history, repository_root

HISTORY_DEPTH = 200
"""Commits read per policy file: years of policy edits, read only when a revocation by
someone the policy no longer lists is judged."""


def approver_history(policy_dir: Path | None) -> Callable[[], frozenset[str]] | None:
    """:func:`former_approvers` of ``policy_dir``, read on first need (``None``: built in)."""
    return None if policy_dir is None else partial(former_approvers, policy_dir)


def former_approvers(policy_dir: Path) -> frozenset[str]:
    """Every user a committed version of a policy file in ``policy_dir`` lists as approver.

    Empty outside a git work tree or where git cannot read it: the revocation is then
    judged by the current policy alone, and said not to count.
    """
    if repository_root(policy_dir) is None or not policy_dir.is_dir():
        return frozenset()
    users: set[str] = set()
    for path in sorted(policy_dir.iterdir()):
        if path.suffix not in (".yaml", ".yml") or not path.is_file():
            continue
        try:
            versions = file_history(str(path), HISTORY_DEPTH)
        except GateError:
            continue
        for _, blob in versions:
            users |= _approver_users(blob, str(path))
    return frozenset(users)


def _approver_users(blob: bytes, file: str) -> set[str]:
    """``approval.approvers.users`` of one committed version (nothing if it does not load)."""
    from gate.spec.loader import load_bytes

    try:
        data = load_bytes(blob, file).data
    except GateError:
        return set()
    approval = data.get("approval") if isinstance(data, dict) else None
    approvers = approval.get("approvers") if isinstance(approval, dict) else None
    users = approvers.get("users") if isinstance(approvers, dict) else None
    if not isinstance(users, list):
        return set()
    return {user for user in users if isinstance(user, str)}
