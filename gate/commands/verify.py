"""``budget-gate verify``: the launch-time check against the approvals ledger, and the launch."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import uuid

from gate.admission.spec_file import check_launched
from gate.commands.common import (
    as_of,
    ledger_view,
    make_evaluator,
    make_report,
    print_errors,
)
from gate.commands.records import signer_for
from gate.errors import one_line
from gate.evaluation.launching import LAUNCH_KEY_ENV, checked_key, launch_or_join
from gate.integrations.git.repo import RepoPaths
from gate.integrations.signing import SIGNER_ENV
from gate.ledger.approvals import JOIN_WITHIN
from gate.ledger.records import LedgerRecord, when
from gate.policy.findings import Outcome
from gate.reporters import load_reporter


def run(args: argparse.Namespace) -> int:
    """Exit 0 only with no approval needed or a fresh one; else 2 (or 1, 3, 4) and why.

    The ledger is opened only when the spec needs an approval or its policy a budget; a
    cleared spec is then recorded as a launch (unless ``--dry-run``). A spec the Action
    never judges (its name, a submodule) is refused first (exit 3).
    """
    _, now = as_of(args)
    judge_only = args.dry_run or args.as_of is not None  # a past moment launches nothing
    key = _launch_key(args.launch_key)
    evaluator = make_evaluator(args)
    assert isinstance(evaluator.repo_path, RepoPaths)  # make_evaluator's: the policies' root
    if not evaluator.policies.builtin:
        evaluator.policies.require_dir()  # NOTE: a missing one read as the spec misplaced
    check_launched(  # before any ledger read: fail closed
        args.spec, evaluator.repo_path.root, policies_there=not evaluator.policies.builtin
    )
    view = ledger_view(args, now, approvals=True)  # beside the policies, from any directory
    evaluator = dataclasses.replace(evaluator, ledger=view).with_launch_key(key)
    evaluation = evaluator.evaluate_spec(args.spec)
    result = evaluation.result
    if args.format != "text":  # NOTE: the text report carries them at column 1 already
        print_errors([result])
    in_play = result.approval is not None or result.budget is not None
    if result.outcome is Outcome.PASS and in_play and not judge_only:
        signer = signer_for(None)
        by = signer.principal if signer else os.environ.get(SIGNER_ENV)
        launch, new = launch_or_join(view, evaluation, launch_key=key, by=by, signer=signer)
        _say_launch(one_line(str(evaluation.path)), launch, new, view.where, args.launch_key)
    elif result.outcome is Outcome.PASS and in_play:
        why = "--dry-run" if args.dry_run else f"--as-of {args.as_of} judges that moment and"
        print(
            f"budget-gate: {why} records no launch: this pass clears no launch now (the "
            "approval's launches are not used, the budget not committed); launch with a "
            "plain verify",
            file=sys.stderr,
        )
    sys.stdout.write(load_reporter(args.format).render(make_report([result], evaluator)))
    return result.outcome.exit_code


def _say_launch(spec: str, launch: LedgerRecord, new: bool, where: str, given: str | None) -> None:
    """Say whether the launch was recorded, or joined one already recorded (and why).

    NOTE: the key is for the job this launch starts, never for the shell: exported there,
    every later ``verify`` within a day would join this launch and launch free.
    """
    key = launch.launch_key
    if new:
        print(
            f"budget-gate: launch of {spec} recorded in the ledger at {where} (launch key "
            f"{key}: pass {LAUNCH_KEY_ENV}={key} to the job it starts, so its guard and "
            "workers join this launch; not to your shell, where a later verify would join "
            "it too instead of launching)",
            file=sys.stderr,
        )
        return
    origin = "--launch-key" if given is not None else LAUNCH_KEY_ENV
    hours = int(JOIN_WITHIN.total_seconds() // 3600)
    print(
        f"budget-gate: {spec} joins launch {key} recorded at {when(launch.recorded_at)}; no "
        f"new launch of the approval used (the key from {origin} names a launch recorded "
        f"in the last {hours} h: its retries and workers are that launch; to launch anew, "
        f"give no key, or unset {LAUNCH_KEY_ENV})",
        file=sys.stderr,
    )


def _launch_key(given: str | None) -> str:
    if given is not None:
        return checked_key(given, "--launch-key")
    inherited = os.environ.get(LAUNCH_KEY_ENV)
    return checked_key(inherited) if inherited else uuid.uuid4().hex
