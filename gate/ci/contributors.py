"""Who made a spec's change on a pull request, so that they cannot approve it (pure).

GitHub's pull request names one author, but anyone with push access can add commits: an
approver who pushes a costlier grid to someone else's pull request and then approves it has
approved their own change. So, unless the policy sets ``allow_self_approval``, the author and
the committer of every commit of the pull request that changed the spec (GitHub's logins
from the commits API) may not approve it. Commits are attributed as follows:

- ``web-flow`` is GitHub's committer for edits made on the web and for the merges it makes;
  it is never a person. A web edit's author is the person who made it.
- A merge commit's diff (against its first parent) shows what the merge brought in. A merge
  committed by ``web-flow`` whose other parents are on the base's first-parent line
  ("Update branch": the base merged into the pull request, ``CommitInfo.base_merge``) makes
  no one a contributor: what it brought was the base's, changed and reviewed there. Any
  other merge is its author's, ``web-flow``'s too: GitHub's button also merges a side branch
  into the pull request's (a pull request into it, the merges API), and whoever pressed it
  chose that branch. A merge made by a person (committed on their machine) is theirs.
- A commit whose author or committer email is linked to no account names no login: it may be
  anyone's, the approver's included, so it refuses every approval on GitHub (fail closed).
  Committing it again with a linked email, or an approval through the ledger, is the way on.
- An approval recorded in the ledger (``budget-gate approve --by alice``, signed with alice's
  key) faces the same rules on a pull request (:func:`ledger_refusal`): the pull request's
  author and whoever authored or committed a change to the spec may not give it; a commit
  that names no account refuses none (recording one is the way on for such a commit).
- Bots cannot approve at all (:func:`gate.ci.approvals.identity_refusal`), so a bot's commit
  never decides anything here.

# NOTE: a commit's author and committer are what its git signature claims: someone who sets
# another person's email is taken for that person. GitHub's "require approval of the most
# recent reviewable push" in branch protection knows the pusher; this check does not.
"""

from __future__ import annotations

from gate.ci.approvals import SpecChange, same_login
from gate.ci.model import CommitInfo
from gate.ledger.approvers import Approvers

WEB_FLOW = "web-flow"
"""The account GitHub commits web edits and its own merges as."""
_NOT_ALLOWED = "and the policy does not allow self-approval"


def made_by(commit: CommitInfo) -> tuple[tuple[str, str], ...] | None:
    """Who answers for a commit's changes, as (role, login); None when one is unknown.

    The role is ``authored`` or ``committed``. A merge of the base committed by ``web-flow``
    is GitHub's own (empty); ``web-flow`` itself is never anyone. A ``web-flow`` merge not
    proven to bring in the base is its author's (fail closed: None when that is unknown).
    """
    if len(commit.parents) > 1 and commit.base_merge and _web_flow(commit.committer):
        return ()
    if commit.author is None or commit.committer is None:
        return None
    roles = (("authored", commit.author), ("committed", commit.committer))
    return tuple((role, login) for role, login in roles if not _web_flow(login))


def contributor_refusal(
    login: str, approvers: Approvers, path: str, change: SpecChange
) -> str | None:
    """Why ``login`` made a change to the spec at ``path`` it may not approve, or None.

    A commit that names ``login`` refuses first (the newest such); then one that names no
    account; then a history budget-gate could not read to its start.
    """
    if approvers.allow_self_approval:
        return None
    for commit in change.changes:
        for role, who in made_by(commit) or ():
            if same_login(login, who):
                return f"{login} {role} {commit.sha[:7]}, which changed {path}, {_NOT_ALLOWED}"
    for commit in change.changes:
        if made_by(commit) is None:
            return (
                f"{commit.sha[:7]}, which changed {path}, names no GitHub account as its author "
                f"or committer (their emails are linked to none), so it may be {login}'s own, "
                f"{_NOT_ALLOWED}; commit it again with an email linked to its author's account"
            )
    if not change.complete:
        return (
            f"the pull request has more commits than budget-gate reads, so who changed {path} "
            f"in the earlier ones is unknown, {_NOT_ALLOWED}"
        )
    return None


def _web_flow(login: str | None) -> bool:
    return login is not None and same_login(login, WEB_FLOW)


def ledger_refusal(
    by: str, author: str, approvers: Approvers, path: str, change: SpecChange
) -> str | None:
    """Why a ledger approval by ``by`` does not count on this pull request, or None.

    A signed record proves who gave it, not that they may: an author who signs their own
    approval, or an approver who pushed the costlier grid and then recorded one, approved
    their own change, as they may not through GitHub either.
    """
    if approvers.allow_self_approval:
        return None
    if same_login(by, author):
        return f"the approval by {by} in the ledger: {by} opened the pull request, {_NOT_ALLOWED}"
    for commit in change.changes:
        for role, who in made_by(commit) or ():
            if same_login(by, who):
                return (
                    f"the approval by {by} in the ledger: {by} {role} {commit.sha[:7]}, which "
                    f"changed {path}, {_NOT_ALLOWED}"
                )
    return None
