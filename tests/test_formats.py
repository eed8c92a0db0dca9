"""W&B, Katib, SkyPilot and Hydra files read as specs: counts, sources, errors (gate.formats).

The engines' own numbers are checked against their code in engine_tests/ (run in a venv
with the engines, see .ci/run); SkyPilot's and Hydra's loaders are installed here.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.cli import main
from gate.estimate.prices import load_catalog, quote
from gate.evaluation.evaluate import Evaluator
from gate.formats import Format, sniff
from gate.formats.model import Origin
from gate.policy.findings import Outcome
from gate.policy.loader import PolicySet, builtin_policies
from gate.spec.loader import load_file
from gate.spec.trial import Capacity

CONFIGS = Path(__file__).parent / "fixtures" / "configs"
RULES = CONFIGS / "rules"


def evaluate(path: Path, policies: PolicySet | None = None):
    evaluator = Evaluator(policies or builtin_policies(), load_catalog(), dt.date(2026, 1, 1))
    return evaluator.evaluate_spec(str(path))


def source_of(result, field: str):
    return next(row.source for row in result.imported.fields if row.field == field)


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("wandb/sweep-grid.yaml", Format.WANDB),
        ("katib/median-stop.yaml", Format.KATIB),
        ("skypilot/distributed-pytorch-train.yaml", Format.SKYPILOT),
        ("hydra/optuna-sphere.yaml", Format.HYDRA),
        ("hydra/basic-sweep.yaml", Format.HYDRA),
    ],
)
def test_each_format_is_told_by_its_own_markers(name: str, fmt: Format) -> None:
    assert sniff(load_file(CONFIGS / name).data) is fmt


def test_a_budget_gate_spec_stays_one() -> None:
    assert sniff(load_file(Path("examples/cifar-sweep.yaml")).data) is Format.BUDGET_GATE


def test_wandb_grid_of_3_by_4_is_12_trials_with_each_count_traced() -> None:
    evaluation = evaluate(RULES / "wandb-grid-3x4.yaml")
    result = evaluation.result
    assert result.imported.format is Format.WANDB
    assert result.estimate.worst.trials == 12
    lr = source_of(result, "search.parameters.lr")
    assert (lr.origin, lr.location.line, lr.location.col) == (Origin.FILE, 4, 7)
    epochs = source_of(result, "workload.max_epochs")
    assert evaluation.spec.workload.max_epochs == 30 and epochs.location.line == 6
    accelerator = source_of(result, "resources.accelerator")
    assert accelerator.origin is Origin.EXTENSION and accelerator.location.line == 7


def test_wandb_ranges_count_as_wandb_enumerates_them() -> None:
    # int_uniform 1..5: 5 values; q_uniform arange(0, 1, 0.25): 4; epochs: 2 → 40 runs
    assert evaluate(RULES / "wandb-grid-ranges.yaml").result.estimate.worst.trials == 5 * 4 * 2


def test_vendored_wandb_grid_prices_its_27_runs() -> None:
    result = evaluate(CONFIGS / "wandb/sweep-grid.annotated.yaml").result
    assert result.outcome is not Outcome.INVALID
    assert result.estimate.worst.trials == 3 * 3 * 3


@pytest.mark.parametrize(
    ("name", "line", "words"),
    [
        ("wandb-random-unbounded.yaml", 2, "add run_cap: N"),
        ("katib-unbounded.yaml", 7, "add maxTrialCount: N under spec"),
        ("wandb-grid-distribution.yaml", 4, "which a grid cannot enumerate"),
    ],
)
def test_unbounded_and_unenumerable_searches_are_errors_with_the_fix(
    name: str, line: int, words: str
) -> None:
    result = evaluate(RULES / name).result
    assert result.outcome is Outcome.INVALID
    assert result.errors[0].location.line == line
    assert words in str(result.errors[0])


def test_vendored_wandb_bayes_without_run_cap_is_unbounded() -> None:
    result = evaluate(CONFIGS / "wandb/sweep-bayes.yaml").result
    assert result.outcome is Outcome.INVALID
    assert "run_cap" in result.errors[0].hint


def test_wandb_hyperband_is_asha_at_its_first_band_every_run_counted() -> None:
    evaluation = evaluate(RULES / "wandb-random-capped.yaml")
    search = evaluation.spec.search
    assert (search.strategy.value, search.max_trials) == ("asha", 40)
    assert (search.scheduler.min_epochs, search.scheduler.reduction_factor) == (3, 3.0)


def test_katib_medianstop_gives_max_trials_parallel_and_failure_budget() -> None:
    evaluation = evaluate(CONFIGS / "katib/median-stop.annotated.yaml")
    result, spec = evaluation.result, evaluation.spec
    assert result.estimate.worst.trials == 15  # maxTrialCount
    assert spec.search.max_concurrent_trials == 2  # parallelTrialCount
    assert any("after 3 failed trials" in note for note in result.imported.notes)
    assert any("start_step 2" in n or "after step 2" in n for n in result.imported.notes)
    assert source_of(result, "search.max_trials").location.line == 29


def test_katib_without_parallel_trial_count_runs_3_at_once_by_its_default(tmp_path) -> None:
    text = (CONFIGS / "katib/median-stop.annotated.yaml").read_text()
    path = tmp_path / "exp.yaml"
    path.write_text(text.replace("  parallelTrialCount: 2\n", ""))
    evaluation = evaluate(path)
    assert evaluation.spec.search.max_concurrent_trials == 3
    assert source_of(evaluation.result, "search.max_concurrent_trials").origin is Origin.ENGINE


def test_katib_pytorchjob_gpus_are_every_replicas_limits() -> None:
    # Master 1 × 8 GPUs + Worker 3 × 8 GPUs = 32 per trial
    evaluation = evaluate(CONFIGS / "katib/pytorchjob-mnist.gpu.yaml")
    assert evaluation.spec.resources.gpus_per_trial == 32
    assert evaluation.result.estimate.worst.trials == 12


def test_katib_grid_refuses_more_trials_than_combinations(tmp_path) -> None:
    text = (
        (CONFIGS / "katib/grid.yaml").read_text().replace("maxTrialCount: 12", "maxTrialCount: 99")
    )
    path = tmp_path / "grid.yaml"
    path.write_text(text)
    errors = evaluate(path).result.errors
    assert "above the grid's 45 combinations" in str(errors[0])  # 9 lr × 5 momentum


def test_an_engine_file_keeps_yaml_11_numbers_its_engine_reads(tmp_path) -> None:
    """Kubernetes reads ``defaultMode: 0644`` as octal, as PyYAML does: not refused there,
    while in a spec or policy the same number is (YAML 1.2 editors read it otherwise)."""
    text = (CONFIGS / "katib/grid.yaml").read_text()
    volumes = (
        "            restartPolicy: Never\n"
        "            volumes: [{name: c, configMap: {name: c, defaultMode: 0644}}]"
    )
    path = tmp_path / "grid.yaml"
    path.write_text(text.replace("            restartPolicy: Never", volumes))
    plain = tmp_path / "plain.yaml"
    plain.write_text(text)
    assert [str(e) for e in evaluate(path).result.errors] == [
        str(e).replace(str(plain), str(path)) for e in evaluate(plain).result.errors
    ]
    assert not any("YAML 1.1" in str(e) for e in evaluate(path).result.errors)


def test_vendored_katib_example_names_each_missing_fact_and_where() -> None:
    result = evaluate(CONFIGS / "katib/median-stop.yaml").result
    text = "\n".join(str(e) for e in result.errors)
    assert "budget-gate/accelerator" in text and "budget-gate/epoch_minutes" in text
    assert "gpus_per_trial" in text and "max_epochs" not in text  # --epochs=1 in the command


def test_skypilot_h100x8_on_4_nodes_is_32_gpus_per_trial_on_spot() -> None:
    evaluation = evaluate(RULES / "skypilot-h100x8-4nodes.yaml")
    resources = evaluation.spec.resources
    assert (resources.accelerator, resources.gpus_per_trial) == ("H100", 32)
    assert resources.capacity.value == "spot"


def test_skypilot_any_of_prices_the_dearest_candidate() -> None:
    policy = builtin_policies().for_team(None).policy
    prices = {
        name: quote(load_catalog(), policy, name, Capacity.ON_DEMAND, None).per_gpu_hour
        for name in ("A100-80GB", "H100")
    }
    evaluation = evaluate(RULES / "skypilot-any-of.yaml")
    assert prices["H100"] != prices["A100-80GB"]
    assert evaluation.spec.resources.accelerator == max(prices, key=prices.__getitem__)
    assert evaluation.result.estimate.worst.trials == 6


@pytest.mark.parametrize(
    ("resources", "said"),
    [  # the cheapest launches: H200:1 (9.49 an hour) before L4:8 (13.35), the one priced
        ("accelerators: {H200: 1, L4: 8}", "H200 needs an approval under the team's policy"),
        (
            "any_of: [{accelerators: 'H200:1'}, {accelerators: 'L4:8'}]",
            "H200 needs an approval under the team's policy",
        ),
        ("accelerators: {H100: 2, L4: 8}", "8 GPUs a trial, more than the 2 of the H100 priced"),
    ],
)
def test_a_candidate_the_priced_one_does_not_stand_for_is_refused(
    tmp_path, resources, said
) -> None:
    text = (RULES / "skypilot-any-of.yaml").read_text()
    text = text.replace(
        "  any_of:\n    - {accelerators: A100-80GB:8}\n    - {accelerators: H100:8}\n",
        f"  {resources}\n",
    )
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "default.yaml").write_text(
        "apiVersion: budget-gate/v1\nkind: Policy\napproval: {accelerators: [H200]}\n"
    )
    (tmp_path / "task.yaml").write_text(text)
    result = evaluate(tmp_path / "task.yaml", PolicySet(policies)).result
    assert result.outcome is Outcome.INVALID
    (error,) = result.errors
    assert said in error.message and error.location is not None


def test_annotated_skypilot_task_still_loads_in_skypilot() -> None:
    # sky.Task.from_yaml refuses unknown keys; X_BUDGET_GATE_ envs are envs like any other
    code = (
        "import sky, sys; t = sky.Task.from_yaml(sys.argv[1]); "
        "print(t.num_nodes, sorted(k for k in t.envs if k.startswith('X_BUDGET_GATE_')))"
    )
    path = RULES / "skypilot-h100x8-4nodes.yaml"
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
    ).stdout
    assert out.split(" ", 1)[0] == "4" and "X_BUDGET_GATE_EPOCH_MINUTES" in out


def test_hydra_optuna_sweeper_counts_n_trials_and_n_jobs() -> None:
    evaluation = evaluate(CONFIGS / "hydra/optuna-sphere.annotated.yaml")
    assert evaluation.result.estimate.worst.trials == 20
    assert evaluation.spec.search.max_concurrent_trials == 1


def test_hydra_optuna_defaults_are_the_engines_and_said(tmp_path) -> None:
    text = (CONFIGS / "hydra/optuna-sphere.annotated.yaml").read_text()
    path = tmp_path / "config.yaml"
    path.write_text(text.replace("    n_trials: 20\n", "").replace("    n_jobs: 1\n", ""))
    evaluation = evaluate(path)
    assert evaluation.result.estimate.worst.trials == 20
    assert evaluation.spec.search.max_concurrent_trials == 2
    source = source_of(evaluation.result, "search.max_concurrent_trials")
    assert source.origin is Origin.ENGINE and "n_jobs 2" in source.detail


def test_hydra_basic_sweeper_is_the_cartesian_product() -> None:
    # db: mysql,postgresql × db.timeout: 5,10
    assert evaluate(CONFIGS / "hydra/basic-sweep.listed.yaml").result.estimate.worst.trials == 4


def test_hydra_glob_cannot_be_counted_from_the_file() -> None:
    result = evaluate(CONFIGS / "hydra/basic-sweep.yaml").result
    assert "glob(*)" in str(result.errors[0]) and "list the options" in result.errors[0].hint


def test_annotated_hydra_config_still_composes_in_hydra(tmp_path) -> None:
    from hydra import compose, initialize_config_dir

    (tmp_path / "db").mkdir()
    for option in ("mysql", "postgresql"):  # the tutorial's config group, as in its conf/db/
        (tmp_path / "db" / f"{option}.yaml").write_text(f"driver: {option}\ntimeout: 10\n")
    (tmp_path / "config.yaml").write_text((CONFIGS / "hydra/basic-sweep.listed.yaml").read_text())
    with initialize_config_dir(str(tmp_path), version_base=None):
        cfg = compose("config", overrides=["db=mysql"])
    assert cfg["x-budget-gate"]["epoch_minutes"] == 2 and cfg["db"]["driver"] == "mysql"


def test_policy_defaults_fill_what_the_file_lacks(tmp_path) -> None:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "default.yaml").write_text(
        "apiVersion: budget-gate/v1\nkind: Policy\n"
        "defaults: {accelerator: A100-80GB, gpus_per_trial: 2, epoch_minutes: 3}\n"
    )
    evaluation = evaluate(CONFIGS / "wandb/sweep-grid.yaml", PolicySet(policies))
    assert evaluation.spec.resources.gpus_per_trial == 2
    source = source_of(evaluation.result, "resources.accelerator")
    assert source.origin is Origin.POLICY and "default.yaml" in source.detail


def test_a_fact_that_overrules_the_engine_is_an_error(tmp_path) -> None:
    text = (RULES / "wandb-random-capped.yaml").read_text()
    path = tmp_path / "sweep.yaml"
    path.write_text(text.replace("max_epochs: 27}", "max_epochs: 27, max_trials: 10}"))
    result = evaluate(path).result
    assert "the engine runs 40" in str(result.errors[0])


def test_a_misspelt_annotation_is_named_with_a_suggestion(tmp_path) -> None:
    text = (CONFIGS / "katib/median-stop.annotated.yaml").read_text()
    path = tmp_path / "exp.yaml"
    path.write_text(text.replace("budget-gate/epoch_minutes", "budget-gate/epoch_minute"))
    error = evaluate(path).result.errors[0]
    assert "budget-gate/epoch_minute is not a budget-gate fact" in str(error)
    assert "epoch_minutes" in error.hint and error.location.line == 12


def test_import_prints_a_spec_that_check_accepts(tmp_path, capsys) -> None:
    out = tmp_path / "spec.yaml"
    assert main(["import", str(RULES / "wandb-grid-3x4.yaml"), "--write", str(out)]) == 0
    text = out.read_text()
    assert all(
        "  # " in line
        for line in text.splitlines()
        if line and line[0] != "#" and not line.endswith(":")
    )
    assert "wandb-grid-3x4.yaml:4:7: file — parameters.lr" in text
    capsys.readouterr()
    main(["check", str(out), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert report["results"][0]["estimate"]["worst"]["trials"] == 12


def test_import_never_writes_over_the_file_it_reads(tmp_path, capsys) -> None:
    sweep = tmp_path / "sweep.yaml"
    sweep.write_bytes((RULES / "wandb-grid-3x4.yaml").read_bytes())
    for target in (str(sweep), str(tmp_path / "." / "sweep.yaml")):
        assert main(["import", str(sweep), "--write", target]) == 3
        assert "is the file being imported: it would be overwritten" in capsys.readouterr().err
    assert sweep.read_bytes() == (RULES / "wandb-grid-3x4.yaml").read_bytes()
    other = tmp_path / "spec.yaml"
    other.write_text("old")
    assert main(["import", str(sweep), "--write", str(other)]) == 0
    assert "(replacing the file that was there)" in capsys.readouterr().err
    missing = str(tmp_path / "missing.yaml")
    assert main(["import", missing, "--write", str(sweep)]) == 3  # no file: an input error
    assert "missing.yaml: no such file" in capsys.readouterr().err


def test_check_json_names_format_and_sources(capsys) -> None:
    main(["check", str(RULES / "skypilot-h100x8-4nodes.yaml"), "--format", "json"])
    result = json.loads(capsys.readouterr().out)["results"][0]
    assert result["imported"]["format"] == "SkyPilot task"
    gpus = next(f for f in result["imported"]["fields"] if f["field"] == "resources.gpus_per_trial")
    assert (gpus["value"], gpus["location"]["line"]) == ("32", 4)


MAPPERS = {f"gate.formats.{m}" for m in ("wandb", "katib", "skypilot", "hydra")}
TRANSLATION = {
    "gate.formats.model",
    "gate.formats.translate",
    "gate.formats.spelling",
    "gate.formats.extension",
}
ENGINES = {"sweeps", "wandb", "kubeflow", "kubernetes", "sky", "hydra", "omegaconf", "optuna"}


def loaded_after_check(path: str) -> tuple[int, list[str]]:
    """Exit code of ``check PATH`` in a fresh process, and the mappers and engines it loaded."""
    watched = sorted(MAPPERS | TRANSLATION | ENGINES)
    probe = (
        "import json, sys\n"
        "from gate.cli import main\n"
        f"code = main(['check', {path!r}, '-q'])\n"
        f"print(json.dumps([code, sorted(set({watched!r}) & set(sys.modules))]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    code, names = json.loads(proc.stdout.splitlines()[-1])
    return code, names


def test_check_of_a_spec_imports_no_engine_mapper_nor_engine() -> None:
    assert loaded_after_check("examples/cifar-sweep.yaml") == (0, [])


def test_check_of_a_wandb_sweep_imports_its_mapper_and_no_engine() -> None:
    # the probe does see a mapper when one is used: W&B's, and none of the others
    _, names = loaded_after_check(str(RULES / "wandb-grid-3x4.yaml"))
    assert "gate.formats.wandb" in names and set(names) >= TRANSLATION
    assert not (MAPPERS - {"gate.formats.wandb"} | ENGINES) & set(names)


SUBMITIT_CONFIG = """\
defaults:
  - override hydra/launcher: submitit_slurm
  - _self_
lr: 0.1
hydra:
  mode: MULTIRUN
  sweeper:
    params:
      lr: 0.1,0.01,0.001
      wd: 0.0,0.1
  launcher:
    gpus_per_node: 4
    nodes: 2
{timeout}    array_parallelism: 3
x-budget-gate:
  accelerator: A100-80GB
  epoch_minutes: 6
  max_epochs: 10
  quality_gate: [{{metric: val_f1, op: ">=", value: 0.8}}]
"""


@pytest.mark.parametrize("timeout", ["    timeout_min: 120\n", ""])
def test_hydra_submitit_launcher_resources_are_what_submitit_runs(tmp_path, timeout) -> None:
    """The Submitit launcher's own config (hydra-submitit-launcher) resolves to the GPUs,
    the time limit and the concurrency the mapping prices."""
    from hydra import compose, initialize_config_dir
    from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf

    from gate.formats.hydra_launchers import SUBMITIT_TIMEOUT_MIN

    (tmp_path / "config.yaml").write_text(SUBMITIT_CONFIG.format(timeout=timeout))
    with initialize_config_dir(str(tmp_path), version_base=None):
        cfg = compose("config", return_hydra_config=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("SlurmLauncher")  # Hydra loaded the plugin's config
    assert BaseQueueConf.timeout_min == SUBMITIT_TIMEOUT_MIN  # the default we assume is its
    evaluation = evaluate(tmp_path / "config.yaml")
    spec = evaluation.spec
    assert spec is not None, evaluation.result.errors
    assert spec.resources.gpus_per_trial == launcher.gpus_per_node * launcher.nodes == 8
    assert spec.stopping.max_trial_hours == launcher.timeout_min / 60
    assert spec.search.max_concurrent_trials == launcher.array_parallelism == 3
    assert evaluation.result.estimate.worst.trials == 6  # the basic sweeper: 3 × 2
    source = source_of(evaluation.result, "stopping.max_trial_hours")
    assert (source.origin is Origin.ENGINE) == (timeout == "")


def _hydra(tmp_path: Path, text: str):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return evaluate(path)


def test_hydra_submitit_runs_its_default_array_parallelism_at_once(tmp_path) -> None:
    """Without array_parallelism Submitit runs 256 jobs at once, not one (Hydra composes it)."""
    from hydra import compose, initialize_config_dir

    from gate.formats.hydra_launchers import SUBMITIT_ARRAY_PARALLELISM

    text = SUBMITIT_CONFIG.format(timeout="").replace("    array_parallelism: 3\n", "")
    (tmp_path / "config.yaml").write_text(text)
    with initialize_config_dir(str(tmp_path), version_base=None):
        cfg = compose("config", return_hydra_config=True)
    assert cfg.hydra.launcher.array_parallelism == SUBMITIT_ARRAY_PARALLELISM == 256
    spec = evaluate(tmp_path / "config.yaml").spec
    assert spec is not None and spec.search.max_concurrent_trials == 256


@pytest.mark.parametrize(
    ("launcher", "gpus"),
    [
        ('    gpus_per_node: "8"\n    nodes: "4"\n', 32),  # Hydra's schema casts the strings
        ('    gres: "gpu:a100:8"\n    nodes: 4\n', 32),
        ("    gpus_per_task: 2\n    tasks_per_node: 4\n", 8),
    ],
)
def test_hydra_submitit_gpus_are_read_however_the_launcher_asks(tmp_path, launcher, gpus) -> None:
    text = SUBMITIT_CONFIG.format(timeout="").replace(
        "    gpus_per_node: 4\n    nodes: 2\n", launcher
    )
    spec = _hydra(tmp_path, text).spec
    assert spec is not None and spec.resources.gpus_per_trial == gpus


@pytest.mark.parametrize("count", ['"\u00b2"', '"\uff18"'])
def test_a_launcher_count_in_other_digits_is_refused_not_a_crash(tmp_path, count) -> None:
    """``"²"`` passed ``str.isdigit`` and ``int`` refused it: exit 70; ``"８"`` was 8."""
    text = SUBMITIT_CONFIG.format(timeout="").replace(
        "    gpus_per_node: 4\n", f"    gpus_per_node: {count}\n"
    )
    (error,) = _hydra(tmp_path, text).result.errors
    assert "hydra.launcher.gpus_per_node is" in str(error) and "not a whole number" in str(error)


RAY_CONFIG = (
    SUBMITIT_CONFIG.format(timeout="")
    .replace("submitit_slurm", "ray")
    .replace(
        "    gpus_per_node: 4\n    nodes: 2\n    array_parallelism: 3\n",
        "    ray:\n      remote: {num_gpus: 8}\n",
    )
)


@pytest.mark.parametrize(("remote", "gpus"), [("{num_gpus: 8}", 8), ("{num_gpus: 0.5}", 1)])
def test_hydra_ray_launcher_gpus_are_each_jobs(tmp_path, remote, gpus) -> None:
    """hydra-ray-launcher hands each job ``ray.remote``'s num_gpus (a share holds a GPU)."""
    spec = _hydra(tmp_path, RAY_CONFIG.replace("{num_gpus: 8}", remote)).spec
    assert spec is not None and spec.resources.gpus_per_trial == gpus


def test_a_launcher_budget_gate_does_not_read_that_asks_for_gpus_is_refused(tmp_path) -> None:
    text = RAY_CONFIG.replace("override hydra/launcher: ray", "override hydra/launcher: rq")
    text = text.replace("    ray:\n      remote: {num_gpus: 8}\n", "    resources: {gpus: 8}\n")
    result = _hydra(tmp_path, text).result
    assert result.outcome.value == "invalid"
    (error,) = result.errors
    assert "hydra.launcher.resources.gpus: the rq launcher's GPUs" in error.message


@pytest.mark.parametrize(
    "asks",
    [
        "    additional_parameters: {gres: gpu:8}\n",
        "    additional_parameters: {gpus: 8}\n",
        "    srun_args: [--gpus-per-task=8]\n",
        "    srun_args: [-G, '8']\n",
        "    additional_parameters: {tres-per-task: gres/gpu:8}\n",
        "    gres: gpu\n",  # Slurm's one GPU, in no form read for a count
    ],
)
def test_submitit_gpus_asked_for_where_they_are_not_read_are_refused(tmp_path, asks) -> None:
    """Read as no GPU, the x-budget-gate block's gpus_per_trial: 1 would be believed."""
    text = SUBMITIT_CONFIG.format(timeout="").replace("    gpus_per_node: 4\n", asks)
    text = text.replace("  max_epochs: 10\n", "  max_epochs: 10\n  gpus_per_trial: 1\n")
    result = _hydra(tmp_path, text).result
    assert result.outcome is Outcome.INVALID, result.findings
    (error,) = result.errors
    assert "GPUs" in error.message and error.location is not None
    assert error.location.line == text.splitlines().index(asks.splitlines()[0]) + 1


def test_submitit_memory_and_cpus_per_gpu_only_qualify_the_gpus_read(tmp_path) -> None:
    qualifiers = (
        "    cpus_per_gpu: 8\n    mem_per_gpu: 40G\n"
        "    additional_parameters: {gpu-bind: closest, gpu-freq: high}\n"
        "    srun_args: [--gpu-bind=none]\n"
        "    setup: [source /opt/envs/gpu-py311/bin/activate, nvidia-smi --query-gpu=name]\n"
    )
    text = SUBMITIT_CONFIG.format(timeout="").replace(
        "    gpus_per_node: 4\n", "    gpus_per_node: 4\n" + qualifiers
    )
    spec = _hydra(tmp_path, text).spec
    assert spec is not None and spec.resources.gpus_per_trial == 8


@pytest.mark.parametrize("sweeper", ["nevergrad", "ax", "my_sweeper"])
def test_a_sweeper_budget_gate_does_not_read_is_refused_not_taken_for_a_grid(
    tmp_path, sweeper
) -> None:
    """Nevergrad's optim.budget or Ax's max_trials run 1,000 jobs; the grid of lr has 2."""
    text = SUBMITIT_CONFIG.format(timeout="").replace(
        "defaults:\n", f"defaults:\n  - override hydra/sweeper: {sweeper}\n"
    )
    text = text.replace("  sweeper:\n", "  sweeper:\n    optim: {budget: 1000}\n")
    result = _hydra(tmp_path, text).result
    assert result.outcome is Outcome.INVALID
    (error,) = result.errors
    assert f"hydra/sweeper: {sweeper} is a sweeper budget-gate does not read" in error.message
    assert error.location is not None and error.location.line == 2  # the entry that picks it


GROUPED = """\
defaults:
{entries}
  - override hydra/launcher: submitit_slurm
trainer:
  max_epochs: 1
hydra:
  sweeper:
    params:
      lr: 0.1,0.01
  launcher: {{gpus_per_node: 1}}
x-budget-gate: {{accelerator: A100-80GB, epoch_minutes: 6}}
"""


def _grouped(tmp_path: Path, entries: str, files: dict[str, str]):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return _hydra(tmp_path, GROUPED.format(entries=entries))


def _composed_epochs(tmp_path: Path) -> int:
    import warnings

    from hydra import compose, initialize_config_dir

    with initialize_config_dir(str(tmp_path), version_base=None), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a defaults list without _self_
        return int(compose("config").trainer.max_epochs)


@pytest.mark.parametrize(
    ("entries", "files", "where"),
    [  # Hydra runs 1,000 epochs in each: the group's value wins, or the config has none
        ("  - _self_\n  - trainer: long", {"trainer/long.yaml": "max_epochs: 1000\n"}, 1),
        (
            "  - _self_\n  - trainer: long",
            {"trainer/long.yaml": "# @package _global_\ntrainer: {max_epochs: 1000}\n"},
            2,
        ),
        (
            "  - _self_\n  - run/long",
            {"run/long.yaml": "# @package trainer\nmax_epochs: 1000\n"},
            2,
        ),
        (  # the entry's package wins over the file's header
            "  - _self_\n  - run@trainer: long",
            {"run/long.yaml": "# @package elsewhere\nmax_epochs: 1000\n"},
            2,
        ),
        (  # a group the group composes, in its own directory
            "  - _self_\n  - trainer: default",
            {
                "trainer/default.yaml": "defaults:\n  - long\n  - _self_\n",
                "trainer/long.yaml": "max_epochs: 1000\n",
            },
            1,
        ),
    ],
)
def test_a_config_group_that_sets_the_epochs_hydra_runs_is_refused(
    tmp_path, entries, files, where
) -> None:
    """The config says 1 epoch; the group it composes says 1,000, and Hydra runs those."""
    result = _grouped(tmp_path, entries, files).result
    assert _composed_epochs(tmp_path) == 1000
    assert result.outcome is Outcome.INVALID
    (error,) = result.errors
    assert "which budget-gate does not compose with the config" in error.message
    assert error.location is not None and error.location.line == where
    assert error.location.file.endswith(list(files)[-1])


def test_a_group_the_config_overrides_or_that_sets_no_epochs_is_read_as_hydra_runs_it(
    tmp_path,
) -> None:
    """lightning-hydra-template's layout: callbacks compose callbacks, hydra/ its run dirs, a
    callback checks every epoch; an empty group sets nothing."""
    files = {
        "trainer/long.yaml": "max_epochs: 1000\n",
        "model/small.yaml": "width: 64\n",
        "callbacks/default.yaml": "defaults:\n  - checkpoint\n  - _self_\n",
        "callbacks/checkpoint.yaml": "checkpoint: {every_n_epochs: 1, monitor: val/acc}\n",
        "hydra/default.yaml": "run: {dir: logs}\njob: {chdir: true}\n",
        "local/default.yaml": "# machine-specific settings go here\n",
    }
    entries = (
        "  - trainer: long\n  - model: small\n  - callbacks: default\n  - hydra: default\n"
        "  - optional local: default\n  - _self_"
    )
    evaluation = _grouped(tmp_path, entries, files)
    assert _composed_epochs(tmp_path) == 1  # _self_ last: the config's own value wins
    assert evaluation.spec is not None and evaluation.spec.workload.max_epochs == 1


@pytest.mark.parametrize(
    ("entries", "files", "said"),
    [
        ("  - trainer: long", {}, "is not beside the config"),
        ("  - trainer: ???", {}, "chosen on the command line"),
        (
            "  - trainer: long",
            {"trainer/long.yaml": "defaults:\n  - schedule: cosine\nwidth: 1\n"},
            "is not beside the config",  # trainer/schedule/cosine.yaml
        ),
        (  # the config's own hydra group, as lightning-hydra-template has one
            "  - hydra: custom\n  - _self_",
            {"hydra/custom.yaml": "launcher: {nodes: 16}\n"},
            "sets hydra.launcher.nodes",
        ),
        ("  - _self_\n  - opt: fast", {"opt/fast.yaml": "# @package _global_\nhydra: {}\n"}, ""),
    ],
)
def test_a_config_group_budget_gate_cannot_read_is_refused(tmp_path, entries, files, said) -> None:
    result = _grouped(tmp_path, entries, files).result
    if not said:  # an empty hydra: key sets nothing: nothing to refuse
        assert result.outcome is not Outcome.INVALID, result.errors
        return
    assert result.outcome is Outcome.INVALID
    (error,) = result.errors
    assert said in error.message


@pytest.mark.parametrize("override", ["override /hydra/sweeper", "/hydra/sweeper"])
def test_hydra_groups_chosen_by_absolute_path_count(tmp_path, override) -> None:
    """lightning-hydra-template writes ``override /hydra/sweeper: optuna``: the same group."""
    text = (CONFIGS / "hydra/optuna-sphere.annotated.yaml").read_text()
    assert "override hydra/sweeper: optuna" in text
    evaluation = _hydra(tmp_path, text.replace("override hydra/sweeper", override))
    assert evaluation.result.estimate is not None
    assert evaluation.result.estimate.worst.trials == 20  # Optuna's n_trials, not a grid of 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("n_trials: 20", "n_trials: [1]"), "hydra.sweeper.n_trials is [1], not a whole number"),
        (("x: range(-5.5, 5.5, step=0.5)", "x: range(0, 1e300, step=1e-300)"), "over 100,000"),
        (("x: range(-5.5, 5.5, step=0.5)", "x: range(0, 10000000000)"), "over 100,000"),
    ],
)
def test_hydra_values_that_crashed_are_refused_at_their_line(tmp_path, change, message) -> None:
    text = (CONFIGS / "hydra/optuna-sphere.annotated.yaml").read_text()
    assert change[0] in text
    result = _hydra(tmp_path, text.replace(*change)).result
    (error,) = result.errors
    assert message in str(error) and error.location is not None and error.location.line > 1


def test_hydra_joblib_runs_n_jobs_at_once_and_minus_one_is_refused(tmp_path) -> None:
    text = SUBMITIT_CONFIG.format(timeout="").replace("submitit_slurm", "joblib")
    text = text.replace("    gpus_per_node: 4\n    nodes: 2\n    array_parallelism: 3\n", "")
    text = text.replace("x-budget-gate:\n", "x-budget-gate:\n  gpus_per_trial: 1\n")
    refused = _hydra(tmp_path, text.replace("  launcher:\n", "  launcher: {}\n")).result
    assert "hydra.launcher.n_jobs is -1 (as many as CPUs)" in str(refused.errors[0])
    spec = _hydra(tmp_path, text.replace("  launcher:\n", "  launcher:\n    n_jobs: 4\n")).spec
    assert spec is not None and spec.search.max_concurrent_trials == 4


@pytest.mark.parametrize(
    ("epochs", "message"),
    [
        ("${total_epochs}", "trainer.max_epochs is ${total_epochs}, an interpolation"),
        ("-1", "trainer.max_epochs is -1: no bound on the epochs"),
        ("null", "trainer.max_epochs is null: no bound on the epochs"),  # Lightning's 1,000
    ],
)
def test_hydra_epochs_it_cannot_see_are_refused(tmp_path, epochs, message) -> None:
    """Hydra resolves ``${total_epochs}`` to 1000, and Lightning trains -1 for ever: neither
    may leave the declared 10 to be priced."""
    text = (CONFIGS / "hydra/optuna-sphere.annotated.yaml").read_text()
    text += f"total_epochs: 1000\ntrainer:\n  max_epochs: {epochs}\n"
    (error,) = _hydra(tmp_path, text).result.errors
    assert message in str(error) and error.location is not None
    assert error.location.line == text.count("\n")


@pytest.mark.parametrize(
    ("resources", "line", "column"),
    [
        ("  accelerators: T4:1\n  instance_type: p5.48xlarge\n", 4, 18),
        (
            "  any_of:\n    - {accelerators: T4:1, instance_type: p5.48xlarge}\n"
            "    - {accelerators: T4:1}\n",
            4,
            43,
        ),
        (
            "  accelerators: T4:1\n  ordered:\n    - {accelerators: T4:1}\n"
            "    - accelerators: H100:1\n      instance_type: p5.48xlarge\n",
            7,
            22,
        ),
    ],
)
def test_an_instance_type_beside_accelerators_is_refused_at_its_line(
    tmp_path, resources, line, column
) -> None:
    """SkyPilot bills the instance type whatever accelerators it names: priced as a T4 before."""
    path = tmp_path / "task.yaml"
    path.write_text(
        f"name: train\nresources:\n{resources}envs:\n  X_BUDGET_GATE_EPOCH_MINUTES: 60\n"
        "run: python train.py --epochs 10\n"
    )
    (error,) = evaluate(path).result.errors
    assert "instance_type p5.48xlarge decides the machine SkyPilot bills" in str(error)
    assert "drop instance_type" in str(error)
    assert error.location is not None
    assert (error.location.line, error.location.col) == (line, column)


@pytest.mark.parametrize(
    ("resources", "message", "line"),
    [
        # SkyPilot infers 8 × H100 from p5.48xlarge; the declared T4 must not price it
        ("{instance_type: p5.48xlarge}", "resources.instance_type p5.48xlarge holds", 2),
        # beside accelerators SkyPilot bills the instance (8 × H100) and ignores the T4:1
        (
            "{accelerators: T4:1, instance_type: p5.48xlarge}",
            "resources.instance_type p5.48xlarge decides the machine SkyPilot bills",
            2,
        ),
        # an unpriced candidate beside a priced one: dropping it priced the T4 (h100 is H100,
        # test_formats_epochs.py::test_a_skypilot_accelerator_in_another_case_is_the_catalogs)
        ("{accelerators: [T4:1, Z100:8]}", "the task's candidate Z100:8 has no price", 2),
        # SkyPilot refuses both; skipped or read by bool(), they priced a T4 or spot
        ('{any_of: ["H100:8", {accelerators: T4:1}]}', "resources.any_of is not a list of", 2),
        ("{ordered: {accelerators: H100:8}}", "resources.ordered is not a list of", 2),
        ('{accelerators: T4:1, use_spot: "false"}', "resources.use_spot is 'false', not", 2),
    ],
)
def test_skypilot_hardware_it_cannot_price_is_refused(tmp_path, resources, message, line) -> None:
    path = tmp_path / "task.yaml"
    path.write_text(
        f"name: train\nresources: {resources}\nenvs:\n  X_BUDGET_GATE_ACCELERATOR: T4\n"
        "  X_BUDGET_GATE_GPUS_PER_TRIAL: 1\n  X_BUDGET_GATE_EPOCH_MINUTES: 1\n"
        "run: python train.py --epochs 1\n"
    )
    (error,) = evaluate(path).result.errors
    assert message in str(error) and error.location is not None and error.location.line == line


@pytest.mark.parametrize(
    "swept",
    [
        "range(1, stop=1000)",
        "range(start=1, stop=1000)",
        "range(1, 1000, step=3)",
        "range(1, 1000, 3)",
        "range(7)",
        "range(0.5, stop=2.5, step=0.5)",
        # Hydra adds the exact binary steps: 0.1 + 0.1 falls below 0.2, a third job runs
        *["range(0,0.2,0.1)", "range(0.5,0.9,0.1)", "range(0,2.2,0.2)", "range(1,0,-0.1)"],
        "choice(1, 2, 3)",
        "1,2,3,4",
    ],
)
def test_hydra_sweeps_are_counted_as_hydras_own_parser_counts_them(swept) -> None:
    """Hydra's functions are Python functions: ``range(1, stop=1000)`` is 999 jobs, not 1."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from gate.formats.hydra_sweeps import sweep

    override = OverridesParser.create().parse_override(f"x={swept}")
    hydras = list(override.sweep_iterator())
    value, count = sweep(swept, "x", None)
    assert count == len(hydras)
    assert [float(v) for v in value["values"]] == [float(v) for v in hydras]


@settings(max_examples=300, deadline=None)
@given(
    start=st.decimals(-5, 5, places=2),
    step=st.sampled_from(["0.1", "0.2", "0.05", "0.3", "-0.1", "0.25", "0.7"]),
    steps=st.integers(0, 15),
    nudge=st.sampled_from(["0", "0.01", "-0.01"]),
)
def test_hydra_float_ranges_run_as_many_jobs_as_hydras(start, step, steps, nudge) -> None:
    """A red team found 181 of 9,261 float ranges counted short, never long."""
    from decimal import Decimal

    from hydra.core.override_parser.overrides_parser import OverridesParser

    from gate.formats.hydra_sweeps import sweep

    stop = start + Decimal(step) * steps + Decimal(nudge)
    swept = f"range({start},{stop},{step})"
    hydras = [
        float(v) for v in OverridesParser.create().parse_override(f"x={swept}").sweep_iterator()
    ]
    value, count = sweep(swept, "x", None)
    assert (count, value["values"]) == (len(hydras), hydras)


@pytest.mark.parametrize("swept", ["shuffle(range(0,50))", "shuffle(1,2,3)", "shuffle(a,b)"])
def test_a_shuffled_hydra_sweep_runs_the_same_jobs(swept) -> None:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from gate.formats.hydra_sweeps import sweep

    override = OverridesParser.create().parse_override(f"x={swept}")
    hydras = sorted(str(v) for v in override.sweep_iterator())
    value, count = sweep(swept, "x", None)
    assert (count, sorted(str(v) for v in value["values"])) == (len(hydras), hydras)


@pytest.mark.parametrize("swept", ["range(stop=5)", "range(1, 10, stop=3)", "range(1, 2, 3, 4)"])
def test_hydra_arguments_hydra_refuses_are_refused(swept) -> None:
    from gate.errors import InputError
    from gate.formats.hydra_sweeps import sweep

    with pytest.raises(InputError, match="range needs start, stop"):
        sweep(swept, "x", None)


@pytest.mark.parametrize(
    ("terminate", "first"),
    [
        ("max_iter: 27, s: 2, eta: 3", 3),  # bands 9, 3
        ("max_iter: 27, s: 9, eta: 3", 1),  # bands 9, 3, 1: no band below 1
        ("max_iter: 1000000, s: 1000000000000, eta: 1.1", 1),  # computed, not looped
        ("max_iter: 27, s: 1000000000000, eta: 1", None),  # eta 1 halves nothing
        ("max_iter: 27, s: 2, eta: true", None),
        ("max_iter: .inf, s: 2, eta: 3", "max_iter: .inf is not a finite number"),
        ("max_iter: abc, s: 2, eta: 3", None),
        ("max_iter: 1" + "0" * 400 + ", s: 2, eta: 3", None),  # past any float
        ("min_iter: 3, eta: 1" + "0" * 400, None),
    ],
)
def test_wandb_hyperband_bands_from_max_iter(tmp_path, terminate, first) -> None:
    text = (RULES / "wandb-random-capped.yaml").read_text()
    text = text.replace("min_iter: 3, eta: 3", terminate)
    path = tmp_path / "sweep.yaml"
    path.write_text(text)
    evaluation = evaluate(path)
    if first is None or isinstance(first, str):
        (error,) = evaluation.result.errors
        assert (first or "early_terminate has no band W&B can stop runs at") in str(error)
        assert error.location is not None and error.location.line == 5
    else:
        assert evaluation.spec.search.scheduler.min_epochs == first


def test_wandb_parameters_that_unnest_to_one_name_are_refused(tmp_path) -> None:
    """A nested ``opt.parameters.lr`` and a key ``opt.lr`` are both W&B's ``opt.lr``."""
    text = (RULES / "wandb-random-capped.yaml").read_text()
    sweep = {
        "method": "grid",
        "metric": {"name": "val_loss", "goal": "minimize"},
        "parameters": {
            "opt": {"parameters": {"lr": {"values": [1, 2, 3, 4, 5, 6, 7, 8]}}},
            "opt.lr": {"values": [1]},
        },
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(json.dumps(sweep) + "\n" + text.splitlines()[-1] + "\n")
    (error,) = evaluate(path).result.errors
    assert str(error).startswith(
        f"{path}:1:"
    ) and "parameters: parameters.opt.parameters.lr and parameters.opt.lr are both parameter" in (
        str(error)
    )


@pytest.mark.parametrize(
    ("parameter", "message"),
    [
        ("{distribution: q_uniform, min: 0, max: 1, q: 0}", "lr: q is 0, not a step above 0"),
        ("{distribution: q_uniform, min: 0, max: 1, q: -1}", "lr: q is -1, not a step above 0"),
        ("{distribution: log_uniform, min: 0, max: 1000}", "lr: log_uniform's max 1000 is an"),
    ],
)
def test_wandb_values_that_crashed_the_reader_are_refused_at_their_line(
    tmp_path, parameter, message
) -> None:
    """Once a ZeroDivisionError or an OverflowError, reported at 1:1 in Python's words."""
    method = "grid" if "q_uniform" in parameter else "random\nrun_cap: 4"
    path = tmp_path / "sweep.yaml"
    path.write_text(
        f"method: {method}\nmetric: {{name: val_loss, goal: minimize}}\n"
        f"parameters:\n  lr: {parameter}\n"
        "# x-budget-gate: {accelerator: A100-80GB, gpus_per_trial: 1, epoch_minutes: 2, "
        "max_epochs: 27}\n"
    )
    (error,) = evaluate(path).result.errors
    assert message in str(error) and "Error" not in str(error)
    assert error.location is not None and error.location.line > 1


def test_a_skypilot_count_that_is_no_number_is_refused_at_its_line(tmp_path) -> None:
    path = tmp_path / "task.yaml"
    path.write_text(
        "name: train\nresources: {accelerators: H100:inf}\nenvs:\n"
        "  X_BUDGET_GATE_EPOCH_MINUTES: 1\nrun: python train.py --epochs 1\n"
    )
    (error,) = evaluate(path).result.errors
    assert "accelerator 'H100:inf' has no count SkyPilot reads" in str(error)
    assert error.location is not None and error.location.line == 2


SKY_TASK = """\
name: t
resources: {accelerators: A100-80GB:4}
envs: {EPOCHS: 10, X_BUDGET_GATE_EPOCH_MINUTES: 2}
"""


@pytest.mark.parametrize(
    ("extra", "said"),
    [  # what SkyPilot runs beyond the one run priced, each found silent by a red team
        ("run: python t.py --epochs 10\nservice: {readiness_probe: /, replicas: 50}\n", "service:"),
        ("run: python t.py --epochs 10\npool: {workers: 40}\n", "pool:"),
        ("run: |\n  EPOCHS+=00\n  python t.py --epochs $EPOCHS\n", "sets EPOCHS"),
        ("run: |\n  read EPOCHS <<< 1000\n  python t.py --epochs $EPOCHS\n", "sets EPOCHS"),
        (
            "run: python t.py --epochs 10\n"
            "config: {kubernetes: {pod_config: {spec: {containers: "
            "[{resources: {limits: {nvidia.com/gpu: 8}}}]}}}}\n",
            "GPUs asked for in the task's config",
        ),
        (  # the admin policy refused these at launch; check let them pass as priced
            "run: python t.py --epochs 10\n"
            "config: {kubernetes: {pod_config: {spec: {containers: "
            "[{securityContext: {privileged: true}}]}}}}\n",
            "is privileged (securityContext.privileged), which reaches every GPU of its node",
        ),
        (
            "run: python t.py --epochs 10\n"
            "config: {slurm: {sbatch_options: {gpus-per-node: 'h100:8', array: 1-100}}}\n",
            "slurm.sbatch_options gpus-per-node: 'h100:8' may ask for GPUs",
        ),
    ],
)
def test_what_a_skypilot_task_runs_beyond_the_run_priced_is_refused(tmp_path, extra, said):
    (tmp_path / "task.yaml").write_text(SKY_TASK + extra)
    result = evaluate(tmp_path / "task.yaml").result
    assert result.outcome is Outcome.INVALID, result.findings
    (error,) = result.errors
    assert said in f"{error.message} {error.hint}"


@pytest.mark.parametrize(
    ("overrides", "said"),
    [
        (
            "{kubernetes: {pod_config: {spec: {containers: [{resources: {limits: "
            "{nvidia.com/gpu: 8}}}]}}}}",
            "resources._cluster_config_overrides: nvidia.com/gpu: GPUs asked for",
        ),
        (
            "{slurm: {sbatch_options: {array: 1-100, gpus-per-node: 'h100:8'}}}",
            "resources._cluster_config_overrides: slurm.sbatch_options array",
        ),
    ],
)
def test_a_resources_config_override_is_read_as_the_tasks_config(tmp_path, overrides, said):
    """SkyPilot turns a task's ``config:`` into its resources' ``_cluster_config_overrides``:
    written there (or in an ``any_of`` candidate), 8 GPUs a pod, or a 100-job Slurm array,
    passed priced as one L4."""
    for resources in (
        f"{{accelerators: L4:1, _cluster_config_overrides: {overrides}}}",
        f"{{any_of: [{{accelerators: L4:1, _cluster_config_overrides: {overrides}}}]}}",
    ):
        text = f"name: t\nresources: {resources}\nenvs: {{X_BUDGET_GATE_EPOCH_MINUTES: 2}}\n"
        (tmp_path / "task.yaml").write_text(text + "run: python t.py --epochs 10\n")
        (error,) = evaluate(tmp_path / "task.yaml").result.errors
        assert error.message.startswith(
            said.replace("resources.", "resources.any_of.0.", 1) if "any_of" in resources else said
        ), error.message


def test_a_skypilot_command_held_in_an_env_is_refused(tmp_path):
    text = SKY_TASK.replace("envs: {EPOCHS: 10,", "envs: {TRAIN: python t.py --epochs 1000,")
    (tmp_path / "task.yaml").write_text(text + "run: $TRAIN\n")
    (error,) = evaluate(tmp_path / "task.yaml").result.errors
    assert "run runs $TRAIN, whose value holds an epochs flag" in error.message


def test_skypilot_secrets_win_over_envs_as_skypilot_applies_them(tmp_path):
    text = SKY_TASK + "secrets: {EPOCHS: 1000}\nrun: python t.py --epochs $EPOCHS\n"
    (tmp_path / "task.yaml").write_text(text)
    spec = evaluate(tmp_path / "task.yaml").spec
    assert spec is not None and spec.workload.max_epochs == 1000


@pytest.mark.parametrize(
    "command",
    [
        '[python, t.py, "--epochs=1000", "--tag=${args}"]',
        '[sh, -c, "python t.py --epochs 1000 ${args}"]',
    ],
)
def test_a_wandb_macro_the_agent_does_not_expand_overrules_no_flag(tmp_path, command):
    """The agent replaces a macro that is a whole argv element only: --epochs=1000 stands."""
    text = (
        f"method: grid\nprogram: t.py\ncommand: {command}\n"
        "parameters:\n  epochs: {values: [10]}\n"
        "# x-budget-gate:\n#   accelerator: A100-80GB\n#   gpus_per_trial: 1\n"
        "#   epoch_minutes: 2\n"
    )
    (tmp_path / "sweep.yaml").write_text(text)
    evaluation = evaluate(tmp_path / "sweep.yaml")
    assert evaluation.spec is not None, evaluation.result.errors
    assert evaluation.spec.workload.max_epochs == 1000


@pytest.mark.parametrize(
    ("launcher", "refused"),
    [
        ('    gres: "gpu:h200:1"\n', True),  # Slurm allocates an H200; A100-80GB is priced
        ('    gres: "gpu:a100:1"\n', False),  # an A100: the 80 GB one priced is the dearer
        ("    gpus_per_node: 1\n    constraint: h200\n", True),  # sbatch -C h200: an H200
        ("    gpus_per_node: 1\n    partition: gpu-h200\n", True),
        ("    gpus_per_node: 1\n    constraint: a100|ib\n", False),
        ("    gpus_per_node: 1\n    constraint: ib\n", False),  # no model: said
    ],
)
def test_a_slurm_gpu_model_is_the_accelerator_priced_or_said(tmp_path, launcher, refused):
    text = SUBMITIT_CONFIG.format(timeout="").replace("    gpus_per_node: 4\n", launcher)
    evaluation = _hydra(tmp_path, text)
    result = evaluation.result
    if refused:
        (error,) = result.errors
        key = launcher.split("\n")[-2].strip().split(":")[0]
        assert f"the trials run on hydra.launcher.{key}: h200, but the accelerator priced is" in (
            error.message
        )
        return
    assert result.outcome is not Outcome.INVALID, result.errors
    if "constraint" in launcher:
        assert any("picks the nodes" in n for n in result.imported.notes)


def test_a_step_budget_in_a_hydra_config_is_refused(tmp_path):
    """Hugging Face's Trainer runs max_steps over num_train_epochs: past the epochs priced."""
    text = (
        SUBMITIT_CONFIG.format(timeout="")
        + "training: {num_train_epochs: 1, max_steps: 10000000}\n"
    )
    result = _hydra(tmp_path, text).result
    (error,) = result.errors
    assert error.message.startswith("training.max_steps: 10000000 bounds the training by steps")


def test_a_katib_gpu_limit_merged_over_a_written_one_is_refused(tmp_path) -> None:
    """kubectl (go-yaml) lets ``<<: *gpus`` below ``nvidia.com/gpu: 1`` win: 8 GPUs a
    replica launched, 1 priced. Which one wins is the parser's call: the file is refused."""
    text = (CONFIGS / "katib/pytorchjob-mnist.gpu.yaml").read_text()
    text = text.replace("metadata:\n", 'x-gpus: &gpus {"nvidia.com/gpu": 8}\nmetadata:\n', 1)
    limit = "                        nvidia.com/gpu: 8\n"
    assert limit in text
    text = text.replace(
        limit, limit.replace("8", "1") + limit.replace("nvidia.com/gpu: 8", "<<: *gpus"), 1
    )
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    result = evaluate(path).result
    assert result.outcome is Outcome.INVALID
    assert "merged again by a << below it" in str(result.errors[0])
