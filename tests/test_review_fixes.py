"""Inputs that once crashed, hung or misled, found by review; each is now handled."""

from __future__ import annotations

import json
import time
from decimal import Decimal

import cmarkgfm
import pytest

from gate.cli import main
from gate.evaluation.diff import compare
from gate.policy.rules import trial_cost
from gate.reporters.change import explain
from gate.reporters.markup import escape
from tests.conftest import ROOT, make_estimate, make_policy, make_spec, run_rule

POLICIES = str(ROOT / "policies")
SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {name: t, labels: {}}
resources: {accelerator: L4, gpus_per_trial: 1, precision: bf16}
workload: {max_epochs: 10, epoch_minutes: 6}
"""


def check(write_yaml, text: str, *extra: str) -> int:
    return main(["check", "--policy-dir", POLICIES, *extra, write_yaml("s.yaml", text)])


def test_a_self_referencing_alias_is_an_input_error(write_yaml, capsys):
    text = "apiVersion: budget-gate/v1\nkind: Experiment\nmetadata: &m {name: t, labels: *m}\n"
    assert check(write_yaml, text) == 3
    assert "(a cycle)" in capsys.readouterr().out


def test_merge_keys_keep_the_explicit_keys_position(write_yaml, capsys):
    text = SPEC.replace(
        "resources: {accelerator: L4, gpus_per_trial: 1, precision: bf16}",
        "base: &b {accelerator: L4, gpus_per_trial: 1}\n"
        "resources:\n  <<: *b\n  gpus_per_trial: 0\n",
    )
    assert check(write_yaml, text) == 3
    out = capsys.readouterr().out
    assert ":7:19: " in out  # the explicit gpus_per_trial: 0, not the merged one on line 4


def test_base_60_numbers_are_refused(write_yaml, capsys):
    assert check(write_yaml, SPEC.replace("gpus_per_trial: 1", "gpus_per_trial: 1:30")) == 3
    assert "base-60 number" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("010", "'010' reads as a YAML 1.1 octal number (8) — write 10 for the number"),
        ("-0100", "'-0100' reads as a YAML 1.1 octal number (-64) — write -100 for the number"),
        ("0b11", "'0b11' reads as a YAML 1.1 binary number (3) — write 3 for the number"),
        ("00", "'00' reads as a YAML 1.1 octal number (0) — write 0 for the number"),
    ],
)
def test_yaml_11_octal_and_binary_numbers_are_refused(write_yaml, capsys, value, said):
    """``010`` is 8 to PyYAML (YAML 1.1) but 10 to YAML 1.2 editors: refused, not guessed."""
    assert check(write_yaml, SPEC.replace("gpus_per_trial: 1", f"gpus_per_trial: {value}")) == 3
    assert f":4:46: {said}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("08", "'08' reads as text in YAML 1.1 and as the number 8 in YAML 1.2 — write 8 for"),
        ("0o10", "'0o10' reads as text in YAML 1.1 and as the number 8 in YAML 1.2 — write 8"),
        ("-09", "'-09' reads as text in YAML 1.1 and as the number -9 in YAML 1.2 — write -9"),
    ],
)
def test_yaml_12_numbers_that_yaml_11_reads_as_text_are_refused(write_yaml, capsys, value, said):
    """``08`` was told "write a whole number without quotes", though it has none."""
    assert check(write_yaml, SPEC.replace("gpus_per_trial: 1", f"gpus_per_trial: {value}")) == 3
    out = capsys.readouterr().out
    assert f":4:46: {said}" in out and "without quotes" not in out


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("2026-12-01T00:00:00Z", "write a whole number, not a date"),  # YAML reads a date
        ('"2"', "write a whole number without quotes"),
        ("[1]", "write a whole number"),
    ],
)
def test_a_number_is_told_about_quotes_only_when_it_has_them(write_yaml, capsys, value, said):
    """An unquoted date was told "write a number without quotes", though it had none."""
    assert check(write_yaml, SPEC.replace("gpus_per_trial: 1", f"gpus_per_trial: {value}")) == 3
    out = capsys.readouterr().out
    assert f"— {said}\n" in out, out


def test_a_quoted_leading_zero_is_a_string_as_both_versions_read_it(write_yaml, capsys):
    text = SPEC.replace("name: t", 'name: "08"')
    assert check(write_yaml, text) != 3, capsys.readouterr().out


@pytest.mark.parametrize("value", ["10", "0x0A", "1_0"])
def test_decimal_and_hex_numbers_read_as_both_yaml_versions_read_them(write_yaml, capsys, value):
    text = SPEC.replace("max_epochs: 10", f"max_epochs: {value}")
    code = check(write_yaml, text, "--format", "json")
    assert code != 3
    worst = json.loads(capsys.readouterr().out)["results"][0]["estimate"]["worst"]
    assert worst["epochs_per_trial"] == 10


@pytest.mark.parametrize("value", ["true", '"3"'])
def test_numbers_are_strict(write_yaml, capsys, value):
    assert check(write_yaml, SPEC.replace("epoch_minutes: 6", f"epoch_minutes: {value}")) == 3


def test_control_characters_in_spec_strings_are_refused(write_yaml, capsys):
    text = SPEC.replace("name: t", 'name: "x\\n::error file=README.md::injected"')
    assert check(write_yaml, text) == 3
    out = capsys.readouterr().out
    assert "::error" not in out and "metadata.name" in out


def test_an_overflowing_learning_curve_stays_finite():
    spec = make_spec(
        {
            "stopping": {
                "early_stopping": {
                    "monitor": "val_loss",
                    "patience": 2,
                    "min_delta": 0.001,
                    # the extremes the schema allows (1e300 and 1e-10 are refused as input)
                    "learning_curve": {"total_gain": 1.0e12, "half_life_epochs": 1.0e-6},
                }
            }
        }
    )
    est = make_estimate(spec)
    assert est.expected.cost.is_finite()
    # The whole gain lands in the first instant: the plateau is epoch 1, plus patience 2.
    assert est.expected.epochs_per_trial == 3


def test_spot_recompute_is_capped_not_infinite():
    spec = make_spec(
        {"resources": {"capacity": "spot"}, "workload": {"max_epochs": 10**8, "epoch_minutes": 60}}
    )
    est = make_estimate(spec, make_policy({"spot": {"preemptions_per_hour": 10}}))
    assert est.worst.cost.is_finite()


def test_an_absurd_grid_is_an_input_error_not_a_crash(write_yaml, capsys):
    params = "\n".join(f"    p{i}: {{values: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}}" for i in range(40))
    text = SPEC + f"search:\n  strategy: grid\n  parameters:\n{params}\n"
    assert check(write_yaml, text) == 3
    assert "about 10^40 trials" in capsys.readouterr().out


@pytest.mark.parametrize(
    "search",
    [
        {"strategy": "asha", "max_trials": 10**9},
        {
            "strategy": "successive_halving",
            "max_trials": 10,
            "scheduler": {"reduction_factor": 1.1},
        },
    ],
)
def test_large_or_fine_grained_halving_is_quick(search):
    start = time.perf_counter()
    spec = make_spec({"workload": {"max_epochs": 10_000}, "search": search})
    est = make_estimate(spec)
    assert est.worst.gpu_hours >= est.expected.gpu_hours
    assert time.perf_counter() - start < 5  # a guard against looping per trial or per rung


def test_a_trial_capped_at_its_cost_never_exceeds_it():
    # 100 USD on 8 × 8.43 USD/GPU-h does not divide evenly into nanohours.
    spec = make_spec(
        {
            "resources": {"gpus_per_trial": 8},
            "workload": {"max_epochs": 1000},
            "stopping": {"max_trial_cost": 100},
        }
    )
    policy = make_policy({"limits": {"max_trial_cost": 100}})
    for price in ("8.428", "12.53918", "2.059"):
        assert make_estimate(spec, policy, price).worst.cost_per_trial <= 100
        assert run_rule(trial_cost, spec, policy, price) == []


def test_max_trial_cost_zero_is_refused(write_yaml, capsys):
    assert check(write_yaml, SPEC + "stopping: {max_trial_cost: 0}\n") == 3


def test_the_diff_sees_mig_slices():
    import argparse

    from gate.commands.common import make_evaluator

    evaluator = make_evaluator(argparse.Namespace(policy_dir=POLICIES, as_of="2026-11-29"))
    a100 = SPEC.replace("accelerator: L4,", "accelerator: A100-80GB,")  # L4s have no MIG
    one = a100.replace("gpus_per_trial: 1,", "gpus_per_trial: 1, mig_profile: 1g.10gb,")
    seven = a100.replace("gpus_per_trial: 1,", "gpus_per_trial: 1, mig_profile: 7g.80gb,")
    base = evaluator.evaluate("s.yaml", one.encode())
    head = evaluator.evaluate("s.yaml", seven.encode())
    diff = compare("s.yaml", base, head)
    assert head.estimate and base.estimate
    seventh = base.estimate.worst.cost  # a seventh of the A100's price, rounded to 1e-9
    assert abs(head.estimate.worst.cost - seventh * 7) < Decimal("0.00000001")
    assert diff.change.value != "unchanged"
    assert any("GPUs per trial" in line for line in explain(diff))


@pytest.mark.parametrize(
    "value",
    [
        "--as-of=9999-12-31T23:00-05:00",
        "--as-of=0001-01-01T00:00+05:00",
        "--as-of=0001-01-01",  # a ledger read looks back a year: an internal error (exit 70)
        "--as-of=0002-06-01",
    ],
)
def test_as_of_at_the_edges_of_time_is_an_input_error(write_yaml, value):
    assert check(write_yaml, SPEC, value) == 3


def test_schema_write_to_an_impossible_dir_is_an_input_error():
    assert main(["schema", "--write", "--dir", "/dev/null/x"]) == 3


@pytest.mark.parametrize("url", ["www.evil.com", "https://evil.com/x", "see http://a.b"])
def test_spec_urls_are_not_live_links_in_the_comment(url):
    html = cmarkgfm.github_flavored_markdown_to_html(
        escape(url), options=cmarkgfm.Options.CMARK_OPT_UNSAFE
    )
    assert "<a " not in html


def test_approved_findings_are_neither_waived_nor_warnings_in_ci_formats():
    import dataclasses

    from gate.errors import Location
    from gate.evaluation.report import Report, SpecResult
    from gate.policy.findings import Finding, Outcome
    from gate.policy.model import Severity
    from gate.policy.rules import all_rule_ids, rule_info
    from gate.reporters import load_reporter

    approved = dataclasses.replace(
        Finding("BG110", Severity.APPROVAL, "64 trials", Location("s.yaml", 3, 1)),
        approved_by="carol",
    )
    report = Report(
        (SpecResult("s.yaml", Outcome.PASS, name="n", findings=(approved,)),),
        rules={r: rule_info(r) for r in all_rule_ids()},
    )
    junit = load_reporter("junit").render(report)
    assert "waived" not in junit and "approved by carol" in junit
    github = load_reporter("github").render(report)
    assert "::warning" not in github and "approved by carol" in github
    sarif = load_reporter("sarif").render(report)
    assert '"justification": "approved by carol"' in sarif


ASHA = SPEC + "search: {strategy: asha, max_trials: 8, scheduler: {max_epochs: SCHED}}\n"


def test_a_scheduler_bound_below_the_workloads_is_refused_not_silently_used(write_yaml, capsys):
    """``scheduler.max_epochs: 2`` under ``max_epochs: 10`` priced 2 epochs while the
    assumptions said every trial runs all 10: one bound must give way."""
    assert check(write_yaml, ASHA.replace("SCHED", "2")) == 3
    out = capsys.readouterr().out
    assert (
        ":6:9: search: scheduler.max_epochs 2 is below workload.max_epochs 10, so no trial "
        "trains past epoch 2 — set workload.max_epochs: 2, or drop scheduler.max_epochs"
    ) in out
    assert check(write_yaml, ASHA.replace("SCHED", "10")) != 3  # the same bound
    capsys.readouterr()
    # above it, the scheduler's rungs run past the last epoch: priced as a rung at 10 that
    # the engine does not have (its survivors train on), so it is refused too
    assert check(write_yaml, ASHA.replace("SCHED", "40")) == 3
    assert "scheduler.max_epochs 40 is above workload.max_epochs 10: the scheduler's rungs" in (
        capsys.readouterr().out
    )
    random = ASHA.replace("strategy: asha", "strategy: random").replace("SCHED", "2")
    assert check(write_yaml, random) != 3  # a random search ignores its scheduler (BG309)
    assert "scheduler.max_epochs 2 is below" not in capsys.readouterr().out


def test_a_skypilot_fact_nested_past_the_recursion_limit_is_an_input_error(write_yaml, capsys):
    """``json.loads('[' * 1100)`` raises RecursionError, which no ``except ValueError``
    caught: an ``X_BUDGET_GATE_*`` env of a task was exit 70, an internal error."""
    task = (
        "name: t\nresources: {accelerators: T4:1}\n"
        f'envs:\n  X_BUDGET_GATE_EPOCH_MINUTES: "{"[" * 1100}"\n'
        "run: python train.py --epochs 10\n"
    )
    path = write_yaml("task.yaml", task)
    assert main(["check", "--policy-dir", POLICIES, path]) == 3
    assert "X_BUDGET_GATE_EPOCH_MINUTES" in capsys.readouterr().out
