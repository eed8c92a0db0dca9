"""Files the services read whole (a kubeconfig, a secret, a GitHub event): bad ones are exit 3.

An acceptance fuzzer found a malformed kubeconfig exiting 70 (the client's YAML and shape
errors were not caught), and a FIFO or a device where one of these files belongs hanging
the command or filling its memory. Each runs as a real process, under a timeout, so a hang
fails the test instead of stalling it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.mlflow_server import free_port

NOT_REGULAR = "is not a regular file (a pipe or a device), which is never read"


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, **(env or {})}
    environ.pop("KUBERNETES_SERVICE_HOST", None)
    return subprocess.run(
        [sys.executable, "-m", "gate", *args],
        capture_output=True, text=True, timeout=60, check=False, cwd=ROOT, env=environ,
    )  # fmt: skip


def _refused(proc: subprocess.CompletedProcess[str], said: str) -> None:
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    [line] = proc.stderr.splitlines()
    assert said in line, line
    assert " — " in line, f"no fix given: {line}"


def _kueue(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    uri = f"http://127.0.0.1:{free_port()}"
    return _run("serve", "kueue-admission", "--tracking-uri", uri, *args, env=env)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"a: [\n", "invalid YAML: "),
        (b"a: b\x00c\n", "invalid YAML: unacceptable character #x0000"),
        (b"a: !!python/object:os.system x\n", "invalid YAML: could not determine a constructor"),
        (b"apiVersion: v1\nkind: Config\nclusters: 5\n", "a field is not of the shape kubectl"),
        (b"[" * 5000 + b"\n", "nested too deep to read"),
    ],
    ids=["parser", "nul-byte", "python-tag", "clusters-a-number", "deep-nesting"],
)
def test_a_malformed_kubeconfig_is_bad_input_naming_the_file(tmp_path, content, said):
    kubeconfig = tmp_path / "bad.yaml"
    kubeconfig.write_bytes(content)
    for proc in (
        _kueue("--kubeconfig", str(kubeconfig)),
        _kueue(env={"KUBECONFIG": str(kubeconfig)}),
    ):
        _refused(proc, f"cannot load the Kubernetes configuration: {kubeconfig}: {said}")


def _fifo(tmp_path: Path) -> str:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    return str(fifo)


@pytest.mark.parametrize("kind", ["fifo", "device", "linked-fifo"])
def test_a_kubeconfig_that_is_no_regular_file_is_refused_before_it_is_read(tmp_path, kind):
    named = "/dev/zero" if kind == "device" else _fifo(tmp_path)
    if kind == "linked-fifo":
        (tmp_path / "link").symlink_to(named)
        named = str(tmp_path / "link")
    for proc in (_kueue("--kubeconfig", named), _kueue(env={"KUBECONFIG": named})):
        _refused(proc, f"kubeconfig {named}: {NOT_REGULAR}")


def _secret(path: str) -> subprocess.CompletedProcess[str]:
    return _run("serve", "skypilot-policy", "--port", "0", "--secret-file", path)


def _tls(path: str) -> subprocess.CompletedProcess[str]:
    env = {"BUDGET_GATE_POLICY_SECRET": "s" * 32}
    files = ["--ssl-certfile", path, "--ssl-keyfile", path]
    return _run("serve", "skypilot-policy", "--port", "0", *files, env=env)


def _ci(path: str) -> subprocess.CompletedProcess[str]:
    env = {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": path}
    return _run("ci", env=env)


@pytest.mark.parametrize(
    ("read", "what"),
    [(_secret, "--secret-file"), (_ci, "GITHUB_EVENT_PATH"), (_tls, "--ssl-certfile")],
    ids=["secret", "ci", "tls"],
)
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_pipe_or_device_for_a_secret_or_event_is_refused_not_a_hang(tmp_path, read, what, kind):
    """A FIFO with no writer hung the command; /dev/zero read until a MemoryError (exit 70)
    for a secret or an event."""
    named = "/dev/zero" if kind == "device" else _fifo(tmp_path)
    _refused(read(named), f"{what} {named}: {NOT_REGULAR}")


@pytest.mark.parametrize(
    ("read", "what"), [(_secret, "--secret-file"), (_ci, "GITHUB_EVENT_PATH")], ids=["secret", "ci"]
)
def test_a_secret_or_event_past_25_mb_is_refused_unread(tmp_path, read, what):
    big = tmp_path / "big"
    with open(big, "wb") as handle:
        handle.truncate(25 * 1024 * 1024 + 1)  # sparse: no 25 MB written to the disk
    _refused(read(str(big)), f"{what} {big}: holds 26,214,401 bytes, past the 25 MB limit")
