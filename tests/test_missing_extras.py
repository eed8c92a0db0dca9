"""An extra that is not installed is named with the install line, never a bare import error."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT


@pytest.mark.parametrize(
    ("module", "missing", "named"),
    [("gate.guard.optuna", "optuna", "Optuna"), ("gate.guard.ray", "ray", "Ray Tune")],
)
def test_a_guard_adapter_without_its_engine_names_the_extra(
    module: str, missing: str, named: str
) -> None:
    code = (
        f"import sys; sys.modules[{missing!r}] = None\n"
        "from gate.errors import MissingExtra\n"
        "try:\n"
        f"    import {module}\n"
        "except MissingExtra as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"{module} needs {named}, which is not installed — pip install 'budget-gate[guard]'"
    )


def test_gate_tracking_reads_after_a_plain_import_gate() -> None:
    """The pages write ``import gate`` then ``gate.tracking.run_tags(...)``."""
    code = "import gate; print(gate.tracking.run_tags.__name__)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert (done.returncode, done.stdout.strip()) == (0, "run_tags"), done.stderr
