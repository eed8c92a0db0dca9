"""Run the CLI as ``python -m gate``."""

from __future__ import annotations

from gate.cli import run

run()
