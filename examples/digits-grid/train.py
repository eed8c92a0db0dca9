"""Run the digits grid search of digits-grid.yaml and log it to MLflow as a GPU launcher would.

Every trial (hidden units × alpha × seed) trains scikit-learn's MLPClassifier one epoch at
a time on the bundled digits data (CPU, about a second a trial) and follows budget-gate's
run conventions (see ``gate.tracking``):

- one MLflow run per trial attempt, tagged with ``gate.tracking.run_tags`` (spec,
  fingerprint, trial id, attempt, GPUs, accelerator) and the submission time;
- per epoch, with ``step`` = epoch: val_loss (the spec's early-stopping monitor),
  val_macro_f1 and val_recall_class_0 … 9, the metrics of the spec's quality gate;
- the spec's early stopping (val_loss, patience, min_delta), applied here;
- the seconds spent in setup, training and evaluation.

Epochs here take milliseconds, so each trial sends its epochs' metrics in one batch when
it ends (with each epoch's own step and time) rather than one request per epoch; a real
launcher with minute-long epochs would log each epoch as it ends.

``--crash-trial N`` makes trial N's first attempt fail halfway (a simulated preemption)
and retries it, so the reconciliation shows a failed run and a retry.

Usage::

    python examples/digits-grid/train.py --tracking-uri http://127.0.0.1:5000
    budget-gate reconcile examples/digits-grid/digits-grid.yaml --tracking-uri http://127.0.0.1:5000
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import time
import warnings
from pathlib import Path

import mlflow
import numpy as np
from mlflow.entities import Metric
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler

from gate import tracking
from gate.spec.experiment import Experiment
from gate.spec.loader import load_file
from gate.spec.validation import validate

SPEC = Path(__file__).with_name("digits-grid.yaml")
CLASSES = np.arange(10)


class SimulatedCrash(RuntimeError):
    """Stands in for a preemption or an out-of-memory error halfway through a trial."""


def main(argv: list[str] | None = None) -> int:
    """Run every trial of the grid; return 0."""
    args = _parser().parse_args(argv)
    spec = validate(Experiment, load_file(args.spec))
    mlflow.set_tracking_uri(args.tracking_uri)
    mlflow.set_experiment(spec.tracking.mlflow_experiment)
    submitted = dt.datetime.now(dt.timezone.utc).isoformat()
    grid = spec.search.parameters
    trials = itertools.product(
        grid["hidden_units"].values or [], grid["alpha"].values or [], spec.search.seeds
    )
    for trial_id, (hidden, alpha, seed) in enumerate(trials):
        for attempt in (1, 2):
            crash = trial_id == args.crash_trial and attempt == 1
            tags = tracking.run_tags(args.spec, trial_id=trial_id, attempt=attempt)
            tags[tracking.SUBMITTED_AT] = submitted
            try:
                run_trial(spec, tags, hidden=hidden, alpha=alpha, seed=seed, crash=crash)
                break
            except SimulatedCrash:
                print(f"trial {trial_id} attempt {attempt} crashed; retrying")
    return 0


def run_trial(
    spec: Experiment, tags: dict[str, str], *, hidden: int, alpha: float, seed: int, crash: bool
) -> None:
    """One MLflow run: set up, train epoch by epoch with early stopping, log as we go."""
    stopping = spec.stopping.early_stopping
    assert stopping is not None
    name = f"h{hidden}-a{alpha:g}-s{seed}"
    # The run starts when the "GPU" is held and ends when it is released (the with block).
    with mlflow.start_run(run_name=name, tags=tags) as run:
        mlflow.log_params({"hidden_units": hidden, "alpha": alpha, "seed": seed})
        began = time.perf_counter()
        data = load_digits()
        scaler = StandardScaler()
        x_train, x_val, y_train, y_val = train_test_split(
            data.data, data.target, test_size=0.3, random_state=seed, stratify=data.target
        )
        x_train, x_val = scaler.fit_transform(x_train), scaler.transform(x_val)
        model = MLPClassifier(
            hidden_layer_sizes=(hidden,), alpha=alpha, random_state=seed, learning_rate_init=0.01
        )
        seconds = {tracking.SETUP_SECONDS: time.perf_counter() - began}
        seconds[tracking.TRAIN_SECONDS] = seconds[tracking.EVAL_SECONDS] = 0.0
        logged: list[Metric] = []
        best, waited = float("inf"), 0
        try:
            for epoch in range(1, spec.workload.max_epochs + 1):
                began = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    model.partial_fit(x_train, y_train, classes=CLASSES)
                seconds[tracking.TRAIN_SECONDS] += time.perf_counter() - began
                if crash and epoch == spec.workload.max_epochs // 2:
                    raise SimulatedCrash(name)  # mlflow.start_run marks the run FAILED
                began = time.perf_counter()
                metrics = validation_metrics(model, x_val, y_val)
                seconds[tracking.EVAL_SECONDS] += time.perf_counter() - began
                now = int(time.time() * 1000)
                logged.extend(Metric(k, v, now, epoch) for k, v in metrics.items())
                if metrics[stopping.monitor] < best - stopping.min_delta:
                    best, waited = metrics[stopping.monitor], 0
                else:
                    waited += 1
                    if waited >= stopping.patience:
                        break
        finally:
            now = int(time.time() * 1000)
            logged.extend(Metric(k, v, now, 0) for k, v in seconds.items())
            client = mlflow.MlflowClient()
            for first in range(0, len(logged), 1000):  # MLflow's limit per batch
                client.log_batch(run.info.run_id, metrics=logged[first : first + 1000])


def validation_metrics(model: MLPClassifier, x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Validation loss, macro F1 and the recall of every class (the spec's quality gate)."""
    probabilities = model.predict_proba(x)
    predicted = probabilities.argmax(axis=1)
    loss = -np.log(np.clip(probabilities[np.arange(len(y)), y], 1e-15, None)).mean()
    confusion = np.zeros((len(CLASSES), len(CLASSES)), dtype=np.int64)
    np.add.at(confusion, (y, predicted), 1)
    hits = np.diag(confusion).astype(float)
    recall = hits / np.maximum(confusion.sum(axis=1), 1)
    precision = hits / np.maximum(confusion.sum(axis=0), 1)
    both = recall + precision
    f1 = np.divide(2 * recall * precision, both, out=np.zeros_like(both), where=both > 0)
    return {
        "val_loss": float(loss),
        "val_macro_f1": float(f1.mean()),
        **{f"val_recall_class_{c}": float(r) for c, r in zip(CLASSES, recall, strict=True)},
    }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--tracking-uri", required=True, help="the MLflow tracking server")
    parser.add_argument("--spec", default=str(SPEC), help="the spec (default: beside this file)")
    parser.add_argument(
        "--crash-trial", type=int, metavar="N", help="fail trial N's first attempt halfway"
    )
    return parser


if __name__ == "__main__":
    raise SystemExit(main())
