"""Serving a test's own HTTP server (the GitHub, Kubernetes and proxy fakes) in the background."""

from __future__ import annotations

import socketserver
import threading

POLL_S = 0.02


def serve_in_background(server: socketserver.BaseServer) -> threading.Thread:
    """Serve ``server`` from a daemon thread that sees ``shutdown()`` within :data:`POLL_S`.

    NOTE: ``serve_forever`` looks for a shutdown every half second by default, so each
    test's teardown waited about that long: 14 s of the Kubernetes cases alone.
    """
    thread = threading.Thread(target=server.serve_forever, args=(POLL_S,), daemon=True)
    thread.start()
    return thread
