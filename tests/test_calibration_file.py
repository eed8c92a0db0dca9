"""A calibration file reads back what ``calibrate --write`` wrote, and a corrupt one is refused.

Issue 22's fuzzer: floats dumped as ``5e-05`` or ``1e+16`` loaded as text (YAML 1.1 needs
the dot), so every ``check`` exited 3; a ``plateau_fraction`` of ``1e+308`` overflowed and
an ``mfu`` of 0 divided by zero (exit 70).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.calibrate.model import (
    Calibration,
    Entry,
    FractionStat,
    Key,
    ShareStat,
    Stat,
    TimeStat,
    dump,
    parse,
)
from gate.cli import main
from gate.spec.base import LARGEST, SMALLEST
from gate.spec.loader import load_bytes
from tests.conftest import ROOT
from tests.plain_words import internals_in

KEY = {"model": "bert", "accelerator": "A100-80GB", "gpus": 1, "precision": "bf16"}
SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {name: calibrated, labels: {model: bert}}
resources: {accelerator: A100-80GB, gpus_per_trial: 1, precision: bf16}
workload: WORKLOAD
search: {strategy: random, max_trials: 2}
stopping: {early_stopping: {monitor: val_loss, patience: 2}}
"""
EPOCHS = "{max_epochs: 10, epoch_minutes: 5}"
MODEL = "{max_epochs: 10, model: {parameters: 1.0e+8, tokens_per_epoch: 1.0e+9}}"


def _figures(low: float, high: float) -> st.SearchStrategy[float]:
    """Floats of the field's range, with the spellings that broke (5e-05, 1e+16) among them."""
    edges = [v for v in (5e-05, 1e-06, 1e16, 1e12, 0.1, 1.0, 123456.0) if low <= v <= high]
    return st.one_of(
        st.sampled_from([low, high, *edges]),
        st.floats(low, high, allow_nan=False, allow_infinity=False),
    )


def _stat(kind: type[Stat], low: float, high: float) -> st.SearchStrategy[Stat]:
    three = st.lists(_figures(low, high), min_size=3, max_size=3).map(sorted)
    return st.builds(
        lambda runs, v: kind(runs=runs, p10=v[0], median=v[1], p90=v[2]),
        st.integers(1, 10**6),
        three,
    )


ENTRIES = st.builds(
    lambda epoch, setup, plateau, mfu, rate, point: Entry(
        key=Key(**KEY),
        runs=10**6,
        finished=10**6 - 1,
        failed=1,
        first=dt.date(2026, 11, 1),
        last=dt.date(2026, 11, 30),
        epoch_minutes=epoch,
        setup_minutes=setup,
        plateau_fraction=plateau,
        mfu=mfu,
        failure_rate=rate,
        failure_point=point,
    ),
    _stat(TimeStat, SMALLEST, LARGEST),
    _stat(Stat, 0.0, LARGEST),
    _stat(FractionStat, 0.0, 1.0),
    _stat(ShareStat, SMALLEST, 1.0),
    st.one_of(st.none(), _figures(0.0, 1.0)),
    st.one_of(st.none(), _figures(0.0, 1.0)),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(ENTRIES, min_size=1, max_size=3))
def test_every_figure_calibrate_writes_reads_back_as_the_same_number(entries):
    calibration = Calibration.model_validate(
        {"apiVersion": "budget-gate/v1", "kind": "Calibration", "created": "2026-12-01"}
    ).model_copy(update={"entries": entries})
    text = dump(calibration)
    assert json.loads(text) == calibration.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert parse(load_bytes(text.encode(), "calibration.json")) == calibration


def test_a_file_an_older_calibrate_wrote_with_5e_05_still_loads():
    old = (
        '{"apiVersion": "budget-gate/v1", "kind": "Calibration", "created": "2026-12-01", '
        '"entries": [{"key": {"model": "bert"}, "runs": 20000, "finished": 19999, "failed": 1, '
        '"first": "2026-11-01", "last": "2026-11-30", "failure_rate": 5e-05, '
        '"epoch_minutes": {"runs": 5, "p10": 1e-06, "median": 2e+01, "p90": 3e+01}}]}'
    )
    [entry] = parse(load_bytes(old.encode(), "calibration.json")).entries
    assert entry.failure_rate == 5e-05
    assert entry.epoch_minutes == TimeStat(runs=5, p10=1e-06, median=20.0, p90=30.0)


def _check(
    tmp_path: Path, capsys, workload: str, figures: dict[str, object], spec_text: str = SPEC
) -> tuple[int, str]:
    entry = {
        "key": KEY,
        "runs": 20,
        "finished": 20,
        "failed": 0,
        "first": "2026-11-01",
        "last": "2026-11-30",
        **figures,
    }
    calibration = {
        "apiVersion": "budget-gate/v1",
        "kind": "Calibration",
        "created": "2026-12-01",
        "entries": [entry],
    }
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(calibration, indent=2), encoding="utf-8")
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text.replace("WORKLOAD", workload), encoding="utf-8")
    capsys.readouterr()
    code = main(["check", "--calibration", str(path), str(spec)])
    out, err = capsys.readouterr()
    assert "internal error" not in err and "Traceback" not in out + err
    assert internals_in(out + err, path, spec) == []
    return code, out + err


@pytest.mark.parametrize(
    ("workload", "figures", "message"),
    [
        (
            EPOCHS,
            {"plateau_fraction": {"runs": 20, "p10": 1.0e308, "median": 1.0e308, "p90": 1.0e308}},
            "entries[0].plateau_fraction.p10: input should be less than or equal to 1",
        ),
        (
            MODEL,
            {"mfu": {"runs": 20, "p10": 0.0, "median": 0.0, "p90": 0.0}},
            "entries[0].mfu.p10: input should be greater than or equal to 0.000001",
        ),
        (
            EPOCHS,
            {"epoch_minutes": {"runs": 20, "p10": 0.0, "median": 1e300, "p90": 1e300}},
            "entries[0].epoch_minutes.p10: input should be greater than or equal to 0.000001",
        ),
    ],
)
def test_a_calibration_out_of_bounds_is_refused_at_its_line_not_a_crash(
    tmp_path, capsys, workload, figures, message
):
    # issue 22: OverflowError (plateau_fraction 1e+308) and DivisionByZero (mfu 0), exit 70
    code, out = _check(tmp_path, capsys, workload, figures)
    assert code == 3, out
    assert f"calibration.json:20:16: {message} — change the value to fit the bound" in out


def test_a_calibration_in_bounds_prices_the_spec(tmp_path, capsys):
    figures = {
        "epoch_minutes": {"runs": 20, "p10": 4.0, "median": 5.0, "p90": 6.0},
        "plateau_fraction": {"runs": 20, "p10": 0.4, "median": 0.5, "p90": 0.6},
    }
    code, out = _check(tmp_path, capsys, EPOCHS, figures)
    assert code in (0, 1, 2), out
    assert "epoch time 5.00 min: median of 20 runs of bert" in out


@pytest.mark.parametrize("label", ["BERT", "Bert"])
def test_a_model_label_in_another_case_is_priced_from_the_same_runs(tmp_path, capsys, label):
    """``model: BERT`` is bert: a capital letter must not set measured history aside."""
    figures = {"epoch_minutes": {"runs": 20, "p10": 4.0, "median": 5.0, "p90": 6.0}}
    spec = SPEC.replace("model: bert", f"model: {label}")
    code, out = _check(tmp_path, capsys, EPOCHS, figures, spec)
    assert code in (0, 1, 2), out
    assert "epoch time 5.00 min: median of 20 runs of bert" in out
    assert "fewer than" not in out


@pytest.mark.parametrize("fmt", ["text", "quiet", "json", "markdown", "github", "sarif", "junit"])
def test_a_measured_epoch_time_over_the_spec_s_is_said_in_every_format(tmp_path, capsys, fmt):
    """A red team's calibration of 0.6 min over a declared 30 turned an approval into a pass,
    said in text, Markdown and JSON but not in -q, github, SARIF or JUnit."""
    figures = {"epoch_minutes": {"runs": 20, "p10": 0.5, "median": 0.6, "p90": 0.7}}
    out = _checked_in(tmp_path, capsys, fmt, figures, "{max_epochs: 10, epoch_minutes: 30}")
    assert "priced from measured runs: epoch time 0.60 min" in out
    assert "the spec says 30" in out


@pytest.mark.parametrize(
    ("figures", "said"),
    [
        (
            {"epoch_minutes": {"runs": 20, "p10": 0.5, "median": 0.6, "p90": 0.7}},
            "priced from measured runs: epoch time 0.60 min: median of 20 runs of bert",
        ),
        (
            {"mfu": {"runs": 20, "p10": 0.95, "median": 0.97, "p90": 0.99}},
            "priced from measured runs: MFU 0.97, median of",
        ),
    ],
)
@pytest.mark.parametrize("fmt", ["quiet", "json", "github", "junit"])
def test_a_measurement_over_a_model_size_prior_is_said_too(tmp_path, capsys, figures, said, fmt):
    """A second reader's spec gave workload.model: a measured epoch time or MFU replaced its
    FLOPs prior (an approval became a pass) and no format said so."""
    assert said in _checked_in(tmp_path, capsys, fmt, figures, MODEL)


def _checked_in(tmp_path: Path, capsys, fmt: str, figures: dict[str, object], workload: str) -> str:
    """``check``'s stdout in format ``fmt`` (``quiet``: ``-q``) of SPEC, calibrated by
    ``figures`` (one entry for its key)."""
    entry = {"key": KEY, "runs": 20, "finished": 20, "failed": 0, "first": "2026-11-01",
             "last": "2026-11-30", **figures}  # fmt: skip
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"apiVersion": "budget-gate/v1", "kind": "Calibration",
                                "created": "2026-12-01", "entries": [entry]}))  # fmt: skip
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.replace("WORKLOAD", workload))
    shown = ["-q"] if fmt == "quiet" else ["--format", fmt]
    capsys.readouterr()
    main(["check", "--calibration", str(path), str(spec), *shown])
    return capsys.readouterr().out


_SCALAR_ENTRIES = (
    '{"apiVersion":"budget-gate/v1","kind":"Calibration","created":"2026-12-01","entries":%s}'
)


@pytest.mark.parametrize("value", ["true", "1", "1.5", '"x"', "null", "{}"])
def test_entries_that_are_no_list_are_bad_input_not_a_crash(tmp_path, capsys, value):
    """The fuzzer's ``entries: true`` (or 1, 1.5) was iterated before it was validated: 70."""
    path = tmp_path / "calibration.json"
    path.write_text(_SCALAR_ENTRIES % value, encoding="utf-8")
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.replace("WORKLOAD", EPOCHS), encoding="utf-8")
    for args in (["--calibration", str(path)], ["--policy-dir", str(_policies_with(path))]):
        code = main(["check", *args, str(spec)])
        out, err = capsys.readouterr()
        assert code == 3, out + err
        assert "internal error" not in err and "Traceback" not in out + err
        assert "calibration.json:1:86: entries: input should be a valid list — " in out + err


def _policies_with(calibration: Path) -> Path:
    """A policy directory of the project's default policy and ``calibration`` beside it."""
    policies = calibration.parent / "policies"
    policies.mkdir(exist_ok=True)
    (policies / "default.yaml").write_bytes((ROOT / "policies" / "default.yaml").read_bytes())
    (policies / "calibration.json").write_bytes(calibration.read_bytes())
    return policies


def test_policy_check_validates_the_calibration_check_reads(tmp_path, capsys):
    """``policy check`` said all was valid while every ``check`` exited on the calibration."""
    path = tmp_path / "calibration.json"
    path.write_text(_SCALAR_ENTRIES % "true", encoding="utf-8")
    policies = _policies_with(path)
    assert main(["policy", "check", str(policies)]) == 3
    out, err = capsys.readouterr()
    assert err.startswith(f"{policies}/calibration.json:1:86: entries: input should be a ")
    (policies / "calibration.json").write_text(_SCALAR_ENTRIES % "[]")
    assert main(["policy", "check", str(policies)]) == 0
    out, err = capsys.readouterr()
    assert f"{policies}/calibration.json: ok (0 entries)\n" in out


def _labelled(label: str) -> Calibration:
    entry = Entry(
        key=Key(**{**KEY, "model": label}),
        runs=1,
        finished=1,
        failed=0,
        first=dt.date(2026, 11, 1),
        last=dt.date(2026, 11, 1),
    )
    return Calibration.model_validate(
        {"apiVersion": "budget-gate/v1", "kind": "Calibration", "created": "2026-12-01"}
    ).model_copy(update={"entries": [entry]})


@pytest.mark.parametrize(
    "char", ["\x7f", "\x80", "\x81", "\x9f", "\ufffe", "\uffff", "\x85", "\u2028", "\u2029"]
)
def test_a_label_with_a_character_yaml_refuses_is_written_so_the_file_reads_back(char):
    label = f"evil{char}"
    text = dump(_labelled(label))
    assert char not in text
    [entry] = parse(load_bytes(text.encode(), "calibration.json")).entries
    assert entry.key.model == label


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(codec=None, exclude_categories=()), max_size=8))
def test_any_label_a_job_tags_reads_back_from_the_file_calibrate_writes(label):
    text = dump(_labelled(label))
    [entry] = parse(load_bytes(text.encode(), "calibration.json")).entries
    # NUL and lone surrogates (YAML reads neither, raw nor escaped) come back as U+FFFD
    assert entry.key.model == "".join(
        "\ufffd" if c == "\x00" or "\ud800" <= c <= "\udfff" else c for c in label
    )


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"epoch_minutes": {"runs": 1000000000, "p10": 4.0, "median": 4.0, "p90": 4.0}},
         "epoch_minutes.runs 1000000000 is more than the entry's runs 20"),
        ({"failed": 500}, "failed 500 is more than the entry's runs 20"),
        ({"finished": 5}, "finished 5 and failed 0 (of which preemptions 0) do not add up"),
        ({"preemptions": 1}, "do not add up to runs 20"),
        ({"retries": 21}, "retries 21 is more than the entry's runs 20"),
    ],
)  # fmt: skip
def test_counts_that_contradict_the_entry_s_runs_are_refused_at_its_line(
    tmp_path, capsys, entry, said
):
    code, err = _check(tmp_path, capsys, EPOCHS, entry)
    assert code == 3, err
    assert "calibration.json:" in err and said in err, err
