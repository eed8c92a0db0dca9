"""Run a command in a network namespace with only loopback up (root and ``unshare`` needed).

Ray and SkyPilot probe the network when they start; their tests run here so that no packet
leaves the machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping

from tests.conftest import ROOT


def run_on_loopback(
    command: str, env: Mapping[str, str], *, timeout: float
) -> subprocess.CompletedProcess[str]:
    """``command`` (a shell line) in ``unshare --net`` with ``lo`` up, from the repository."""
    assert os.geteuid() == 0 and shutil.which("unshare"), "these tests need root and unshare"
    return subprocess.run(
        ["unshare", "--net", "sh", "-c", f"ip link set lo up && exec {command}"],
        cwd=ROOT,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
