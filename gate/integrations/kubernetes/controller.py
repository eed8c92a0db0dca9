"""The AdmissionCheck controller: keep our checks Active, decide each Workload waiting on one.

A *pass* decides a batch of Workloads at one moment with one evaluator and one ledger view,
so a team's month is read from the ledger once per pass (and each version's approvals
once), however many Workloads share them; a spec named by many Workloads is read once per
pass and judged per Workload, so a launch recorded for one counts against the next.
:meth:`Controller.run` watches Workloads and decides what changed in batches; every
``resync`` seconds it lists everything again, which also makes new AdmissionChecks of ours
``Active``. A Workload whose decision waits on the ledger stays ``Pending`` and is tried
again every ``ledger_retry`` seconds until the ledger answers.
See :mod:`~gate.integrations.kubernetes.specs`, ``.reruns`` and ``.watch`` (the batches).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from gate.admission.check_state import Decision, Judged, Options, State, decide, rejection
from gate.admission.clearance import Unjudged, judge_spec
from gate.admission.labels import SPEC_ANNOTATION
from gate.admission.spec_file import SpecRefError, read_spec
from gate.admission.workload import (
    MalformedWorkload,
    Workload,
    bare_workload,
    read_workload,
)
from gate.errors import ApprovalRequired, BackendError
from gate.estimate.prices import load_catalog
from gate.evaluation.evaluate import Evaluator
from gate.integrations import open_ledger
from gate.integrations.git.policy_history import approver_history
from gate.integrations.git.remote import this_repository
from gate.integrations.kubernetes.api import KubeError, KueueApi
from gate.integrations.kubernetes.launches import (
    Launch,
    batches,
    launch_key,
    prepare_launch,
    record_batch,
    unrecorded,
)
from gate.integrations.kubernetes.reruns import reruns
from gate.integrations.kubernetes.specs import OwnerCache, spec_named
from gate.integrations.kubernetes.watch import Inbox, by_uid, follow
from gate.integrations.mlflow.tracking_uri import redact
from gate.ledger.records import LedgerStore
from gate.ledger.signing import Trust
from gate.ledger.view import LedgerView
from gate.policy.loader import PolicySet

log = logging.getLogger(__name__)

CONTROLLER_NAME = "budget-gate/kueue-admission"
"""The ``spec.controllerName`` of the AdmissionChecks this controller answers for."""


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


@dataclass(frozen=True, slots=True)
class Settings:
    """Where the specs, policies and ledger are, and the controller's timing (seconds)."""

    repo: Path
    policy_dir: Path
    tracking_uri: str
    controller_name: str = CONTROLLER_NAME
    options: Options = field(default_factory=Options)
    resync: float = 30.0
    batch_window: float = 0.2
    ledger_retry: float = 10.0
    writers: int = 8
    """Status writes in flight at once."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a pass did with one Workload's check."""

    workload: str
    uid: str
    check: str
    state: str
    message: str
    applied: bool = False
    conflict: bool = False
    """The Workload changed since it was read (409): decide it again from a fresh read."""
    waits_on_ledger: bool = False


@dataclass
class _Pass:
    """What one pass shares: the moment, the evaluator, and what it has read."""

    now: dt.datetime
    view: LedgerView
    evaluator: Evaluator
    flavors: dict[str, dict[str, str]]
    specs: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    owners: OwnerCache = field(default_factory=dict)


class Controller:
    """Decides the Workloads of ``api``'s cluster under ``settings``."""

    def __init__(
        self,
        api: KueueApi,
        settings: Settings,
        clock: Callable[[], dt.datetime] = _now,
        ledger: Callable[[Trust], LedgerStore] | None = None,
    ) -> None:
        """``ledger`` opens the ledger store (default: the one at ``settings.tracking_uri``)."""
        self.api = api
        self.settings = settings
        self.clock = clock
        self._opener = ledger
        self.checks: frozenset[str] = frozenset()
        self._catalog = load_catalog()
        self._names = frozenset(self._catalog.accelerators)
        self._store: LedgerStore | None = None
        self._trust = ""
        self._parked: dict[str, tuple[float, Mapping[str, Any]]] = {}

    # -- AdmissionChecks ------------------------------------------------------------------

    def activate(self) -> frozenset[str]:
        """Find our AdmissionChecks and make sure each is ``Active``; their names."""
        ours = [
            check
            for check in self.api.list_admission_checks()
            if (check.get("spec") or {}).get("controllerName") == self.settings.controller_name
        ]
        for check in ours:
            meta = check["metadata"]
            generation = int(meta.get("generation", 0))
            conditions = (check.get("status") or {}).get("conditions") or []
            now = next((c for c in conditions if c.get("type") == "Active"), None)
            if now and now.get("status") == "True" and now.get("observedGeneration") == generation:
                continue
            self.api.apply_active(
                check,
                {
                    "type": "Active",
                    "status": "True",
                    "reason": "Active",
                    "message": "budget-gate decides the workloads from the ledger at "
                    f"{redact(self.settings.tracking_uri)}",
                    "observedGeneration": generation,
                    "lastTransitionTime": _stamp(self.clock()),
                },
            )
            log.info("admission check %s is active", meta["name"])
        self.checks = frozenset(check["metadata"]["name"] for check in ours)
        return self.checks

    # -- one pass -------------------------------------------------------------------------

    def sync(self) -> list[Outcome]:
        """Activate our checks, list every Workload and decide those waiting on us."""
        self.activate()
        items, _ = self.api.list_workloads()
        return self.decide(items)

    def decide(self, objects: Iterable[Mapping[str, Any]]) -> list[Outcome]:
        """Decide, in one pass, every Workload among ``objects`` that waits on our checks."""
        waiting: list[tuple[Workload, str | None]] = []
        for obj in objects:
            try:
                workload, broken = read_workload(obj), None
            except MalformedWorkload as exc:
                bare = bare_workload(obj)
                if bare is None:
                    log.warning("skipped an object that is not a Workload: %s", exc)
                    continue
                workload, broken = bare, str(exc)
            if workload.pending(self.checks):
                waiting.append((workload, broken))
        if not waiting:
            return []
        shared = self._new_pass()
        # NOTE: decided in order with shared caches (each launch counted at once); written
        # concurrently, since each write is a round trip to the tracking server or the API
        # server and the writes do not depend on each other, but for one: a Workload's check
        # turns Ready only once its launch is recorded. A check without a launch is written
        # as soon as it is decided; the launch records (one per spec version) are submitted
        # after the last decision and before every check that waits on one, so such a
        # check never holds a writer while its record waits for one.
        with ThreadPoolExecutor(self.settings.writers) as pool:
            writes: dict[int, Future[list[Outcome]]] = {}
            held: list[tuple[int, Workload, Decision]] = []
            launches: list[Launch] = []
            for place, (workload, broken) in enumerate(waiting):
                if broken is not None:
                    decision, launch = _unreadable(workload, broken), None
                else:
                    decision, launch = self._decide_one(workload, shared)
                if launch is None:
                    writes[place] = pool.submit(self._admit, None, workload, decision)
                else:
                    held.append((place, workload, decision))
                    launches.append(launch)
            recorded: dict[str, Future[BackendError | None]] = {}
            for batch in batches(launches):
                future = pool.submit(record_batch, shared.view, batch)
                recorded.update((launch.workload.uid, future) for launch in batch.launches)
            for place, workload, decision in held:
                writes[place] = pool.submit(self._admit, recorded[workload.uid], workload, decision)
            return [outcome for place in sorted(writes) for outcome in writes[place].result()]

    def _admit(
        self,
        recorded: Future[BackendError | None] | None,
        workload: Workload,
        decision: Decision,
    ) -> list[Outcome]:
        """Write the Workload's checks, once its launch is ``recorded`` (never Ready before)."""
        error = recorded.result() if recorded is not None else None
        if error is not None:
            decision = unrecorded(error)
        return [self._apply(workload, check, decision) for check in workload.pending(self.checks)]

    def _new_pass(self) -> _Pass:
        now = self.clock()
        uri = self.settings.tracking_uri
        home = self.settings.policy_dir
        # NOTE: GitHub approvals count only in their repository (GITHUB_REPOSITORY or the
        # checkout's origin), and revocations by approvers the policies once listed stand
        view = LedgerView(
            self._ledger,
            now,
            approvals=True,
            where=redact(uri),
            history=approver_history(home),
            locate=partial(this_repository, home),
        )
        policies = PolicySet(self.settings.policy_dir)
        # NOTE: no fixes searched: a check's message words its own (clearance.findings)
        evaluator = Evaluator(policies, self._catalog, now.date(), ledger=view, fix_estimates=0)
        return _Pass(now, view, evaluator, self.api.flavor_labels())

    def _ledger(self, trust: Trust) -> LedgerStore:
        if self._store is None or self._trust != trust.digest:
            opener = self._opener or (lambda t: open_ledger(self.settings.tracking_uri, t))
            self._store, self._trust = opener(trust), trust.digest
        return self._store

    def _decide_one(self, workload: Workload, shared: _Pass) -> tuple[Decision, Launch | None]:
        judged = self._judge(workload, shared)
        decision = decide(
            workload, judged, shared.flavors, self._names, self.settings.options, shared.now
        )
        if decision.state is not State.READY or decision.cleared is None:
            return decision, None
        try:
            launch = prepare_launch(shared.view, decision.cleared, workload, shared.evaluator)
        except BackendError as exc:
            return unrecorded(exc), None
        except ApprovalRequired as exc:  # its key names a launch that committed too little
            return rejection(str(exc)), None
        return decision, launch

    def _judge(self, workload: Workload, shared: _Pass) -> Judged:
        try:
            named = spec_named(self.api, workload, shared.owners)
            rerun = reruns(self.api, workload, shared.owners) if named is not None else None
        except SpecRefError as exc:
            return exc
        if named is None or rerun is not None:
            return SpecRefError(rerun) if rerun is not None else None
        return self._judge_spec(named, workload, shared)

    def _judge_spec(self, named: str, workload: Workload, shared: _Pass) -> Judged:
        """The spec judged as this Workload's launch (its own launch does not use it up).

        Each Workload is judged on its own, so one admitted a moment ago in the same pass
        counts against the next; the ledger reads stay one per query and month.
        """
        settings = self.settings
        try:
            if named not in shared.specs:
                shared.specs[named] = read_spec(
                    named, settings.repo, subject=f"annotation {SPEC_ANNOTATION}={named}"
                )
            relative, content = shared.specs[named]
            evaluator = shared.evaluator.with_launch_key(launch_key(workload))
            return judge_spec(evaluator, relative, content, str(settings.policy_dir))
        except (SpecRefError, Unjudged) as exc:
            return exc

    def _apply(self, workload: Workload, check: str, decision: Decision) -> Outcome:
        ledger = decision.state is State.PENDING
        outcome = Outcome(
            workload.key, workload.uid, check, decision.state.value, decision.message,
            waits_on_ledger=ledger,
        )  # fmt: skip
        current = workload.checks.get(check)
        if current and (current.state, current.message) == (decision.state.value, decision.message):
            return outcome
        kept = current.since if current and current.state == decision.state.value else ""
        entry: dict[str, Any] = {
            "name": check,
            "state": decision.state.value,
            "lastTransitionTime": kept or _stamp(self.clock()),
            "message": decision.message,
        }
        if decision.requeue_after is not None:
            entry["requeueAfterSeconds"] = decision.requeue_after
        if decision.pod_set_updates:
            entry["podSetUpdates"] = [dict(update) for update in decision.pod_set_updates]
        try:
            self.api.apply_check(workload, entry)
        except KubeError as exc:
            if exc.status in (404, 409):
                return dataclasses.replace(outcome, conflict=exc.status == 409)
            raise
        log.info("%s %s: %s", decision.state.value, workload.key, decision.message)
        return dataclasses.replace(outcome, applied=True)

    # -- the loop -------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """Decide Workloads as they change until ``stop`` is set."""
        inbox = Inbox()
        self.activate()
        items, version = self.api.list_workloads()
        inbox.put(items)
        watcher = threading.Thread(
            target=follow,
            args=(self.api, version, inbox, stop, int(self.settings.resync)),
            name="workload-watch",
            daemon=True,
        )
        watcher.start()
        inbox.wake_on(stop)  # NOTE: at once, not at the next resync (a pod's whole grace)
        next_sync = time.monotonic() + self.settings.resync
        while not stop.is_set():
            due = min([next_sync, *(at for at, _ in self._parked.values())])
            inbox.wait(max(0.0, due - time.monotonic()))
            if stop.wait(self.settings.batch_window):
                break
            batch = inbox.take()
            try:
                if time.monotonic() >= next_sync:
                    next_sync = time.monotonic() + self.settings.resync
                    self.activate()
                    batch.update(by_uid(self.api.list_workloads()[0]))
                self._round(batch)
            except (KubeError, BackendError) as exc:
                log.error("pass failed, tried again in %s s: %s", self.settings.ledger_retry, exc)
                inbox.put(batch.values())
                stop.wait(self.settings.ledger_retry)

    def _round(self, batch: dict[str, Mapping[str, Any]]) -> None:
        """Decide ``batch`` and what is parked and due; park what waits on the ledger."""
        now = time.monotonic()
        for uid, (at, obj) in list(self._parked.items()):
            if uid in batch and at > now:
                self._parked[uid] = (at, batch.pop(uid))  # changed while parked: keep newest
            elif at <= now:
                batch.setdefault(uid, obj)
                del self._parked[uid]
        for outcome in self.decide(batch.values()):
            if outcome.waits_on_ledger:
                self._parked[outcome.uid] = (now + self.settings.ledger_retry, batch[outcome.uid])
            elif outcome.conflict:
                namespace, name = outcome.workload.split("/", 1)
                fresh = self.api.get_workload(namespace, name)
                if fresh is not None:
                    self._parked[outcome.uid] = (now, fresh)


def _stamp(moment: dt.datetime) -> str:
    """RFC 3339 to the second, as Kubernetes stores times."""
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _unreadable(workload: Workload, broken: str) -> Decision:
    """A Workload whose pod sets cannot be read: rejected, naming what to fix."""
    return Decision(
        State.REJECTED,
        f"budget-gate: workload {workload.key} cannot be read ({broken}) — "
        "fix its pod templates' GPU requests",
    )
