"""Fuzzing the SkyPilot endpoint's request bodies: a 400 with one line, never a 500.

Not collected on its own: ``tests/test_fuzz.py`` runs it in a loopback-only network
namespace (SkyPilot probes the network and writes ``~/.sky``). Each case is a task as a
user could write it — its accelerators, node count, spot flag, spec name and request name
mutated with the values that broke the endpoint before (``A100:inf``, ``A100:nan``, a NUL
byte in ``BUDGET_GATE_SPEC``, a 5,000-character name) — or raw bytes, sent through
:func:`gate.integrations.skypilot_endpoint.answer_http` with SkyPilot's own decoder. It
asserts: the status is 200 or 400 (a 500 is our bug), a 400 is one line starting
``budget-gate:``, the answer comes within a second, ``sys.tracebacklimit`` is not left at
0, and the decision is logged once, as ``serve`` logs it: a rejection by the policy in one
line, nothing of ours reaching the root logger, where SkyPilot keeps a handler that printed
every decision a second time. The spec named is cheap and needs no approval, so no case
waits for a ledger.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gate.commands.serve import log_decisions
from gate.integrations.skypilot import PolicySettings
from gate.integrations.skypilot_endpoint import answer_http
from tests.mlflow_server import free_port

FUZZ_EXAMPLES = 150
SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {name: ok, labels: {}}
resources: {accelerator: L4, gpus_per_trial: 1, precision: bf16}
workload: {max_epochs: 10, epoch_minutes: 6}
search: {strategy: random, max_trials: 2}
quality_gate: [{metric: val_f1, op: ">=", value: 0.8}]
"""
POLICY = "apiVersion: budget-gate/v1\nkind: Policy\nprices: {overrides: {L4: {on-demand: 1}}}\n"

ACCELERATORS = st.one_of(
    st.sampled_from(
        ["L4:1", "L4", "A100:inf", "A100:nan", "A100:-inf", "A100:1e400", "L4:0.5", "L4:0",
         "L4:-1", "L4:1e30", "L4:1e-300", "", ":", "L4:x", "L4:1:2"]
    ),
    st.dictionaries(st.sampled_from(["L4", "A100", ""]), st.one_of(
        st.integers(-2, 10**40), st.floats(), st.text(max_size=5)), max_size=2),
    st.integers(), st.none(),
)  # fmt: skip
SPEC_NAMES = st.one_of(
    st.sampled_from(
        ["experiments/ok.yaml", "experiments/a\x00b.yaml", "\x00", "../../etc/passwd",
         "/etc/passwd", "x" * 5000, "", " ", "experiments/", "experiments/ok.yaml\n",
         "é/ü.yaml", "experiments/../experiments/ok.yaml", "\\\\server\\share"]
    ),
    st.text(max_size=40),
)  # fmt: skip
NODES = st.one_of(st.integers(-2, 8), st.sampled_from([10**6, 10**40, "two", None, 1.5]))
REQUESTS = st.sampled_from(["launch", "exec", "jobs.launch", "optimize", "nope", ""])


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    """A SkyPilot request body: mostly well-formed around one bad value, sometimes raw bytes."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=200))
    task: dict[str, Any] = {"name": draw(st.sampled_from(["train", "", "x" * 300])),
                            "run": "python t.py"}  # fmt: skip
    task["resources"] = {"accelerators": draw(ACCELERATORS), "use_spot": draw(
        st.sampled_from([False, True, "yes", None]))}  # fmt: skip
    task["num_nodes"] = draw(NODES)
    task["envs"] = {"BUDGET_GATE_SPEC": draw(SPEC_NAMES)}
    fields = {
        "task": json.dumps(task),  # JSON is YAML
        "skypilot_config": draw(st.sampled_from(["{}", "", "[", "null"])),
        "request_name": draw(REQUESTS),
        "user": draw(st.sampled_from(["", "{}", '{"id": "u", "name": "dora"}', "["])),
    }
    return json.dumps(json.dumps(fields)).encode()


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory) -> PolicySettings:
    repo = tmp_path_factory.mktemp("fuzz")
    (repo / "experiments").mkdir()
    (repo / "experiments" / "ok.yaml").write_text(SPEC)
    (repo / "policies").mkdir()
    (repo / "policies" / "default.yaml").write_text(POLICY)
    return PolicySettings(Path(repo), repo / "policies", f"http://127.0.0.1:{free_port()}")


class Decisions(logging.Handler):
    """The decision log as ``serve`` writes it, and the records of ours the root logger got."""

    def __init__(self) -> None:
        super().__init__()
        self.lines = io.StringIO()
        self.at_root: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith("gate."):
            self.at_root.append(record)


@pytest.fixture(scope="module")
def decisions() -> Iterator[Decisions]:
    seen = Decisions()
    with contextlib.redirect_stderr(seen.lines):  # the handler serve adds writes here
        log_decisions()
    logging.getLogger().addHandler(seen)  # beside SkyPilot's own handler
    yield seen
    logging.getLogger().removeHandler(seen)


def _case(**task: Any) -> bytes:
    base: dict[str, Any] = {"name": "train", "run": "x", "resources": {"accelerators": "L4:1"},
                            "envs": {"BUDGET_GATE_SPEC": "experiments/ok.yaml"}}  # fmt: skip
    base.update(task)
    fields = {"task": json.dumps(base), "skypilot_config": "{}", "request_name": "launch",
              "user": ""}  # fmt: skip
    return json.dumps(json.dumps(fields)).encode()


@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,  # timed below
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(bodies())
@example(_case(resources={"accelerators": "A100:inf"}))
@example(_case(envs={"BUDGET_GATE_SPEC": "experiments/a\x00b.yaml"}))
@example(_case(resources={"accelerators": "A100:0"}))  # SkyPilot's check: tracebacklimit 0
@example(_case())  # a request that passes
def test_request_bodies_never_answer_500(endpoint, decisions, body):
    logged = len(decisions.lines.getvalue())
    began = time.perf_counter()
    answer = answer_http(body, endpoint)
    took = time.perf_counter() - began
    assert answer.status in (200, 400), answer.body
    if answer.status == 400:
        assert answer.body.startswith("budget-gate: ") and "\n" not in answer.body, answer.body
    assert getattr(sys, "tracebacklimit", None) != 0
    assert took < 1.0, f"{took:.2f} s"
    lines = decisions.lines.getvalue()[logged:].splitlines()
    assert len(lines) <= 1, lines
    if answer.status == 400 and not answer.body.startswith("budget-gate: malformed request"):
        assert len(lines) == 1 and lines[0].startswith("budget-gate: rejected "), lines
    assert not decisions.at_root, decisions.at_root[0].getMessage()  # printed a second time
