"""The pure core reads no clock and does no file I/O, except where that is a module's job.

``now`` and bytes are passed in: the same inputs give the same verdict at any time, on any
machine, and a test needs no files and no frozen clock. The packages are the pure-core
contract's in ``pyproject.toml`` (import-linter: no MLflow, GitHub, processes, network); this
test adds what import rules cannot see, calls.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

CLOCK = {
    ("datetime", "now"),
    ("datetime", "today"),
    ("datetime", "utcnow"),
    ("date", "today"),
    *(("time", name) for name in ("time", "time_ns", "monotonic", "monotonic_ns")),
    *(("time", name) for name in ("perf_counter", "perf_counter_ns", "process_time")),
}
"""Calls that read the clock: ``datetime.now()``, ``dt.date.today()``, ``time.time()``, …"""

FILE_IO = {
    *("open", "read_text", "read_bytes", "write_text", "write_bytes", "iterdir", "glob"),
    *("rglob", "exists", "is_file", "is_dir", "stat", "mkdir", "unlink", "listdir"),
    *("scandir", "walk", "isfile", "isdir", "getmtime", "files", "remove", "rename"),
}
"""Calls that touch the file system: ``open()``, ``Path.read_text``, ``os.listdir``, …"""

ALLOWED = {
    "gate/spec/loader.py": {"open", "exists"},  # load_file reads a spec file (and, missing, looks
    # for it under / where a Windows path used \\); load_bytes is the pure one
    "gate/policy/loader.py": {"is_file", "read_bytes", "is_dir", "iterdir", "files", "exists"},
    # a policy directory is what PolicySet reads, and the built-in default is packaged
    "gate/formats/hydra_defaults.py": {"is_file", "glob", "is_dir"},  # the config groups beside a
    # Hydra config: what Hydra composes into it, read to refuse what would go unseen
    "gate/estimate/prices.py": {"files", "read_text"},  # the packaged price catalog
    "gate/estimate/flops.py": {"files", "read_text"},  # the packaged model-size table
    "gate/estimate/prices_build.py": {"open", "is_file", "write_text"},  # builds the catalog
    "gate/admission/spec_file.py": {"read_bytes", "read_text", "is_dir"},  # the spec a launch
    # names, in the repo, and the .git file that says whether the repo is another's submodule
    "gate/policy/files.py": {"walk"},  # the policy directory's folders, for policies misplaced
}
"""Where the clock or a file is the module's job, and which calls it makes (short, explicit)."""

# ``walk`` also names the loader's own tree walker (a method, not os.walk): calls on ``self``
# and on a local walker are the module's code, not the file system.
_OWN = {"self", "walker"}


def _pure_modules() -> list[Path]:
    # NOTE: read with a pattern, not tomllib: the tests run on Python 3.10 too
    config = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    listed = re.search(r'type = "forbidden"\nsource_modules = \[(.*?)\]', config, re.S)
    assert listed is not None, "the pure-core contract moved in pyproject.toml"
    pure = re.findall(r'"([\w.]+)"', listed.group(1))
    assert "gate.spec" in pure and "gate.ledger" in pure
    files: list[Path] = []
    for module in pure:
        base = ROOT / module.replace(".", "/")
        files += sorted(base.rglob("*.py")) if base.is_dir() else [base.with_suffix(".py")]
    return files


def _calls(path: Path) -> list[tuple[int, str, str]]:
    """(line, what, call name) of each clock or file call in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open":
            found.append((node.lineno, "open()", "open"))
        elif isinstance(func, ast.Attribute):
            base = func.value
            owner = base.id if isinstance(base, ast.Name) else getattr(base, "attr", "")
            if (owner, func.attr) in CLOCK:
                found.append((node.lineno, f"{owner}.{func.attr}()", func.attr))
            elif func.attr in FILE_IO and owner not in _OWN:
                found.append((node.lineno, f"{owner or '…'}.{func.attr}()", func.attr))
    return found


def test_the_pure_modules_are_found():
    names = {p.relative_to(ROOT).as_posix() for p in _pure_modules()}
    assert "gate/estimate/scenarios.py" in names and "gate/ledger/records.py" in names
    assert set(ALLOWED) <= names  # an allowance for a module that moved is stale


@pytest.mark.parametrize("path", _pure_modules(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_pure_core_reads_no_clock_and_no_file(path):
    name = path.relative_to(ROOT).as_posix()
    allowed = ALLOWED.get(name, set())
    bad = [f"{name}:{line}: {what}" for line, what, call in _calls(path) if call not in allowed]
    assert not bad, "pass `now` or the bytes in instead:\n" + "\n".join(bad)


def test_the_scan_sees_a_clock_and_a_file(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import datetime as dt, time\n"
        "from pathlib import Path\n"
        "a = dt.datetime.now(dt.timezone.utc)\n"
        "b = time.time()\n"
        "c = Path('x').read_text()\n"
        "d = open('x')\n",
        encoding="utf-8",
    )
    assert [what for _, what, _ in _calls(probe)] == [
        "datetime.now()",
        "time.time()",
        "….read_text()",
        "open()",
    ]
