"""Run the CLI as ``python -m gate``."""

from __future__ import annotations

import sys

from gate.cli import main

sys.exit(main())
