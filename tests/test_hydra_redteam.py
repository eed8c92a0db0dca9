"""Red-team findings on Hydra sweeps: settings Hydra, Submitit and Optuna act on, read.

Each case is a field the real engine reads that budget-gate ignored, so a sweep of 16 nodes,
1,000 epochs or requeued trials was priced as the small one it declared. Every file goes
through ``budget-gate check``; where the engine is installed (Hydra, Submitit) its own code
shows what it would run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.test_formats_epochs import check as epochs_check
from tests.test_formats_epochs import field, only_error

INVALID = 3

SUBMITIT = """\
defaults:
  - override hydra/launcher: submitit_slurm
  - _self_
trainer:
  max_epochs: 10
lr: 0.1
hydra:
  sweeper:
    params:
      lr: 0.1,0.01,0.001,0.0001
  launcher:
    gpus_per_node: 8
    timeout_min: 60
    array_parallelism: 4
x-budget-gate:
  accelerator: A100-80GB
  epoch_minutes: 3
"""


def check(tmp_path: Path, capsys: Any, text: str, name: str = "config.yaml") -> tuple[int, Any]:
    """``budget-gate check FILE --format json`` under a policy that asks nothing more."""
    return epochs_check(tmp_path, capsys, text, name)


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


def launcher(extra: str) -> str:
    """The Submitit sweep with more lines under ``hydra.launcher``."""
    return SUBMITIT.replace("    array_parallelism: 4\n", "    array_parallelism: 4\n" + extra)


# --- 1. Submitit's additional_parameters override the launcher's own resources ---------------


def test_submitit_writes_additional_parameters_over_its_own_resources(tmp_path) -> None:
    """submitit's ``_make_sbatch_string`` updates its parameters with additional_parameters."""
    from submitit.slurm.slurm import _make_sbatch_string

    script = _make_sbatch_string(
        command="python app.py",
        folder=tmp_path,
        nodes=1,
        time=60,
        gpus_per_node=8,
        additional_parameters={"nodes": 16, "time": 6000},
    )
    assert "#SBATCH --nodes=16" in script and "#SBATCH --nodes=1\n" not in script
    assert "#SBATCH --time=6000" in script


@pytest.mark.parametrize(
    ("extra", "instead"),
    [
        ("{nodes: 16}", "hydra.launcher.nodes"),
        ("{ntasks-per-node: 8}", "hydra.launcher.tasks_per_node"),
        ("{ntasks_per_node: 8}", "hydra.launcher.tasks_per_node"),
        ("{ntasks: 128}", "hydra.launcher.tasks_per_node"),
        ("{time: 6000}", "hydra.launcher.timeout_min"),
        ("{'--time': '100:00:00'}", "hydra.launcher.timeout_min"),
        ("{array: 0-99%100}", "hydra.launcher.array_parallelism"),
        ("{exclusive: true}", "hydra.launcher.gpus_per_node"),
        ("{nodelist: 'gpu[01-16]'}", "hydra.launcher.nodes"),
        ("{gpus-per-node: 8}", "GPUs"),
        ("{time-min: 60, mystery_option: 1}", "remove it"),
        ("{export: 'ALL,NUM_EPOCHS=1000'}", "remove it"),  # the job's environment
    ],
)
def test_additional_parameters_that_may_set_resources_are_refused(
    tmp_path, capsys, extra, instead
) -> None:
    """Priced as gpus_per_node 8 × nodes 1, {nodes: 16} ran 16 nodes: 16× the GPUs."""
    text = launcher(f"    additional_parameters: {extra}\n")
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    error = only_error(result)
    assert "hydra.launcher.additional_parameters." in error["message"]
    assert instead in error["message"] + error["hint"]
    assert error["line"] == line_of(text, "additional_parameters")


def test_additional_parameters_that_set_no_resources_pass(tmp_path, capsys) -> None:
    harmless = (
        "    additional_parameters:\n"
        "      account: vision\n      qos: high\n      mail-type: END\n"
        "      mail_user: me@example.com\n      comment: sweep\n      job-name: lr\n"
        "      gpu-bind: closest\n      cpus-per-gpu: 8\n      mem: 200G\n"
    )
    code, result = check(tmp_path, capsys, launcher(harmless))
    assert code != INVALID, result["errors"]
    assert field(result, "resources.gpus_per_trial")["value"] == "8"


def test_submitit_gpus_per_task_are_multiplied_by_tasks_and_nodes(tmp_path, capsys) -> None:
    """Hydra's launcher field is tasks_per_node (Slurm's ntasks_per_node); its schema refuses
    ``ntasks_per_node`` under hydra.launcher, so the config never runs that way."""
    text = SUBMITIT.replace(
        "    gpus_per_node: 8\n", "    gpus_per_task: 2\n    tasks_per_node: 4\n    nodes: 2\n"
    )
    code, result = check(tmp_path, capsys, text)
    assert code != INVALID, result["errors"]
    assert field(result, "resources.gpus_per_trial")["value"] == "16"


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("'#SBATCH --nodes=16'", "#SBATCH"),
        ("'  #sbatch --time=6000'", "#SBATCH"),
        ("export NUM_EPOCHS=1000", "epochs"),
        # the second reader's: quoted, and set by other spellings than NAME=value
        ("'export \"EPOCHS=1000\"'", "epochs (EPOCHS)"),
        ("\"export 'MAX_EPOCHS=1000'\"", "epochs (MAX_EPOCHS)"),
        ("'printf -v EPOCHS %d 1000; export EPOCHS'", "sets EPOCHS, a variable"),
        ("'declare -x NUM_EPOCHS=1000'", "epochs (NUM_EPOCHS)"),
        ("'read EPOCHS <<< 1000'", "sets EPOCHS, a variable"),
        ("'eval \"export NUM_EPOCHS=1000\"'", "epochs (NUM_EPOCHS)"),
        ("': ${EPOCHS:=1000}'", "sets EPOCHS, a variable"),
        ("'for EPOCHS in 1000; do :; done'", "sets EPOCHS, a variable"),
        ("'typeset -x Epochs=1000'", "epochs (Epochs)"),
    ],
)
def test_setup_lines_that_set_resources_or_epochs_are_refused(tmp_path, capsys, line, said) -> None:
    """Submitit writes ``setup`` before the first command: sbatch still reads #SBATCH there."""
    from submitit.slurm.slurm import _make_sbatch_string

    script = _make_sbatch_string(
        command="python app.py", folder=tmp_path, nodes=1, setup=["#SBATCH --nodes=16"]
    )
    lines = script.splitlines()
    assert lines.index("#SBATCH --nodes=16") < min(
        i for i, text in enumerate(lines) if text and not text.startswith("#")
    )
    text = launcher(f"    setup: [{line}]\n")
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    error = only_error(result)
    assert "hydra.launcher.setup" in error["message"] and said in error["message"]
    assert error["line"] == line_of(text, "setup:")


def test_setup_lines_that_set_no_epochs_pass(tmp_path, capsys) -> None:
    """Reading a variable, setting one not named like the epochs, or a word `epochs` sets none."""
    lines = (
        "['module load cuda', 'echo $EPOCHS', 'export NCCL_DEBUG=INFO', 'cd /data/epochs_c', "
        "'echo training epochs', 'export EPOCHS']"
    )
    code, result = check(tmp_path, capsys, launcher(f"    setup: {lines}\n"))
    assert code != INVALID, result["errors"]


def test_the_shell_sets_what_the_refused_setup_lines_say(tmp_path) -> None:
    """Each spelling refused above does set the variable in the job's environment."""
    import subprocess

    for line in ('export "EPOCHS=1000"', "printf -v EPOCHS %d 1000; export EPOCHS"):
        shown = subprocess.run(
            ["bash", "-c", f"{line}; env"], capture_output=True, text=True, check=True
        ).stdout
        assert "EPOCHS=1000" in shown.splitlines(), line


# --- 2. ray_aws: the cluster the launcher brings up is not what is priced ---------------------

RAY_AWS = """\
defaults:
  - override hydra/launcher: ray_aws
  - _self_
trainer:
  max_epochs: 10
lr: 0.1
hydra:
  sweeper:
    params:
      lr: 0.1,0.01
  launcher:
    ray:
{cluster}      remote: {{num_gpus: 1}}
x-budget-gate:
  accelerator: T4
  epoch_minutes: 3
  max_concurrent_trials: 2
"""
CLUSTER = """\
      cluster:
        max_workers: 16
        available_node_types:
          ray.worker.default:
            min_workers: 16
            max_workers: 16
            resources: {GPU: 8}
            node_config: {InstanceType: p4de.24xlarge}
"""


def test_a_ray_aws_cluster_is_refused_not_priced_as_the_declared_gpus(tmp_path, capsys) -> None:
    """16 p4de workers were priced as one T4 per job."""
    text = RAY_AWS.format(cluster=CLUSTER)
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    error = only_error(result)
    assert "hydra.launcher.ray.cluster" in error["message"]
    assert "SkyPilot" in error["hint"]
    assert error["line"] == line_of(text, "cluster:")


def test_ray_aws_without_a_cluster_of_its_own_still_reads_num_gpus(tmp_path, capsys) -> None:
    code, result = check(tmp_path, capsys, RAY_AWS.format(cluster=""))
    assert code != INVALID, result["errors"]
    assert field(result, "resources.gpus_per_trial")["value"] == "1"


# --- 3. every option a sweep names for a config group is read --------------------------------

GROUPED = """\
defaults:
  - {entry}
  - _self_
trainer:
  max_epochs: 10
hydra:
  sweeper:
    params:
      {swept}: small,large
x-budget-gate:
  accelerator: A100-80GB
  gpus_per_trial: 1
  epoch_minutes: 3
"""


def _groups(tmp_path: Path, large: str = "width: 4096\nnum_epochs: 1000\n") -> None:
    (tmp_path / "model").mkdir(exist_ok=True)
    (tmp_path / "model" / "small.yaml").write_text("width: 64\n")
    (tmp_path / "model" / "large.yaml").write_text(large)


def test_hydra_runs_each_option_the_sweep_names(tmp_path) -> None:
    """``model=large`` of the sweep composes model/large.yaml: 1,000 epochs."""
    from hydra import compose, initialize_config_dir

    _groups(tmp_path)
    (tmp_path / "config.yaml").write_text(GROUPED.format(entry="model: small", swept="model"))
    with initialize_config_dir(str(tmp_path), version_base=None):
        assert compose("config", overrides=["model=large"]).model.num_epochs == 1000


@pytest.mark.parametrize(("entry", "swept"), [("model: small", "model"), ("model: large", "model")])
def test_a_swept_group_option_that_sets_more_epochs_is_refused(
    tmp_path, capsys, entry, swept
) -> None:
    _groups(tmp_path)
    code, result = check(tmp_path, capsys, GROUPED.format(entry=entry, swept=swept))
    assert code == INVALID
    error = only_error(result)
    assert error["message"].startswith("model: large")
    assert "in the defaults list sets model.num_epochs" in error["message"]
    assert error["file"].endswith("large.yaml")


def test_a_group_the_sweep_appends_is_read_too(tmp_path, capsys) -> None:
    """``+model: small,large`` adds the group to the defaults list for each job."""
    _groups(tmp_path)
    text = GROUPED.format(entry="_self_", swept="+model").replace("  - _self_\n  - _self_\n", "")
    text = text.replace("defaults:\n", "")
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    assert "sets model.num_epochs" in only_error(result)["message"]


def test_swept_group_options_that_set_no_epochs_pass(tmp_path, capsys) -> None:
    _groups(tmp_path, large="width: 4096\n")
    code, result = check(tmp_path, capsys, GROUPED.format(entry="model: small", swept="model"))
    assert code != INVALID, result["errors"]
    assert field(result, "workload.max_epochs")["value"] == "10"


# --- 4. Optuna's search_space and custom_search_space ----------------------------------------

OPTUNA = """\
defaults:
  - override hydra/sweeper: optuna
  - _self_
trainer:
  max_epochs: 10
lr: 0.1
hydra:
  sweeper:
    n_trials: 20
    n_jobs: 1
{space}x-budget-gate:
  accelerator: A100-80GB
  gpus_per_trial: 1
  epoch_minutes: 3
"""


@pytest.mark.parametrize(
    ("space", "key"),
    [
        (
            "    search_space:\n      trainer.max_epochs: {type: int, low: 10, high: 1000}\n",
            "search_space",
        ),
        (
            "    custom_search_space: my_app.search.configure\n"
            "    params:\n      lr: interval(0.001, 0.1)\n",
            "custom_search_space",
        ),
    ],
)
def test_optuna_search_spaces_budget_gate_cannot_read_are_refused(
    tmp_path, capsys, space, key
) -> None:
    """hydra-optuna-sweeper 1.2 draws from ``search_space`` when params is unset, and calls
    ``custom_search_space`` on every trial: 1,000 epochs were priced as 10."""
    text = OPTUNA.format(space=space)
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    error = only_error(result)
    assert f"hydra.sweeper.{key}" in error["message"]
    assert "hydra.sweeper.params" in error["hint"]
    assert error["line"] == line_of(text, f"{key}:")


def test_optuna_params_alone_still_read(tmp_path, capsys) -> None:
    text = OPTUNA.format(space="    params:\n      lr: interval(0.001, 0.1)\n")
    code, result = check(tmp_path, capsys, text)
    assert code != INVALID, result["errors"]


def test_optunas_integer_interval_is_read_its_top_the_epochs(tmp_path, capsys) -> None:
    """``int(interval(16, 256))`` is the Optuna sweeper's documented integer range (its own
    examples use it): refused as a cast; an epochs range written so trains its top."""
    space = "    params:\n      batch: int(interval(16, 256))\n      trainer.max_epochs: "
    text = OPTUNA.format(space=space + "int(interval(5.0, 20.0))\n")
    code, result = check(tmp_path, capsys, text.replace("  max_epochs: 10\n", "  max_epochs: 5\n"))
    assert code != INVALID, result["errors"]
    assert field(result, "workload.max_epochs")["value"] == "20"
    code, result = check(tmp_path, capsys, OPTUNA.format(space=space + "str(interval(5, 20))\n"))
    assert code == INVALID  # another cast is still refused


# --- 5. hydra.job.env_set hands the job its environment ---------------------------------------

ENV = """\
trainer:
  max_epochs: 10
lr: 0.1
hydra:
  job:
{job}  sweeper:
    params:
      lr: 0.1,0.01
x-budget-gate:
  accelerator: A100-80GB
  gpus_per_trial: 1
  epoch_minutes: 3
"""


def test_hydra_sets_env_set_in_the_jobs_environment(tmp_path) -> None:
    from hydra import compose, initialize_config_dir

    (tmp_path / "config.yaml").write_text(ENV.format(job="    env_set: {NUM_EPOCHS: 1000}\n"))
    with initialize_config_dir(str(tmp_path), version_base=None):
        cfg = compose("config", return_hydra_config=True)
    assert cfg.hydra.job.env_set.NUM_EPOCHS == "1000"  # Dict[str, str]: the int as text


@pytest.mark.parametrize("value", ['"1000"', "1000", "'${total}'"])
def test_epochs_env_set_hands_the_job_count(tmp_path, capsys, value) -> None:
    text = ENV.format(job=f"    env_set:\n      NUM_EPOCHS: {value}\n") + "total: 1000\n"
    code, result = check(tmp_path, capsys, text)
    assert code != INVALID, result["errors"]
    epochs = field(result, "workload.max_epochs")
    assert epochs["value"] == "1000"
    assert "hydra.job.env_set.NUM_EPOCHS" in epochs["detail"]


@pytest.mark.parametrize(
    ("job", "said"),
    [
        ("    env_set: {EPOCHS: all}\n", "hydra.job.env_set.EPOCHS"),
        ("    env_copy: [NUM_EPOCHS]\n", "hydra.job.env_copy"),
    ],
)
def test_epochs_env_the_file_does_not_give_is_refused(tmp_path, capsys, job, said) -> None:
    code, result = check(tmp_path, capsys, ENV.format(job=job))
    assert code == INVALID
    assert said in only_error(result)["message"]


def test_epochs_a_ray_task_gets_in_its_runtime_env_count(tmp_path, capsys) -> None:
    """The Ray launcher hands ``ray.remote`` to ``ray.remote()``: its runtime_env's env_vars
    are the task's environment."""
    text = RAY_AWS.format(cluster="").replace("ray_aws", "ray")
    text = text.replace(
        "remote: {num_gpus: 1}", "remote: {num_gpus: 1, runtime_env: {env_vars: {EPOCHS: '500'}}}"
    )
    code, result = check(tmp_path, capsys, text)
    assert code != INVALID, result["errors"]
    assert field(result, "workload.max_epochs")["value"] == "500"


def test_env_set_not_named_like_the_epochs_counts_nothing(tmp_path, capsys) -> None:
    job = "    env_set: {WARMUP_EPOCHS: 1000, OMP_NUM_THREADS: 8}\n    env_copy: [HOME]\n"
    code, result = check(tmp_path, capsys, ENV.format(job=job))
    assert code != INVALID, result["errors"]
    assert field(result, "workload.max_epochs")["value"] == "10"


# --- 6. Submitit requeues a timed-out job max_num_timeout times -------------------------------


def test_the_launchers_max_num_timeout_default_is_no_requeue() -> None:
    from hydra_plugins.hydra_submitit_launcher.config import SlurmQueueConf

    from gate.formats.hydra_launchers import SUBMITIT_MAX_NUM_TIMEOUT

    assert SlurmQueueConf.max_num_timeout == SUBMITIT_MAX_NUM_TIMEOUT == 0


def test_requeues_on_timeout_lengthen_the_stop(tmp_path, capsys) -> None:
    """timeout_min 60 with 1,000 requeues is no 1 h stop: 1,001 h at most."""
    text = launcher("    max_num_timeout: 1000\n").replace("max_epochs: 10", "max_epochs: 1000")
    code, result = check(tmp_path, capsys, text)
    assert code != INVALID, result["errors"]
    stop = field(result, "stopping.max_trial_hours")
    assert float(stop["value"]) == 1001
    assert "max_num_timeout 1000" in stop["detail"]
    assert any("max_num_timeout" in note for note in result["imported"]["notes"])
    assert result["estimate"]["worst"]["epochs_per_trial"] == 1000  # 50 h of epochs, not 20


def test_no_requeue_keeps_the_timeout_as_the_stop(tmp_path, capsys) -> None:
    code, result = check(tmp_path, capsys, launcher("    max_num_timeout: 0\n"))
    assert code != INVALID, result["errors"]
    assert float(field(result, "stopping.max_trial_hours")["value"]) == 1


@pytest.mark.parametrize(
    ("timeout", "hours"),
    [('"6000"', 100.0), ("0", None)],  # Hydra casts "6000" to 6000
)
def test_a_timeout_is_read_as_hydra_casts_it_and_zero_is_no_limit(
    tmp_path, capsys, timeout, hours
) -> None:
    """``timeout_min: "6000"`` was priced as the default 60; Slurm's ``--time=0`` is no limit."""
    text = SUBMITIT.replace("timeout_min: 60", f"timeout_min: {timeout}")
    code, result = check(tmp_path, capsys, text)
    if hours is None:
        assert code == INVALID
        assert (
            "timeout_min is 0, which Slurm takes as no time limit" in only_error(result)["message"]
        )
        return
    assert code != INVALID, result["errors"]
    assert float(field(result, "stopping.max_trial_hours")["value"]) == hours
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(str(tmp_path), version_base=None):
        cfg = compose("config", return_hydra_config=True)
    assert cfg.hydra.launcher.timeout_min == hours * 60


def test_epochs_written_1e3_are_a_thousand_as_omegaconf_reads_them(tmp_path, capsys) -> None:
    """PyYAML reads a plain 1e3 as text, so it was no epochs at all; OmegaConf reads 1000.0."""
    from omegaconf import OmegaConf

    text = SUBMITIT.replace("  max_epochs: 10", "  max_epochs: 1e3").replace(
        "x-budget-gate:\n", "x-budget-gate:\n  max_epochs: 10\n"
    )
    (tmp_path / "conf.yaml").write_text(text)
    assert OmegaConf.load(tmp_path / "conf.yaml").trainer.max_epochs == 1000.0
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    assert "the engine runs 1000 (trainer.max_epochs)" in only_error(result)["message"]


# --- 7. the keyword forms of Hydra's sweep functions -----------------------------------------


def hydra_jobs(text: str) -> int | None:
    """The jobs Hydra's own OverridesParser makes of ``x=text``; None where it refuses it."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        override = OverridesParser.create().parse_override(f"x={text}")
        return len(list(override.sweep_iterator())) if override.is_sweep_override() else 1
    except Exception:  # NOTE: any refusal of Hydra's: nothing runs
        return None


def gate_jobs(text: str) -> int | None:
    """The jobs budget-gate counts; None where it refuses the sweep (exit 3)."""
    from gate.errors import InputError
    from gate.formats.hydra_sweeps import sweep

    try:
        return sweep(text, "x", None)[1]
    except InputError:
        return None


COUNTED = [
    ("shuffle(sweep=range(1,1000))", 999),
    ("tag(a, sweep=range(1,1000))", 999),
    ("shuffle(range(1,3), sweep=range(1,5))", 4),
    ("shuffle(sweep=choice(1,2))", 2),
    ("tag(log, sweep=shuffle(sweep=range(0, 10, step=2)))", 5),
    ("range(start=1, stop=5)", 4),
    ("range(1, stop=10, step=3)", 3),
    ("shuffle(1,2,3)", 3),
    ("shuffle(list=[1,2,3])", 1),  # a list, shuffled: one job's value
    ("shuffle(sweep=range(1,3), list=[1])", 1),
    ("range (1,4)", 3),
    ("a\\,b", 1),
    ("'a,b'", 1),
    ("${a.b},2", 2),
    ("{a: 1, b: 2},3", 2),
    ("range(1_000)", 1000),
]
REFUSED = [
    "choice(list=[1,2])",  # Hydra: an unexpected keyword
    "tag(a, sweep=range(1,3), sweep=range(1,9))",
    "choice(a, foo(1))",  # an unknown function, never one literal value
    "foo(1)",
    "[foo(1)]",
    "x(1)y",
    "a=b",
    "range(stop=5)",
    "1,range(1,1000)",  # Hydra runs the range as one job's value: refused, not read
    "sort(sweep=range(1,5))",  # Hydra's own, which budget-gate does not read
]


@pytest.mark.parametrize(("text", "jobs"), COUNTED)
def test_sweep_functions_keyword_forms_count_hydras_jobs(text, jobs) -> None:
    """``shuffle(sweep=range(1,1000))`` was one literal value: Hydra runs 999 jobs."""
    assert hydra_jobs(text) == jobs
    assert gate_jobs(text) == jobs


@pytest.mark.parametrize("text", REFUSED)
def test_a_sweep_budget_gate_cannot_read_is_refused_not_one_value(text) -> None:
    assert gate_jobs(text) is None


def _sweeps() -> Any:
    """Override values of Hydra's grammar, keyword forms of its sweep functions among them."""
    from hypothesis import strategies as st

    number = st.integers(-3, 40).map(str)
    plain = st.one_of(
        number,
        st.sampled_from(["a", "log", "'q,r'", "${a.b}", "x y"]),
        st.lists(number, max_size=3).map(lambda v: "[" + ",".join(v) + "]"),
    )
    bounds = st.tuples(number, number, st.integers(1, 4))
    ranges = bounds.map(
        lambda b: [
            f"range({b[0]},{b[1]})",
            f"range(start={b[0]}, stop={b[1]})",
            f"range({b[0]}, stop={b[1]}, step={b[2]})",
            f"range({b[1]})",
        ][b[2] - 1]
    )
    choices = st.lists(plain, min_size=1, max_size=4).map(lambda v: f"choice({', '.join(v)})")
    sweeps = st.deferred(
        lambda: st.one_of(
            ranges,
            choices,
            sweeps.map(lambda s: f"shuffle(sweep={s})"),
            sweeps.map(lambda s: f"shuffle({s})"),
            sweeps.map(lambda s: f"tag(log, {s})"),
            sweeps.map(lambda s: f"tag(a, sweep={s})"),
        )
    )
    return st.one_of(
        sweeps,
        plain,
        st.lists(plain, min_size=2, max_size=4).map(",".join),
        st.lists(plain, min_size=1, max_size=3).map(lambda v: f"shuffle(list=[{','.join(v)}])"),
        st.lists(plain, min_size=2, max_size=3).map(lambda v: f"shuffle({','.join(v)})"),
    )


def test_sweeps_count_as_hydras_parser_counts_or_are_refused() -> None:
    """Differential: budget-gate counts Hydra's jobs, or refuses; never fewer, never one."""
    from hypothesis import given, settings

    @settings(max_examples=300, deadline=None)
    @given(_sweeps())
    def agree(text: str) -> None:
        jobs = hydra_jobs(text)
        if jobs is not None:
            assert gate_jobs(text) == jobs, text

    agree()


# --- 8. an epochs value written as text, or infinite ------------------------------------------


@pytest.mark.parametrize("value", ['"1000"', "'1e3'", '" 1_000 "'])
def test_epochs_written_as_text_count_as_the_number_they_spell(tmp_path, capsys, value) -> None:
    """A structured config casts ``max_epochs: "1000"`` to 1000; it was read as no epochs."""
    text = SUBMITIT.replace("  max_epochs: 10", f"  max_epochs: {value}").replace(
        "x-budget-gate:\n", "x-budget-gate:\n  max_epochs: 10\n"
    )
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    assert "the engine runs 1000 (trainer.max_epochs)" in only_error(result)["message"]


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("max_epochs", '"many"', "text that is no number"),
        ("max_epochs", "1e999", "not a number of epochs"),
        ("max_epochs", "'inf'", "not a number of epochs"),
        ("n_epochs", '"lots"', "text that is no number"),
    ],
)
def test_epochs_that_say_no_count_are_refused_at_their_line(
    tmp_path, capsys, key, value, said
) -> None:
    """``max_epochs: 1e999`` was refused at 1:1 as saying no epochs: point at its own line."""
    text = SUBMITIT.replace("  max_epochs: 10", f"  {key}: {value}")
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    error = only_error(result)
    assert said in error["message"], error
    assert error["line"] == line_of(text, f"{key}: {value}")


# --- 9. values the grammar runs out of, or nests past reading --------------------------------


@pytest.mark.parametrize("text", ["", " "])
def test_an_empty_sweep_value_is_hydras_one_empty_job(text) -> None:
    """``wd: ''`` recursed for ever (the end of the text read as ``[``): Hydra runs one job."""
    assert hydra_jobs(text) == 1
    assert gate_jobs(text) == 1


@pytest.mark.parametrize(
    "text", ["0.1,0.01,", "choice(1,", "a,", "[1,", "{a:", "{a: 1,", "range(1,", "shuffle(sweep="]
)
def test_a_value_cut_short_is_refused_as_hydra_refuses_it(text) -> None:
    """A trailing comma or a cut call crashed budget-gate (RecursionError, exit 70)."""
    assert hydra_jobs(text) is None
    assert gate_jobs(text) is None


@pytest.mark.parametrize("text", ["[" * 2000 + "]" * 2000, "{a:" * 1000 + "1" + "}" * 1000])
def test_a_value_nested_past_reading_is_refused_not_a_crash(tmp_path, capsys, text) -> None:
    assert gate_jobs(text) is None
    sweep = SUBMITIT.replace("lr: 0.1,0.01,0.001,0.0001", f"wd: '{text}'")
    code, result = check(tmp_path, capsys, sweep)
    assert code == INVALID
    assert "nests" in only_error(result)["message"]


# --- 10. a swept epochs value that is no count -----------------------------------------------


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("'5,null'", "is null: no bound on the epochs"),
        ("'null'", "is null: no bound on the epochs"),
        ("'5,-1'", "Lightning's -1 trains for ever"),
        ("'${oc.env:EPOCHS}'", "an interpolation budget-gate does not resolve"),
        ("inf", "not a number of epochs"),
        ("lots", "text that is no number"),
        ("'interval(1, inf)'", "not a number of epochs"),
    ],
)
def test_swept_epochs_that_say_no_count_are_refused_at_the_param(
    tmp_path, capsys, value, said
) -> None:
    """``trainer.max_epochs: 5,null`` was priced at 5, ``lots`` at the base 10."""
    text = SUBMITIT.replace(
        "      lr: 0.1,0.01,0.001,0.0001\n",
        f"      lr: 0.1,0.01,0.001,0.0001\n      trainer.max_epochs: {value}\n",
    )
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    error = only_error(result)
    assert said in error["message"], error
    assert error["line"] == line_of(text, "trainer.max_epochs: " + value)


# --- 11. a sweep of the epochs key's parent, or its deletion ---------------------------------


@pytest.mark.parametrize(
    "param",
    [
        "trainer: '{max_epochs: 1000}'",
        "trainer: '{max_epochs: 10},{max_epochs: 1000}'",
        "++trainer: '{max_epochs: 1000, devices: 1}'",
        "trainer: 'choice({max_epochs: 10}, {max_epochs: 1000})'",
    ],
)
def test_epochs_inside_a_swept_dict_count(tmp_path, capsys, param) -> None:
    """Hydra merges ``trainer: {max_epochs: 1000}`` over the config: priced at the base 10."""
    text = SUBMITIT.replace(
        "      lr: 0.1,0.01,0.001,0.0001\n", f"      lr: 0.1,0.01,0.001,0.0001\n      {param}\n"
    ).replace("x-budget-gate:\n", "x-budget-gate:\n  max_epochs: 10\n")
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    assert "the engine runs 1000 (trainer.max_epochs in" in only_error(result)["message"]


def test_hydra_composes_the_swept_dict_into_the_epochs_key(tmp_path) -> None:
    from hydra import compose, initialize_config_dir

    (tmp_path / "config.yaml").write_text("trainer:\n  max_epochs: 10\n")
    with initialize_config_dir(config_dir=str(tmp_path), version_base=None):
        assert compose("config", ["trainer={max_epochs: 1000}"]).trainer.max_epochs == 1000
        assert "max_epochs" not in compose("config", ["~trainer.max_epochs=10"]).trainer


@pytest.mark.parametrize("param", ["~trainer.max_epochs: 10", "~trainer: null"])
def test_deleting_the_epochs_key_in_a_sweep_is_refused(tmp_path, capsys, param) -> None:
    """``~trainer.max_epochs`` drops the key: Lightning's default 1,000 epochs then apply."""
    text = SUBMITIT.replace(
        "      lr: 0.1,0.01,0.001,0.0001\n", f"      lr: 0.1,0.01,0.001,0.0001\n      {param}\n"
    )
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    error = only_error(result)
    assert "deletes trainer" in error["message"], error
    assert error["line"] == line_of(text, param)


# --- 12. setup lines that train in a loop, compute a name, or edit the config ----------------


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("'for i in $(seq 100); do python train.py; done'", "for"),
        ("'while true; do python train.py; done'", "while"),
        ("'export ${X:-EPOCHS}=1000'", "whose name the shell computes"),
        ("'E=EPOCHS; export $E=1000'", "whose name the shell computes"),
        ("'export EPOCH{S,}=1000'", "whose name the shell computes"),
        ("'declare -x \"$E\"=1000'", "whose name the shell computes"),
        ("\"sed -i 's/max_epochs: 10/max_epochs: 1000/' conf/config.yaml\"", "sed -i"),
        ("\"sed -Ei.bak 's/10/1000/' /tmp/x.txt\"", "sed -i"),
        ("'echo \"max_epochs: 1000\" >> conf/config.yaml'", "writes conf/config.yaml"),
        ("'echo x | tee conf/trainer/big.yaml'", "writes conf/trainer/big.yaml"),
        ("'cp /shared/big.yaml conf/'", "writes /shared/big.yaml"),  # into a folder
        ("'mv /tmp/big.yaml conf/trainer/'", "writes /tmp/big.yaml"),
    ],
)
def test_setup_lines_budget_gate_cannot_follow_are_refused(tmp_path, capsys, line, said) -> None:
    """Each passed: a loop of training (SkyPilot refuses it), a computed name, a config edit."""
    text = launcher(f"    setup: [{line}]\n")
    code, result = check(tmp_path, capsys, text)
    assert code == INVALID
    error = only_error(result)
    assert "hydra.launcher.setup" in error["message"] and said in error["message"], error
    assert error["line"] == line_of(text, "setup:")


def test_the_shell_sets_the_computed_names(tmp_path) -> None:
    import subprocess

    for line in ["export ${X:-EPOCHS}=1000", "E=EPOCHS; export $E=1000"]:
        shown = subprocess.run(
            ["bash", "-c", f"{line}; env"], capture_output=True, text=True, check=True
        ).stdout
        assert "EPOCHS=1000" in shown.splitlines(), line


def test_setup_lines_that_edit_nothing_the_job_reads_pass(tmp_path, capsys) -> None:
    lines = (
        "['export PATH=$PATH:/opt/bin', 'echo start > log.txt', 'cat conf/config.yaml', "
        "'export CUDA_VISIBLE_DEVICES=${SLURM_LOCALID}', 'pip install -r requirements.txt']"
    )
    code, result = check(tmp_path, capsys, launcher(f"    setup: {lines}\n"))
    assert code != INVALID, result["errors"]
