"""Watching Workloads: the inbox of changed objects, and the watch that keeps it fed.

:func:`follow` runs on the controller's watch thread: it puts every added or modified
Workload into the :class:`Inbox`, and when the watch breaks it lists them all again (at
once when the version is too old, else after a backoff), so no change is missed. The
controller takes the inbox's contents, newest object per uid, a batch at a time.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from gate.integrations.kubernetes.api import KubeError, KueueApi

log = logging.getLogger(__name__)


def follow(api: KueueApi, version: str, inbox: Inbox, stop: threading.Event, timeout: int) -> None:
    """Feed ``inbox`` with every Workload change from ``version`` on; on a broken watch, list again.

    ``timeout``: seconds each watch request lasts before it is made again.
    """
    backoff = 1.0
    while not stop.is_set():
        version, failure = _watch_once(api, version, inbox, stop, timeout)
        if failure is None:
            backoff = 1.0
            continue
        if failure.status != 410:  # 410: the version is too old, list at once
            log.warning("watch of workloads failed, again in %s s: %s", backoff, failure)
            stop.wait(backoff)
            backoff = min(backoff * 2, 30.0)
        version = _relist(api, inbox) or version


def _watch_once(
    api: KueueApi, version: str, inbox: Inbox, stop: threading.Event, timeout: int
) -> tuple[str, KubeError | None]:
    try:
        for kind, obj in api.watch_workloads(version, timeout):
            version = str(obj.get("metadata", {}).get("resourceVersion", version))
            if kind in ("ADDED", "MODIFIED"):
                inbox.put([obj])
            if stop.is_set():
                break
    except KubeError as exc:
        return version, exc
    return version, None


def _relist(api: KueueApi, inbox: Inbox) -> str | None:
    try:
        items, version = api.list_workloads()
    except KubeError as exc:
        log.warning("list of workloads failed: %s", exc)
        return None
    inbox.put(items)
    return version


class Inbox:
    """Workloads changed since the last pass, newest object per uid."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, Mapping[str, Any]] = {}
        self._ready = threading.Event()

    def put(self, objects: Iterable[Mapping[str, Any]]) -> None:
        """Add ``objects``, each replacing what the inbox holds for its uid."""
        with self._lock:
            self._items.update(by_uid(objects))
            self._ready.set()

    def wait(self, timeout: float) -> None:
        """Wait until something is put, at most ``timeout`` seconds."""
        self._ready.wait(timeout)

    def wake_on(self, stop: threading.Event) -> None:
        """Wake whoever waits once ``stop`` is set, as if something were put."""
        threading.Thread(target=self._wake_after, args=(stop,), daemon=True).start()

    def _wake_after(self, stop: threading.Event) -> None:
        stop.wait()
        self._ready.set()

    def take(self) -> dict[str, Mapping[str, Any]]:
        """Everything put since the last take, by uid; the inbox is empty after."""
        with self._lock:
            items, self._items = self._items, {}
            self._ready.clear()
            return items


def by_uid(objects: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """``objects`` by uid (or namespace/name when one has none), the last of each kept."""
    out: dict[str, Mapping[str, Any]] = {}
    for obj in objects:
        meta = obj.get("metadata") or {}
        out[str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")] = obj
    return out
