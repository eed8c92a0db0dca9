"""Red-team: ``signs`` is ``bool(BUDGET_GATE_SIGNING_KEY)``, not "this run can write a record
the signed ledger will read". With a key the base's allowed_signers does not list for
budget-gate-ci (a rotated key, the old secret left in place) or a key that is only
whitespace, an unnamed ``/budget-gate approve`` is bound and counts in its own run (green),
the record is refused ("not recorded"), the sticky's lines are ignored under a signed
ledger, and a README push turns the pull request back to pending: a legitimate approval
lost, with the run having said "approved".

Expected (safe): the comment's verdict does not flip on a push that leaves the spec alone:
either it is refused at once (like a run with no key: "nothing here keeps...") or its
binding is kept.
"""

from __future__ import annotations

import datetime as dt

import pytest

from gate.ledger.signing import CI_PRINCIPAL
from tests.github.ci_kit import BASE, SPEC, T0, PullRequestStory, fresh, grid_spec
from tests.ledger_kit import unique
from tests.signing_kit import Keys

HOUR = dt.timedelta(hours=1)


@pytest.mark.parametrize("key", ["unlisted", "blank", "listed"])
def test_an_unusable_ci_key_never_makes_a_green_that_the_next_push_takes_back(
    story: PullRequestStory, mlflow_server, keys: Keys, key: str
) -> None:
    story.repo.put_file("policies/allowed_signers", keys.signers(CI_PRINCIPAL, "alice"), ref=BASE)
    material = {"unlisted": str(keys.private("launcher")), "blank": " \n"}.get(
        key, str(keys.private(CI_PRINCIPAL))
    )
    story.extra_env = {
        "MLFLOW_TRACKING_URI": mlflow_server.uri,
        "BUDGET_GATE_SIGNING_KEY": material,
    }
    team = unique(f"key-{key}")
    story.change(SPEC, grid_spec(4).replace("team: nlp", f"team: {team}"), at=T0 + HOUR)
    assert story.run("pull_request.opened", story.pull_request_event()).code == 0
    ran = story.run(
        "issue_comment", story.comment_event("alice", "/budget-gate approve ok", at=fresh())
    )
    assert ran.code == 0, ran.stderr
    after_comment = story.status()[0]
    assert after_comment == ("success" if key == "listed" else "pending")  # CI's key keeps it
    story.push({"README.md": "typo\n"}, at=fresh())  # leaves the spec alone
    again = story.run("pull_request.synchronize", story.pull_request_event("synchronize"))
    assert again.code == 0, again.stderr
    assert story.status()[0] == after_comment, (
        f"green after alice's comment ({after_comment}), then {story.status()} after a README "
        f"push; the comment run said: {ran.stdout[-400:]}"
    )
