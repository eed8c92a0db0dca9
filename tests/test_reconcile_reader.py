"""Reading runs from a real MLflow server: pages, bulk histories, cut answers, outages."""

from __future__ import annotations

import threading

import pytest
from mlflow.entities import Metric
from mlflow.tracking import MlflowClient

from gate import tracking
from gate.errors import BackendError
from gate.integrations.mlflow.run_sources import filter_string
from gate.integrations.mlflow.runs import MlflowRuns, RunQuery
from gate.ledger.tracking import MONITOR
from tests.ledger_kit import unique
from tests.mlflow_server import KillingProxy, free_port
from tests.reconcile_kit import GOOD, Lab, log_run, ms

FP = "sha256:" + "ab" * 32


@pytest.fixture
def experiment(mlflow_server) -> tuple[MlflowClient, str]:
    client = MlflowClient(mlflow_server.uri)
    return client, client.create_experiment(unique("reader"))


def log(client, experiment_id, **kw) -> str:
    tags = {tracking.FINGERPRINT: FP, tracking.GPUS: "1", **kw.pop("tags", {})}
    return log_run(client, experiment_id, tags=tags, **kw)


def facts_by_id(uri, experiment_id, **query):
    runs = MlflowRuns(uri)
    found = list(runs.facts(RunQuery(experiment_id, FP, "val_loss", **query)))
    return {f.run_id: f for f in found}


def test_pages_batches_and_progress(mlflow_server, experiment):
    client, experiment_id = experiment
    ids = [log(client, experiment_id, start=i, history={"val_loss": [i, i / 2]}) for i in range(7)]
    log(client, experiment_id, tags={tracking.FINGERPRINT: "sha256:other"})
    calls = []
    with KillingProxy(mlflow_server, kill_on="no-such-path") as proxy:
        runs = MlflowRuns(proxy.uri)
        query = RunQuery(experiment_id, FP, "val_loss", page_size=3, batch_size=2, workers=2)
        found = list(runs.facts(query, lambda *a: calls.append(a)))
    assert [f.run_id for f in found] == ids  # start order, every page, nothing else
    assert [f.history for f in found] == [(float(i), i / 2) for i in range(7)]
    searches = [s for s in proxy.seen if "/runs/search" in s]
    bulk = [s for s in proxy.seen if "get-history-bulk" in s]
    assert len(searches) == 3 and len(bulk) == 5  # pages of 3, 3, 1; batches of ≤ 2
    assert calls[-1] == (7, 7, False)
    assert all(done <= found for done, found, _ in calls)


def test_many_experiments_are_searched_in_groups_at_once_and_merged_in_start_order(
    mlflow_server,
):
    client = MlflowClient(mlflow_server.uri)
    experiments = [client.create_experiment(unique("group")) for _ in range(5)]
    # Start times interleave across the experiments: run i is in experiment i % 5.
    ids = [
        log(client, experiments[i % 5], start=i, history={"val_loss": [float(i)]})
        for i in range(15)
    ]
    with KillingProxy(mlflow_server, kill_on="no-such-path") as proxy:
        query = RunQuery(
            experiments[0], FP, "val_loss", more_experiments=tuple(experiments[1:]),
            page_size=2, batch_size=4, workers=3,
        )  # fmt: skip
        found = list(MlflowRuns(proxy.uri).facts(query))
    assert [f.run_id for f in found] == ids  # one stream in start order, nothing twice
    assert [f.history for f in found] == [(float(i),) for i in range(15)]
    searches = [s for s in proxy.seen if "/runs/search" in s]
    # Three groups (experiments 0+3, 1+4, 2): 6, 6 and 3 runs in pages of 2.
    assert len(searches) == 3 + 3 + 2


def test_every_group_s_first_page_is_asked_for_at_once(mlflow_server):
    """The groups' first searches are in flight together, none waiting for another's answer.

    (Asked for one after another, a big month's first pages kept one server worker busy
    while the others waited: 4 s of a 20 s report on 2 cores.)
    """
    client = MlflowClient(mlflow_server.uri)
    experiments = [client.create_experiment(unique("first-pages")) for _ in range(3)]
    ids = [log(client, experiments[i], start=i) for i in range(3)]
    together = threading.Barrier(3, timeout=10)
    held: list[str] = []
    lock = threading.Lock()

    def hold_first_searches(path: str) -> None:
        with lock:
            first = "/runs/search" in path and len(held) < 3
            if first:
                held.append(path)
        if first:
            together.wait()  # broken (no answer) unless all three were sent before any answer

    proxy = KillingProxy(mlflow_server, kill_on="no-such-path", before_answer=hold_first_searches)
    with proxy:
        query = RunQuery(
            experiments[0], FP, "val_loss", more_experiments=tuple(experiments[1:]), workers=3
        )
        found = list(MlflowRuns(proxy.uri).facts(query))
    assert [f.run_id for f in found] == ids
    assert len(held) == 3 and not together.broken


def test_cut_answers_are_split_and_a_long_history_read_page_by_page(mlflow_server, experiment):
    client, experiment_id = experiment
    long = log(client, experiment_id, start=0, history={"val_loss": [float(v) for v in range(150)]})
    a = log(client, experiment_id, start=1, history={"val_loss": [1.0] * 60})
    b = log(client, experiment_id, start=2, history={"val_loss": [2.0] * 60})
    with KillingProxy(mlflow_server, kill_on="no-such-path") as proxy:
        # The server cuts at 100 points: [long, a, b] is cut, then [long] (→ per-run read)
        # and [a, b] (120) are cut, then a and b alone fit.
        found = facts_by_id(proxy.uri, experiment_id, point_budget=10_000, max_points=100)
    assert found[long].history == tuple(float(v) for v in range(150))
    assert found[a].history == (1.0,) * 60 and found[b].history == (2.0,) * 60
    assert len([s for s in proxy.seen if "get-history-bulk" in s]) == 5
    assert len([s for s in proxy.seen if "metrics/get-history?" in s]) >= 1


def test_each_run_s_history_is_read_for_its_own_metric_only(mlflow_server, experiment):
    """Runs whose tags name different monitored metrics, each logging both: a metric's
    history is asked for the runs that monitor it, not for every run that logged it."""
    client, experiment_id = experiment
    both = {"val_loss": [1.0, 0.5], "val_acc": [0.1, 0.2]}
    loss = log(client, experiment_id, start=0, tags={MONITOR: "val_loss"}, history=both)
    acc = log(client, experiment_id, start=1, tags={MONITOR: "val_acc"}, history=both)
    with KillingProxy(mlflow_server, kill_on="no-such-path") as proxy:
        query = RunQuery(experiment_id, FP, None, history_tag=MONITOR)
        found = {f.run_id: f for f in MlflowRuns(proxy.uri).facts(query)}
    assert (found[loss].history, found[acc].history) == ((1.0, 0.5), (0.1, 0.2))
    asked = {s.split("metric_key=")[1].split("&")[0]: s for s in proxy.seen if "history-bulk" in s}
    assert len([s for s in proxy.seen if "history-bulk" in s]) == len(asked) == 2
    assert acc in asked["val_acc"] and loss not in asked["val_acc"]
    assert loss in asked["val_loss"] and acc not in asked["val_loss"]


def test_the_latest_step_sizes_the_requests(mlflow_server, experiment):
    client, experiment_id = experiment
    for i in range(4):
        log(client, experiment_id, start=i, history={"val_loss": [1.0] * 30})
    with KillingProxy(mlflow_server, kill_on="no-such-path") as proxy:
        found = facts_by_id(proxy.uri, experiment_id, point_budget=60)
    assert all(len(f.history) == 30 for f in found.values())
    assert len([s for s in proxy.seen if "get-history-bulk" in s]) == 2  # 2 runs a request


def test_a_server_that_refuses_long_request_lines_gets_smaller_batches(mlflow_server, experiment):
    client, experiment_id = experiment
    ids = [log(client, experiment_id, start=i, history={"val_loss": [float(i)]}) for i in range(18)]
    # A request line holds ~93 characters and 40 per run id: 9 ids are over 300, 5 are not.
    # (gunicorn refuses lines over 4,094 characters: 100 ids.)
    with KillingProxy(mlflow_server, kill_on="no-such-path", max_line=300) as proxy:
        found = facts_by_id(proxy.uri, experiment_id, batch_size=9, page_size=9, workers=1)
    assert [found[i].history for i in ids] == [(float(i),) for i in range(18)]
    bulk = [s.count("run_id=") for s in proxy.seen if "get-history-bulk" in s]
    # The first batch is refused and split; from then on batches are cut before sending.
    assert bulk == [9, 4, 2, 3, 4, 2, 3]


def test_every_gpu_utilization_series_is_read(mlflow_server, experiment):
    client, experiment_id = experiment
    history = {
        "system/gpu_0_utilization_percentage": [10.0, 20.0],
        "system/node-1/gpu_1_utilization_percentage": [30.0],
        "system/cpu_utilization_percentage": [99.0],
    }
    run_id = log(client, experiment_id, history=history)
    [facts] = facts_by_id(mlflow_server.uri, experiment_id).values()
    assert facts.run_id == run_id
    assert facts.utilization == {
        "system/gpu_0_utilization_percentage": (10.0, 20.0),
        "system/node-1/gpu_1_utilization_percentage": (30.0,),
    }
    assert facts.history == ()  # no val_loss logged
    assert facts.metrics["system/cpu_utilization_percentage"] == 99.0


def test_a_step_logged_twice_keeps_the_latest_value(mlflow_server, experiment):
    client, experiment_id = experiment
    run_id = log(client, experiment_id, history={"val_loss": [3.0, 2.0]})
    client.log_batch(run_id, metrics=[Metric("val_loss", 1.5, ms(0) + 99, 1)])
    for uri in (mlflow_server.uri, mlflow_server.sqlite_uri):
        [facts] = facts_by_id(uri, experiment_id).values()
        assert facts.history == (3.0, 1.5)


def test_stopping_early_shuts_the_pool_down(mlflow_server, experiment):
    client, experiment_id = experiment
    for i in range(6):
        log(client, experiment_id, start=i)
    before = threading.active_count()
    stream = MlflowRuns(mlflow_server.uri).facts(RunQuery(experiment_id, FP, None, batch_size=1))
    next(stream)
    stream.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("budget-gate-history")]
    assert threading.active_count() <= before


def test_a_fingerprint_with_a_quote_is_refused():
    assert filter_string(None) == "tags.budget_gate.fingerprint IS NOT NULL"
    with pytest.raises(BackendError, match="cannot search MLflow for the fingerprint"):
        filter_string("sha256:'x")


def test_an_unreachable_server_is_exit_4(lab: Lab):
    code, out, err = lab.reconcile(uri=f"http://127.0.0.1:{free_port()}")
    assert code == 4 and out == ""
    assert err.startswith("budget-gate: MLflow at http://127.0.0.1:")
    assert "failed while finding experiment" in err and "connection refused" in err


def test_the_server_dying_mid_read_is_exit_4_and_nothing_is_recorded(lab: Lab, doomed_mlflow):
    client = MlflowClient(doomed_mlflow.uri)
    experiment_id = client.create_experiment(lab.experiment)
    tags = tracking.run_tags(lab.spec)
    for i in range(3):
        log_run(client, experiment_id, tags=tags, start=i, metrics=GOOD, history={"val_loss": [1]})
    with KillingProxy(doomed_mlflow, kill_on="get-history-bulk") as proxy:
        code, out, err = lab.reconcile(uri=proxy.uri)
    assert proxy.killed.is_set()
    assert code == 4 and out == ""
    assert "failed while reading the runs: the server closed the connection" in err
    said = [line for line in err.splitlines() if "ledger records are not signed" not in line]
    assert len(said) == 1 and "Traceback" not in err
    assert not [s for s in proxy.seen if "/runs/create" in s]  # no ledger write was tried


def test_a_run_written_between_two_pages_is_read_once(mlflow_server, experiment):
    """MLflow pages by offset: a run created with an earlier start after page 1 answered
    shifts page 2 back by one, which then repeats page 1's last run; it is charged once."""
    client, experiment_id = experiment
    ids = [log(client, experiment_id, start=i + 1) for i in range(4)]
    written: list[str] = []

    def backdate(path: str) -> None:
        if "/runs/search" in path and not written:
            written.append(log(client, experiment_id, start=0))

    with KillingProxy(mlflow_server, kill_on="no-such-path", before_answer=backdate) as proxy:
        query = RunQuery(experiment_id, FP, None, page_size=2, batch_size=2, workers=1)
        found = [f.run_id for f in MlflowRuns(proxy.uri).facts(query)]
    assert len([s for s in proxy.seen if "/runs/search" in s]) >= 2
    assert len(found) == len(set(found))  # page 2 (runs 2–3 by offset) repeated ids[1]
    assert set(found) <= {*ids, *written} and set(ids[2:]) <= set(found)
