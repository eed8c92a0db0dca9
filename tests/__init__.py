"""The suite's package; imported before any conftest, so its setting below holds for all.

The suite starts hundreds of Python processes that import ``gate/`` (the CLI, the servers,
the workers). Where ``PYTHONDONTWRITEBYTECODE`` is set, as some CI images set it, none keeps
its bytecode and each compiles the package anew: ~0.15 s of CPU per process. The tests write
bytecode to ``__pycache__/`` (ignored by git) as any Python run without that setting does;
pytest-xdist's workers and every child inherit the environment.
"""

import os
import sys

os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False
