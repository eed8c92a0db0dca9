"""Bad input never crashes: every case exits 3 with one located, hinted diagnostic.

Each committed case in ``tests/cases/invalid/`` starts with a comment the test parses::

    # expect: line=12 col=1 match=duplicate key 'resources'

``line``/``col`` are 1-based positions in the file *including* its comment lines (a
comment changes no YAML semantics but does shift every line down). ``match`` is a
substring of the diagnostic after the location (message and hint). Cases that cannot be
committed as small text files (non-UTF-8 bytes, a 10 MB file, zero bytes) are generated
into ``tmp_path`` from the ``GENERATED`` table below.

A case named ``policy-*.yaml`` is a team policy, not a spec: it is copied to
``policies/team.yaml`` beside the project's ``default.yaml``, and a valid spec of team
``team`` is checked against it, so the diagnostic names the policy file.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from gate.cli import main
from tests.conftest import ROOT
from tests.plain_words import internals_in

CORPUS = ROOT / "tests" / "cases" / "invalid"
POLICIES = ROOT / "policies"
EXIT_INVALID = 3

_EXPECT = re.compile(r"^# expect: line=(?P<line>\d+)(?: col=(?P<col>\d+))? match=(?P<match>.+)$")

# A valid spec body (10 lines); a generated case's line numbers are counted from it.
_SPEC = (
    "apiVersion: budget-gate/v1\n"
    "kind: Experiment\n"
    "metadata:\n"
    "  name: bad-input\n"
    "resources:\n"
    "  accelerator: A100-80GB\n"
    "  gpus_per_trial: 1\n"
    "workload:\n"
    "  max_epochs: 10\n"
    "  epoch_minutes: 5\n"
)


@dataclass(frozen=True)
class Case:
    """One bad input: how to get its file, and where and what the diagnostic must say."""

    id: str
    make: Callable[[Path], Path]
    line: int
    col: int | None
    match: str

    def param(self) -> object:
        return pytest.param(self, id=self.id)


def _committed(path: Path) -> Case:
    header = path.read_text(encoding="utf-8").splitlines()[:1]
    found = _EXPECT.match(header[0]) if header else None
    if found is None:
        raise AssertionError(f"{path}: first line must be '# expect: line=N [col=N] match=...'")
    return Case(
        id=path.stem,
        make=lambda _tmp: path,
        line=int(found["line"]),
        col=int(found["col"]) if found["col"] else None,
        match=found["match"],
    )


def _generated(name: str, content: bytes) -> Callable[[Path], Path]:
    def make(tmp_path: Path) -> Path:
        path = tmp_path / name
        path.write_bytes(content)
        return path

    return make


_CRLF_DUPLICATE = _SPEC.replace(
    "  gpus_per_trial: 1\n", "  gpus_per_trial: 1\n  gpus_per_trial: 2\n"
)
GENERATED = [
    Case(
        "non-utf8-latin1-byte",
        _generated("latin1.yaml", _SPEC.encode().replace(b"bad-input", b"caf\xe9")),
        4,
        12,
        "byte 0xe9 is not valid UTF-8",
    ),
    Case(
        "utf16-with-bom",
        _generated("utf16.yaml", _SPEC.encode("utf-16")),
        1,
        1,
        "byte 0xff is not valid UTF-8",
    ),
    Case(
        "ten-megabytes",
        _generated("huge.yaml", _SPEC.encode() + b"# " + b"x" * (10 * 1024 * 1024) + b"\n"),
        1,
        1,
        "larger than the 1024 KiB limit",
    ),
    Case("zero-bytes", _generated("zero.yaml", b""), 1, 1, "file is empty"),
    *(
        Case(
            f"hidden-line-break-{name}",  # libyaml complained of the line after, unseen
            _generated(
                f"break-{name}.yaml", _SPEC.replace("bad-input", f"bad{char}input").encode()
            ),
            4,
            12,
            f"{name} (",
        )
        for name, char in (("U+2028", "\u2028"), ("U+0085", "\x85"))
    ),
    Case(
        "hidden-line-break-in-quotes-beside-an-open-bracket",  # the bracket is what is wrong
        _generated(
            "break-quoted.yaml",
            (_SPEC.replace("bad-input", '"bad\u2028input"') + "search: [1, 2\n").encode(),
        ),
        11,
        9,
        "close the bracket or brace that starts here",
    ),
    Case(
        "log-range-through-zero",  # no sampler draws log-uniform from -1 (found by a helper)
        _generated(
            "log-range.yaml",
            (_SPEC + "search:\n  parameters:\n    lr: {low: -1, high: 0.01, log: true}\n").encode(),
        ),
        13,
        9,
        "a log range needs low above 0",
    ),
    # a quoted amount in the JSON Schema's digits only: Decimal reads these, no other tool
    *(
        Case(
            f"quoted-amount-{name}",
            _generated(
                f"amount-{name}.yaml",
                (_SPEC + f'stopping:\n  max_trial_cost: "{text}"\n').encode(),
            ),
            12,
            19,
            "a quoted amount is digits with at most six decimals",
        )
        for name, text in (
            ("arabic-indic", "\u0663"),
            ("fullwidth", "\uff11\uff12"),
            ("underscores", "1_000"),
            ("exponent", "1e3"),
            ("sign", "+5"),
            ("spaces", " 2 "),
        )
    ),
    # Python turns no decimal of over 4,300 digits into an int: each form is refused
    *(
        Case(
            f"number-of-{len(digits)}-characters-{name}",
            _generated(f"{name}.yaml", (_SPEC + f"  setup_minutes: {digits}\n").encode()),
            11,
            18,
            f"is a number of {len(digits):,} characters",
        )
        for name, digits in (
            ("decimal", "1" * 4400),
            ("octal", "0" + "1" * 4400),
            ("binary", "0b" + "1" * 16000),
            ("hex", "0x" + "f" * 1000),
        )
    ),
    Case(
        "crlf-line-endings-duplicate-key",
        _generated("crlf.yaml", _CRLF_DUPLICATE.replace("\n", "\r\n").encode()),
        8,
        3,
        "duplicate key 'gpus_per_trial' (first defined at line 7)",
    ),
    Case(
        "non-utf8-after-multibyte-char",
        # "  name: é" is 9 characters but 10 bytes: the column should count characters,
        # as the YAML positions of every other diagnostic do.
        _generated("mixed.yaml", _SPEC.encode().replace(b"bad-input", "é".encode() + b"\xff")),
        4,
        10,
        "byte 0xff is not valid UTF-8",
    ),
]
COMMITTED = [_committed(p) for p in sorted(CORPUS.glob("*.yaml"))]
CASES = COMMITTED + GENERATED


def _check_args(case: Case, path: Path, tmp_path: Path) -> tuple[Path, list[str]]:
    """The file the diagnostic must name, and the ``check`` arguments for the case."""
    if not case.id.startswith("policy-"):
        return path, ["check", "--policy-dir", str(POLICIES), str(path)]
    policies = tmp_path / "policies"
    policies.mkdir(exist_ok=True)
    shutil.copy(POLICIES / "default.yaml", policies / "default.yaml")
    team = policies / "team.yaml"
    shutil.copy(path, team)
    spec = tmp_path / "spec.yaml"
    spec.write_text(_SPEC.replace("  name: bad-input\n", "  name: bad-input\n  team: team\n"))
    return team, ["check", "--policy-dir", str(policies), str(spec)]


def _run_check(
    case: Case, path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[Path, int, str, str]:
    named, args = _check_args(case, path, tmp_path)
    code = main(args)
    out, err = capsys.readouterr()
    return named, code, out, err


def _assert_reported(case: Case, path: Path, code: int, out: str, err: str) -> None:
    assert "Traceback" not in out
    assert "Traceback" not in err
    assert "internal error" not in err, err
    assert code == EXIT_INVALID, f"exit {code}, stderr:\n{err}"
    assert internals_in(out + err, path) == []  # no validator internals, ever (issue 22)
    located = re.compile(
        rf"^{re.escape(str(path))}:(?P<line>\d+):(?P<col>\d+): (?P<message>.+?) — (?P<hint>\S.*)$"
    )
    # NOTE: a spec's input errors go where findings go (stdout), each at column 1; a policy
    # error ends the command and is the CLI's one diagnostic on stderr.
    assert all(line.startswith(str(path)) for line in err.splitlines() if line.strip()), err
    lines = [line for line in (out + err).splitlines() if line.startswith(str(path))]
    assert lines, f"no diagnostic:\n{out}{err}"
    parsed = []
    for line in lines:
        found = located.match(line)
        assert found, f"not a located 'file:line:col: message — hint' diagnostic: {line!r}"
        parsed.append(found)
    hits = [
        m
        for m in parsed
        if int(m["line"]) == case.line
        and (case.col is None or int(m["col"]) == case.col)
        and case.match in f"{m['message']} — {m['hint']}"
    ]
    want = f"{case.line}:{case.col}" if case.col else f"{case.line}:*"
    assert hits, f"expected a diagnostic at {want} containing {case.match!r}, got:\n{err}"


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_bad_input_is_a_located_diagnostic(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = case.make(tmp_path)
    named, code, out, err = _run_check(case, path, tmp_path, capsys)
    _assert_reported(case, named, code, out, err)


def test_corpus_is_large_and_small() -> None:
    assert len(CASES) >= 30
    assert len({c.id for c in CASES}) == len(CASES)
    for path in CORPUS.iterdir():
        assert path.suffix == ".yaml", f"{path}: the corpus holds only .yaml cases"
        assert path.stat().st_size < 4096, f"{path}: keep committed cases small; generate big ones"


_BY_ID = {c.id: c for c in CASES}


@pytest.mark.parametrize(
    "case_id",
    [
        "alias-bomb-billion-laughs",
        "yaml-tab-indentation",
        "non-utf8-latin1-byte",
        "policy-extends-300-characters",
    ],
)
def test_real_process_reports_without_traceback(case_id: str, tmp_path: Path) -> None:
    case = _BY_ID[case_id]
    path, args = _check_args(case, case.make(tmp_path), tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "gate", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    _assert_reported(case, path, proc.returncode, proc.stdout, proc.stderr)


def _huge_grid(parameters: int, values: int, seeds: int) -> str:
    dims = "".join(
        f"    p{i}: {{values: [{', '.join(str(v) for v in range(values))}]}}\n"
        for i in range(parameters)
    )
    return (
        "apiVersion: budget-gate/v1\n"
        "kind: Experiment\n"
        "metadata:\n"
        "  name: huge-grid\n"
        "  labels: {cost-center: cc-1, environment: research, workload-type: hpo}\n"
        "resources:\n"
        "  accelerator: A100-80GB\n"
        "  gpus_per_trial: 1\n"
        "  precision: bf16\n"
        "workload:\n"
        "  max_epochs: 10\n"
        "  epoch_minutes: 5\n"
        "search:\n"
        "  strategy: grid\n"
        f"  seeds: [{', '.join(str(s) for s in range(seeds))}]\n"
        "  parameters:\n"
        f"{dims}"
        "quality_gate:\n"
        '  - {metric: val_f1, op: ">=", value: 0.8}\n'
    )


def test_grid_of_10_to_the_15_is_a_verdict_not_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """15 parameters × 10 values × 3 seeds: counted, never enumerated, and over the limits."""
    spec = tmp_path / "huge-grid.yaml"
    spec.write_text(_huge_grid(parameters=15, values=10, seeds=3), encoding="utf-8")
    start = time.thread_time()  # CPU: the wall clock of a parallel run measures the neighbours
    code = main(["check", "--policy-dir", str(POLICIES), "--format", "json", str(spec)])
    elapsed = time.thread_time() - start
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert err == ""
    assert code == 1, out
    report = json.loads(out)
    result = report["results"][0]
    assert result["outcome"] == "violation"
    assert result["estimate"]["worst"]["trials"] == 10**15 * 3
    assert result["estimate"]["expected"]["trials"] == 10**15 * 3
    assert "BG104" in {f["rule_id"] for f in result["findings"]}  # max_experiment_cost
    assert elapsed < 2.0, f"took {elapsed:.2f} s: is the grid being enumerated?"


def test_a_file_name_with_control_characters_is_shown_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A break in a name cannot start a line (a runner command), an escape cannot reach the
    terminal: in the report, the quiet report and the error lines alike."""
    name = "x\n::error title=budget-gate::approved\n\x1b[2J.yaml"
    (tmp_path / name).write_text("apiVersion: budget-gate/v1\nkind: [\n", encoding="utf-8")
    shown = f"{tmp_path}/x\\n::error title=budget-gate::approved\\n\\x1b[2J.yaml:3:1: invalid YAML"
    for extra in ([], ["--quiet"]):
        code = main(["check", str(tmp_path), "--policy-dir", str(POLICIES), *extra])
        out, err = capsys.readouterr()
        assert code == EXIT_INVALID
        lines = (out + err).splitlines()
        assert not [line for line in lines if line.startswith("::")], lines
        assert "\x1b" not in out + err
        assert any(line.startswith(shown) for line in lines), lines
    missing = str(tmp_path / "gone\n::error title=budget-gate::approved.yaml")
    for command in (["check", missing], ["import", missing]):  # errors that quote the name
        assert main([*command, "--policy-dir", str(POLICIES)]) == EXIT_INVALID
        out, err = capsys.readouterr()
        assert not [line for line in (out + err).splitlines() if line.startswith("::")]
        assert "gone\\n::error title=budget-gate::approved.yaml: no such file" in out + err


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "sarif", "github"])
def test_a_file_name_that_is_not_utf8_is_refused_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    """No report can name such a file: SARIF's URI and Markdown's widths crashed on it."""
    folder = tmp_path / "specs"
    folder.mkdir()
    name = os.fsdecode(b"bad\xff.yaml")
    (folder / name).write_text(_SPEC, encoding="utf-8")
    code = main(["check", str(folder), "--policy-dir", str(POLICIES), "--format", fmt])
    out, err = capsys.readouterr()
    assert code == EXIT_INVALID
    assert out == ""
    assert err == (
        f"budget-gate: {folder}/bad\\udcff.yaml: the file name is not UTF-8 — rename the "
        "file: reports (JSON, SARIF, Markdown) name each spec in UTF-8\n"
    )


def test_a_fifo_with_no_writer_is_an_empty_file_not_a_hang(tmp_path: Path) -> None:
    """Opened as usual, a FIFO nobody writes to would block the open forever (and the CI
    job with it); a device is read to its size limit; a pipe that carries a spec is read."""
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    argv = [sys.executable, "-m", "gate", "check", "--policy-dir", str(POLICIES)]
    for named, said in ((str(fifo), ":1:1: file is empty"), ("/dev/zero", ":1:1: file is larger")):
        proc = subprocess.run([*argv, named], capture_output=True, text=True, timeout=60)
        assert proc.returncode == EXIT_INVALID
        assert f"{named}{said}" in proc.stdout
        assert "Traceback" not in proc.stderr
    spec = (ROOT / "examples" / "cifar-sweep.yaml").read_text()
    proc = subprocess.run(
        [*argv, "/dev/stdin"], input=spec, capture_output=True, text=True, timeout=60
    )
    assert "/dev/stdin — cifar10-resnet18-sweep" in proc.stdout, proc.stdout + proc.stderr
