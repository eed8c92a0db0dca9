"""Fuzzing the SkyPilot endpoint's request bodies and credentials: a 400 or 401, never a 500.

Not collected on its own: ``tests/test_fuzz.py`` runs it in a loopback-only network
namespace (SkyPilot probes the network and writes ``~/.sky``). Each case is a task as a
user could write it — its accelerators, node count, spot flag, request name, and either
the spec it names (a budget-gate spec, a W&B sweep priced on the task's hardware) or the
``X_BUDGET_GATE_*`` facts it says itself — mutated with the values that broke the
endpoint before (``A100:inf``, ``A100:nan``, a NUL byte in ``BUDGET_GATE_SPEC``, a
5,000-character name, a fact of ``inf``), or raw bytes, sent through
:func:`gate.integrations.skypilot_endpoint.answer_http` with SkyPilot's own decoder. It
asserts: the status is 200 or 400 (a 500 is our bug), a 400 is one line starting
``budget-gate:`` with no validator's internals in it, the answer comes within a second,
``sys.tracebacklimit`` is not left at 0, and the decision is logged once, as ``serve``
logs it: a rejection by the policy in one line, nothing of ours reaching the root logger,
where SkyPilot keeps a handler that printed every decision a second time. Credentials are
fuzzed apart: only the secret, sent as basic or bearer credentials, gets past the 401, and
no answer or log line holds it. The specs are cheap and need no approval, so no case waits
for a ledger.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import logging
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gate.commands.serve import log_decisions
from gate.integrations.skypilot_endpoint import answer_http
from gate.integrations.skypilot_settings import PolicySettings
from tests.mlflow_server import free_port

FUZZ_EXAMPLES = 150
VALIDATOR_WORDS = re.compile(r"constrained-|function-(after|before|wrap)|pydantic|<class |NoneType")
"""What a validator's internals look like in a message: never shown (issue 22)."""
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
SWEEP = """\
# x-budget-gate:
#   epoch_minutes: 6
#   quality_gate: [{metric: val_f1, op: ">=", value: 0.8}]
method: grid
parameters:
  lr: {values: [0.1, 0.01]}
  epochs: {value: 10}
"""
"""A W&B sweep the task launches: priced on the task's hardware."""
FACTS = {
    "X_BUDGET_GATE_MAX_EPOCHS": "10",
    "X_BUDGET_GATE_EPOCH_MINUTES": "6",
    "X_BUDGET_GATE_MAX_TRIALS": "2",
    "X_BUDGET_GATE_QUALITY_GATE": '[{"metric": "val_f1", "op": ">=", "value": 0.8}]',
}
"""A task that says what it runs, judged by itself (no BUDGET_GATE_SPEC)."""

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
         "é/ü.yaml", "experiments/../experiments/ok.yaml", "\\\\server\\share",
         "experiments/sweep.yaml"]
    ),
    st.text(max_size=40),
)  # fmt: skip
FACT_NAMES = st.sampled_from(
    [*FACTS, "X_BUDGET_GATE_GPUS_PER_TRIAL",
     "X_BUDGET_GATE_ACCELERATOR", "X_BUDGET_GATE_CAPACITY", "X_BUDGET_GATE_MAX_TRIAL_COST",
     "X_BUDGET_GATE_SEEDS", "X_BUDGET_GATE_EARLY_STOPPING", "X_BUDGET_GATE_TEAM",
     "X_BUDGET_GATE_LABELS", "X_BUDGET_GATE_NOPE", "X_BUDGET_GATE_", "x_budget_gate_team"]
)  # fmt: skip
FACT_VALUES = st.one_of(
    st.sampled_from(
        ["inf", "nan", "-inf", "1e400", "-1", "0", "1e-300", "1e12", "9" * 40, "", "{", "[",
         "null", '"6"', '{"low": 2, "high": 1}', '[1, "x"]', "a\x00b", "x" * 5000, "H100"]
    ),
    st.text(max_size=20),
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
    if draw(st.booleans()):
        task["envs"] = {"BUDGET_GATE_SPEC": draw(SPEC_NAMES)}
    else:  # what it runs, said by the task itself, one or two facts mutated
        changed = draw(st.dictionaries(FACT_NAMES, FACT_VALUES, min_size=1, max_size=2))
        task["envs"] = {**FACTS, **changed}
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
    (repo / "experiments" / "sweep.yaml").write_text(SWEEP)
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
@example(_case(envs=FACTS))  # a task judged by itself, that passes
@example(_case(envs={**FACTS, "X_BUDGET_GATE_EPOCH_MINUTES": "inf"}))
@example(_case(envs={"BUDGET_GATE_SPEC": "experiments/sweep.yaml"}))  # priced on L4:1
def test_request_bodies_never_answer_500(endpoint, decisions, body):
    logged = len(decisions.lines.getvalue())
    began = time.perf_counter()
    answer = answer_http(body, endpoint)
    took = time.perf_counter() - began
    assert answer.status in (200, 400), answer.body
    if answer.status == 400:
        assert answer.body.startswith("budget-gate: ") and "\n" not in answer.body, answer.body
        assert not VALIDATOR_WORDS.search(answer.body), answer.body
    assert getattr(sys, "tracebacklimit", None) != 0
    assert took < 1.0, f"{took:.2f} s"
    lines = decisions.lines.getvalue()[logged:].splitlines()
    assert len(lines) <= 1, lines
    if answer.status == 400 and not answer.body.startswith("budget-gate: malformed request"):
        assert len(lines) == 1 and lines[0].startswith("budget-gate: rejected "), lines
    assert not decisions.at_root, decisions.at_root[0].getMessage()  # printed a second time


SECRET = "fuzz-secret-" + "0123456789abcdef"


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


PROOFS = st.one_of(
    st.builds(_basic, st.text(max_size=10).filter(lambda u: ":" not in u), st.just(SECRET)),
    st.sampled_from([f"Bearer {SECRET}", f"bearer {SECRET}", f"  BEARER  {SECRET}  "]),
)
"""Credentials that prove the secret: basic (any user) or bearer, any case and spacing."""
NOT_PROOFS = st.one_of(
    st.none(),
    st.text(max_size=60),
    st.builds(
        lambda scheme, raw: f"{scheme} {base64.b64encode(raw).decode()}",
        st.sampled_from(["Basic", "basic", "Bearer", "Digest", ""]),
        st.binary(max_size=60),
    ),
    st.builds(
        _basic,
        st.text(max_size=10),
        st.sampled_from([SECRET[:-1], SECRET + "x", SECRET.upper(), f" {SECRET}", "", "\x00"]),
    ),
    st.sampled_from(
        [f"Bearer {SECRET[:-1]}", f"Bearer {SECRET}\x00", f"Token {SECRET}", SECRET, "Basic",
         "Basic =", "Basic !!!", f"Basic {SECRET}", "Bearer", "Basic " + "A" * 5000]
    ),
)  # fmt: skip
"""Credentials that do not: a near miss of the secret, garbage, another scheme, nothing."""


@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.one_of(PROOFS.map(lambda c: (c, True)), NOT_PROOFS.map(lambda c: (c, False))))
@example((f"Bearer {SECRET}", True))
@example((_basic("budget-gate", SECRET), True))
@example((f"Bearer {SECRET[:-1]}", False))
def test_only_the_secret_passes_and_no_answer_holds_it(endpoint, decisions, case):
    authorization, proves = case
    logged = len(decisions.lines.getvalue())
    answer = answer_http(
        _case(), endpoint, authorization=authorization, secret=SECRET, caller="127.0.0.1:9"
    )
    log = decisions.lines.getvalue()[logged:]
    assert SECRET not in answer.body and SECRET not in log
    if proves:
        assert answer.status == 200, answer.body  # the cheap spec passes
        return
    assert answer.status == 401, answer.body
    assert answer.body.startswith("budget-gate: unauthenticated request refused: "), answer.body
    assert "\n" not in answer.body and answer.headers["WWW-Authenticate"].startswith("Basic ")
    assert log.startswith("budget-gate: refused an unauthenticated request from 127.0.0.1:9: ")
    assert log.count("\n") == 1, log
