"""The SkyPilot admin policy under attack and outage, with SkyPilot's real classes (issue 21).

Not collected on its own: ``tests/test_skypilot_policy.py`` runs it with
``tests/skypilot_cases.py`` inside a loopback-only network namespace. Covered here:

- ``serve skypilot-policy`` authenticates its caller (basic auth from the policy URL or
  ``$NETRC``, bearer), refuses the rest with 401 before the ledger is touched, and serves
  HTTPS;
- every decision is logged once, and a malformed task does not leave SkyPilot's
  ``sys.tracebacklimit = 0`` behind;
- ``BUDGET_GATE_SPEC`` with a NUL byte and ``accelerators: A100:inf`` are one-line 400s;
- a MIG spec is not a whole-GPU pass at launch;
- with the ledger down (stopped, refused, blackholed) the class and the endpoint refuse
  within 10 s and SkyPilot's client receives the rejection (``LEDGER-DOWN`` lines).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests
import sky
from sky import admin_policy, exceptions, models

from gate.integrations.skypilot import BudgetGatePolicy, apply_policy
from gate.integrations.skypilot_endpoint import answer_http
from tests import skypilot_cases
from tests.ledger_down import LIMIT_S, MLFLOW_DEFAULTS, OUTAGES, ledger_down
from tests.ledger_kit import fingerprint_of
from tests.loopback import serve_in_background
from tests.mlflow_server import CLIENT_ENV, MlflowServer
from tests.skypilot_cases import (
    SECRET,
    PolicyServer,
    approve,
    encoded,
    rejection,
    request,
    settings,
    spec_of,
    task,
    write_spec,
)

# The fixtures of tests/skypilot_cases.py: the namespace guard (autouse) and the repository.
_inside_a_network_namespace = skypilot_cases._inside_a_network_namespace
repo = skypilot_cases.repo

MIG_SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {{name: mig, team: {team}, owner: carol, labels: {{cost-center: cc-1}}}}
resources: {{accelerator: A100-80GB, gpus_per_trial: 7, precision: bf16{mig}}}
workload: {{max_epochs: 2, epoch_minutes: 6}}
search: {{strategy: random, max_trials: 2}}
quality_gate: [{{metric: val_f1, op: ">=", value: 0.8}}]
"""


class Recorder:
    """A tracking server stand-in that records every request and forwards none."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                recorder.seen.append(self.path)
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_POST = do_GET

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        serve_in_background(self._http)
        self.uri = f"http://127.0.0.1:{self._http.server_address[1]}"

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()


def _body(tmp: Path, spec: str, accelerators: str = "L4:1") -> bytes:
    return json.dumps(request(task(tmp, spec, accelerators)).encode()).encode()


# --- who may ask ------------------------------------------------------------------------


def test_an_unauthenticated_caller_is_refused_before_the_ledger_is_read(repo, tmp_path):
    spec = write_spec(repo, 8)  # needs an approval: an answer would read the ledger
    recorder = Recorder()
    server = PolicyServer(repo.root, recorder.uri)
    try:
        body = _body(tmp_path, spec)
        for auth in (None, ("budget-gate", "wrong-secret-0123456789"), ("budget-gate", "")):
            answer = requests.post(server.bare_url, data=body, auth=auth, timeout=30)
            assert answer.status_code == 401
            assert answer.headers["WWW-Authenticate"].startswith('Basic realm="budget-gate"')
            assert answer.text.startswith("budget-gate: unauthenticated request refused: ")
            assert "\n" not in answer.text
        bearer = {"Authorization": "Bearer nope"}
        assert (
            requests.post(server.bare_url, data=body, headers=bearer, timeout=30).status_code == 401
        )
        assert recorder.seen == []  # nothing reached the ledger
        client = admin_policy.RestfulAdminPolicy(server.bare_url)
        with pytest.raises(exceptions.RestfulPolicyError, match="401"):
            client.validate_and_mutate(request(task(tmp_path, spec)))
        assert recorder.seen == []
        # the same request with the secret is judged, and so reads the ledger
        answer = requests.post(server.bare_url, data=body, auth=("x", SECRET), timeout=30)
        assert answer.status_code == 400 and "the ledger is unreachable" in answer.text
        assert recorder.seen
        bearer = {"Authorization": f"Bearer {SECRET}"}
        assert (
            requests.post(server.bare_url, data=body, headers=bearer, timeout=30).status_code == 400
        )
    finally:
        log = server.stop()
        recorder.close()
    assert log.count("refused an unauthenticated request from 127.0.0.1:") == 5
    assert SECRET not in log and SECRET not in server.first_line


def test_skypilots_client_authenticates_with_the_url_or_a_netrc(repo, tmp_path, monkeypatch):
    spec = write_spec(repo, 8)
    approve(repo, spec)
    server = PolicyServer(repo.root, repo.uri)
    try:
        with_url = admin_policy.RestfulAdminPolicy(server.url)  # http://budget-gate:SECRET@...
        mutated = with_url.validate_and_mutate(request(task(tmp_path, spec)))
        assert mutated.task.envs["BUDGET_GATE_FINGERPRINT"] == fingerprint_of(spec)
        with pytest.raises(exceptions.UserRequestRejectedByPolicy) as by_url:
            with_url.validate_and_mutate(request(task(tmp_path, spec, "L4:2")))
        # NOTE: SkyPilot prints the policy URL in every rejection: credentials in it reach
        # every user who is refused. A netrc entry keeps the URL clean.
        assert SECRET in str(by_url.value)
        netrc = tmp_path / "netrc"
        netrc.write_text(f"machine 127.0.0.1 login budget-gate password {SECRET}\n")
        netrc.chmod(0o600)
        monkeypatch.setenv("NETRC", str(netrc))
        with_netrc = admin_policy.RestfulAdminPolicy(server.bare_url)
        assert with_netrc.validate_and_mutate(request(task(tmp_path, spec))).task.envs
        with pytest.raises(exceptions.UserRequestRejectedByPolicy) as by_netrc:
            with_netrc.validate_and_mutate(request(task(tmp_path, spec, "L4:2")))
        assert "asks for 2 × L4" in str(by_netrc.value) and SECRET not in str(by_netrc.value)
    finally:
        server.stop()


def test_the_endpoint_serves_https(repo, tmp_path):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    spec = write_spec(repo, 2)
    server = PolicyServer(
        repo.root, repo.uri, options=("--ssl-certfile", str(cert), "--ssl-keyfile", str(key))
    )
    try:
        assert server.url.startswith("https://budget-gate:")
        body = _body(tmp_path, spec)
        answer = requests.post(server.url, data=body, verify=str(cert), timeout=30)
        assert answer.status_code == 200, answer.text
        assert json.loads(answer.json())["task"]  # SkyPilot's encoded mutated request
        with pytest.raises(requests.exceptions.SSLError):
            requests.post(server.url, data=body, timeout=30)  # a certificate nobody trusts
    finally:
        server.stop()


# --- what is logged and answered ------------------------------------------------------------


def test_each_decision_is_logged_once(repo, tmp_path):
    spec = write_spec(repo, 2)
    server = PolicyServer(repo.root, repo.uri)
    try:
        client = admin_policy.RestfulAdminPolicy(server.url)
        client.validate_and_mutate(request(task(tmp_path, spec), user="dora"))
        with pytest.raises(exceptions.UserRequestRejectedByPolicy):
            client.validate_and_mutate(request(task(tmp_path, spec, "L4:3"), user="dora"))
    finally:
        log = server.stop()
    assert log.count(f"allowed launch of task 'train' by dora under {spec}") == 1, log
    assert log.count("rejected launch of task 'train' by dora: ") == 1, log


def test_a_malformed_task_leaves_tracebacks_on(repo, monkeypatch):
    monkeypatch.delattr(sys, "tracebacklimit", raising=False)  # Python's default: no limit
    answer = answer_http(encoded(task="resources: {accelerators: A100:0}"), settings(repo))
    assert answer.status == 400 and "malformed request" in answer.body
    assert not hasattr(sys, "tracebacklimit")  # SkyPilot's decoder had left it at 0


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (
            {"spec": "experiments/a\x00b.yaml"},
            "BUDGET_GATE_SPEC='experiments/a\\x00b.yaml' is "
            "not a file name (a control character, or over 1024 characters)",
        ),
        ({"spec": "x" * 5000}, "is not a file name (a control character, or over 1024"),
        ({"accelerators": "A100:inf"}, "task 'train' asks for A100:inf — not a whole number of"),
        ({"accelerators": "A100:nan"}, "task 'train' asks for A100:nan — not a whole number of"),
    ],
)
def test_malformed_values_in_a_task_are_one_line_400s(repo, tmp_path, change, reason):
    spec = change.get("spec", write_spec(repo, 2))
    body = json.dumps(
        request(task(tmp_path, spec, change.get("accelerators", "L4:1"))).encode()
    ).encode()
    answer = answer_http(body, settings(repo))
    assert answer.status == 400, answer.body
    assert answer.body.startswith("budget-gate: ") and reason in answer.body
    assert "\n" not in answer.body


# --- MIG ------------------------------------------------------------------------------------


def test_a_mig_spec_is_priced_as_whole_gpus_at_launch(repo, tmp_path):
    path = spec_of(repo)
    mig = repo.root / path
    mig.write_text(MIG_SPEC.format(team=repo.name, mig=", mig_profile: 1g.10gb"))
    s = settings(repo)
    spread = rejection(request(task(tmp_path, path, "A100-80GB:8", nodes=4)), s)
    assert spread.startswith(
        "budget-gate: task 'train' asks for 32 × A100-80GB (8 per node × 4 nodes) on-demand, "
        f"but {path} is cleared for 7 × A100-80GB 1g.10gb MIG slices on-demand"
    )
    whole = rejection(request(task(tmp_path, path, "A100-80GB:7")), s)
    assert whole == (
        # 2 trials × 7 GPUs × 0.2 h = 2.8 GPU-h at 5.86315 USD (the catalog's dearest cloud):
        # 16.42 USD as whole GPUs, 2.35 USD as seven 1/7 slices
        "budget-gate: task 'train' asks for 7 × A100-80GB whole GPUs, 16.42 USD worst case as "
        f"whole GPUs, but {path} is priced as 7 × 1g.10gb MIG slices (2.35 USD worst case) "
        f"and SkyPilot cannot ask for a MIG slice — remove mig_profile from {path} and clear "
        f"it again for whole GPUs (budget-gate check {path})"
    )
    mig.write_text(MIG_SPEC.format(team=repo.name, mig=""))  # the same spec, whole GPUs
    cleared = apply_policy(request(task(tmp_path, path, "A100-80GB:7")), s)
    assert cleared.task.envs["BUDGET_GATE_GPUS"] == "7"


# --- a team is proven ------------------------------------------------------------------------


def test_a_spec_cannot_launch_under_a_team_that_does_not_own_it(repo, tmp_path):
    (Path(repo.policy_dir) / f"{repo.name}.yaml").write_text(
        "apiVersion: budget-gate/v1\nkind: Policy\nowns: {specs: [experiments/own/**]}\n"
    )
    spec = write_spec(repo, 2)  # experiments/<team>.yaml: not in the team's paths
    message = rejection(request(task(tmp_path, spec)), settings(repo))
    assert message.startswith(
        f"budget-gate: {spec} breaks the policy: BG204 {spec} is not one of team {repo.name}'s "
        "specs (owns.specs: experiments/own/**); no team owns it"
    )


def test_only_the_users_a_team_lists_launch_its_specs(repo, tmp_path):
    owns = "owns: {specs: [experiments/**], skypilot_users: [carol, dev-bot]}"
    (Path(repo.policy_dir) / f"{repo.name}.yaml").write_text(
        f"apiVersion: budget-gate/v1\nkind: Policy\n{owns}\n"
    )
    spec = write_spec(repo, 2)  # needs no approval: only who launches it is judged
    s = settings(repo)
    assert (
        apply_policy(request(task(tmp_path, spec), user="carol"), s).task.envs["BUDGET_GATE_SPEC"]
        == spec
    )
    message = rejection(request(task(tmp_path, spec), user="mallory"), s)
    assert message == (
        f"budget-gate: task 'train' is launched by user 'mallory', but {spec} spends team "
        f"{repo.name}'s budget, which only carol, dev-bot may spend (owns.skypilot_users) — "
        "ask one of them to launch it, or add the user to owns.skypilot_users in team "
        f"{repo.name}'s policy"
    )
    assert "launched by an unnamed user" in rejection(request(task(tmp_path, spec)), s)
    jobs = sky.AdminPolicyRequestName.JOBS_LAUNCH
    assert "by user 'mallory'" in rejection(request(task(tmp_path, spec), jobs, "mallory"), s)
    # a managed job's cluster joins its checked jobs.launch; named, its user is judged too
    relaunch = request(task(tmp_path, spec), "jobs.launch_cluster", "mallory")
    assert "by user 'mallory'" in rejection(relaunch, s)
    # unnamed, it passes only with the launch key its jobs.launch gave it
    assert "by an unnamed user" in rejection(
        request(task(tmp_path, spec), "jobs.launch_cluster"), s
    )
    # anyone may create a service account and name it: it is matched by its id alone
    impostor = request(task(tmp_path, spec))
    impostor.user = models.User(id="sa-1f2e3d", name="carol")
    assert "by user 'carol'" in rejection(impostor, s)
    listed = request(task(tmp_path, spec))
    listed.user = models.User(id="sa-dev-bot", name="ci")
    (Path(repo.policy_dir) / f"{repo.name}.yaml").write_text(
        f"apiVersion: budget-gate/v1\nkind: Policy\n{owns.replace('dev-bot', 'sa-dev-bot')}\n"
    )
    assert apply_policy(listed, settings(repo)).task.envs["BUDGET_GATE_SPEC"] == spec


def test_a_spec_without_its_team_cannot_launch_outside_the_budget(repo, tmp_path):
    repo.policy(limits=", monthly_budget: 50")
    spec = write_spec(repo, 2)
    path = repo.root / spec
    path.write_text(path.read_text().replace(f"team: {repo.name}, ", ""))
    message = rejection(request(task(tmp_path, spec)), settings(repo))
    assert message.startswith(
        f"budget-gate: {spec} breaks the policy: BG206 metadata.team is missing, and the "
        "monthly budget is per team: the spec would spend no budget"
    )


# --- the ledger down ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    server = MlflowServer(tmp_path_factory.mktemp("stopped")).start()
    yield server
    server.stop()


@pytest.fixture
def mlflow_defaults(monkeypatch):
    for key in CLIENT_ENV:
        if key.startswith("MLFLOW_HTTP_REQUEST"):
            monkeypatch.delenv(key, raising=False)
    for key, value in MLFLOW_DEFAULTS.items():
        monkeypatch.setenv(key, value)


def _report(path: str, outage: str, seconds: float) -> None:
    print(f"\nLEDGER-DOWN {path} ({outage}): refused in {seconds:.2f} s")


ANSWERED = ("stopped", "refused")  # a connection ends at once; the third, below
assert (*ANSWERED, "blackhole") == OUTAGES


@pytest.mark.parametrize("outage", ANSWERED)
def test_the_policy_class_refuses_within_10_s(repo, tmp_path, stopped, mlflow_defaults,
                                               monkeypatch, outage):  # fmt: skip
    spec = write_spec(repo, 8)
    monkeypatch.setenv("BUDGET_GATE_REPO", str(repo.root))
    with ledger_down(outage, stopped) as uri:
        monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
        message, took = _class_refusal(request(task(tmp_path, spec)))
    _report("BudgetGatePolicy (in the API server)", outage, took)
    assert took < LIMIT_S
    assert "the ledger is unreachable" in message and "(fail closed)" in message


@pytest.mark.parametrize("outage", ANSWERED)
def test_the_endpoint_refuses_within_10_s(repo, tmp_path, stopped, mlflow_defaults, outage):
    spec = write_spec(repo, 8)
    env = {**os.environ, "BUDGET_GATE_POLICY_SECRET": SECRET}  # MLflow's retry defaults
    with ledger_down(outage, stopped) as uri:
        server = PolicyServer(repo.root, uri, env=env)
        try:
            message, took = _endpoint_refusal(server, request(task(tmp_path, spec)))
        finally:
            server.stop()
    _report("serve skypilot-policy, over HTTP", outage, took)
    assert took < LIMIT_S  # SkyPilot's client waits 30 s: it gets the rejection, not a timeout
    assert "the ledger is unreachable" in message


def test_the_class_and_the_endpoint_refuse_a_silent_ledger_within_10_s(
    repo, tmp_path, mlflow_defaults, monkeypatch
):
    """Side by side: only the timeout (5 s by default) ends a call to a ledger that is silent."""
    spec = write_spec(repo, 8)
    env = {**os.environ, "BUDGET_GATE_POLICY_SECRET": SECRET}  # MLflow's retry defaults
    monkeypatch.setenv("BUDGET_GATE_REPO", str(repo.root))
    with ledger_down("blackhole") as uri:
        server = PolicyServer(repo.root, uri, env=env)
        monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
        try:
            with ThreadPoolExecutor(max_workers=2) as pool:
                endpoint = pool.submit(_endpoint_refusal, server, request(task(tmp_path, spec)))
                in_class = pool.submit(_class_refusal, request(task(tmp_path, spec)))
                (said, took), (answered, answered_in) = in_class.result(), endpoint.result()
        finally:
            server.stop()
    _report("BudgetGatePolicy (in the API server)", "blackhole", took)
    _report("serve skypilot-policy, over HTTP", "blackhole", answered_in)
    assert took < LIMIT_S and answered_in < LIMIT_S
    assert "the ledger is unreachable" in said and "(fail closed)" in said
    assert "the ledger is unreachable" in answered


def _class_refusal(launch: sky.UserRequest) -> tuple[str, float]:
    began = time.monotonic()
    with pytest.raises(exceptions.UserRequestRejectedByPolicy) as raised:
        BudgetGatePolicy.validate_and_mutate(launch)
    return str(raised.value), time.monotonic() - began


def _endpoint_refusal(server: PolicyServer, launch: sky.UserRequest) -> tuple[str, float]:
    client = admin_policy.RestfulAdminPolicy(server.url)
    began = time.monotonic()
    with pytest.raises(exceptions.UserRequestRejectedByPolicy) as raised:
        client.validate_and_mutate(launch)
    return str(raised.value), time.monotonic() - began


def test_malformed_settings_refuse_every_launch_in_one_line(repo, tmp_path, monkeypatch):
    spec = write_spec(repo, 2)
    for name, value, said in [
        ("BUDGET_GATE_LEDGER_TIMEOUT", "soon", "BUDGET_GATE_LEDGER_TIMEOUT is 'soon', not a"),
        ("BUDGET_GATE_REPO", "/nonexistent/repo", "BUDGET_GATE_REPO is '/nonexistent/repo', not"),
        ("BUDGET_GATE_MISSING_SPEC", "maybe", "BUDGET_GATE_MISSING_SPEC is 'maybe'"),
        ("MLFLOW_TRACKING_URI", "http://h:\x01", "MLFLOW_TRACKING_URI holds a control character"),
    ]:
        with monkeypatch.context() as patch:
            patch.setenv("BUDGET_GATE_REPO", str(repo.root))
            patch.setenv(name, value)
            with pytest.raises(exceptions.UserRequestRejectedByPolicy) as raised:
                BudgetGatePolicy.validate_and_mutate(request(task(tmp_path, spec)))
        message = str(raised.value)
        assert message.startswith("budget-gate: the API server's settings are invalid, so no ")
        assert said in message and "\n" not in message
