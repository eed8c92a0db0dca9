"""The SkyPilot admin policy (``tests/skypilot_*cases.py``), run where no packet can leave.

SkyPilot probes the network and writes ``~/.sky``: the cases run in a pytest of their own
inside ``unshare --net`` (a network namespace with only loopback, brought up; needs root,
as CI has), with ``HOME`` in a temporary directory. Their output, the measured round trip
of the HTTP endpoint and the time each path takes to refuse with the ledger down included,
is printed here.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

from tests.conftest import ROOT
from tests.netns import run_on_loopback

CASES = (
    "tests/skypilot_cases.py",
    "tests/skypilot_trust_cases.py",
    "tests/skypilot_config_cases.py",
)
# SkyPilot 0.14 warns at import (SQLAlchemy 2.0 moves, passlib's crypt); not ours to fix.
SKYPILOT_WARNINGS = (
    "-W",
    "ignore::sqlalchemy.exc.MovedIn20Warning",
    "-W",
    "ignore:'crypt' is deprecated:DeprecationWarning",
)


def test_skypilot_policy_cases_pass_in_a_network_namespace(tmp_path, capsys):
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "SKYPILOT_DISABLE_USAGE_COLLECTION": "1"}
    env.pop("MLFLOW_TRACKING_URI", None)
    # -n 0: the cases run in this one process (addopts asks for a worker per core), so -s
    # shows their output and they share one SkyPilot state under HOME
    command = [sys.executable, "-m", "pytest", "-q", "-s", "-n", "0", "-p", "no:cacheprovider"]
    command += ["--basetemp", str(tmp_path / "cases"), *SKYPILOT_WARNINGS, *CASES]
    proc = run_on_loopback(shlex.join(command), env, timeout=600)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-8000:]
    assert " passed" in proc.stdout
    ran = int(re.search(r"(\d+) passed", proc.stdout).group(1))  # type: ignore[union-attr]
    defined = sum((ROOT / case).read_text().count("\ndef test_") for case in CASES)
    assert ran >= defined  # every case of every file ran (parametrized ones count more)
    timing = [line for line in proc.stdout.splitlines() if "SKYPILOT-POLICY round trip" in line]
    assert len(timing) == 1
    down = [line for line in proc.stdout.splitlines() if line.startswith("LEDGER-DOWN ")]
    assert len(down) == 6  # the class and the endpoint, each against three outages
    with capsys.disabled():  # the measured times, shown in every run of the suite
        print("", timing[0], *down, sep="\n")
    assert (home / ".sky").is_dir()  # SkyPilot's state went to the throwaway HOME


def test_serve_without_skypilot_says_which_extra_to_install():
    probe = (
        "import sys\n"
        "sys.modules['sky'] = None  # as if SkyPilot were not installed\n"
        "from gate.cli import main\n"
        "sys.exit(main(['serve', 'skypilot-policy', '--port', '0']))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 3
    assert proc.stderr.startswith("budget-gate: the SkyPilot admin policy needs SkyPilot (")
    assert proc.stderr.endswith(" — pip install 'budget-gate[skypilot]'\n")


def test_an_option_error_is_told_before_skypilot_is_imported(tmp_path):
    short = tmp_path / "short"
    short.write_text("abc\n")
    probe = (
        "import sys\n"
        "from gate.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "print('sky imported:', 'sky' in sys.modules)\n"
        "sys.exit(code)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "BUDGET_GATE_POLICY_SECRET"}
    for options in (["--port", "0"], ["--port", "0", "--secret-file", str(short)]):
        proc = subprocess.run(
            [sys.executable, "-c", probe, "serve", "skypilot-policy", *options],
            cwd=ROOT, capture_output=True, text=True, check=False, env=env, timeout=60,
        )  # fmt: skip
        assert proc.returncode == 3, proc.stderr
        assert proc.stdout == "sky imported: False\n"
        assert proc.stderr.startswith("budget-gate: ") and proc.stderr.count("\n") == 1
