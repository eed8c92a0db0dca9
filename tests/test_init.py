"""Adopting budget-gate in another repository: init, the pre-commit hook, ``--fail-on``.

The end-to-end test builds the wheel from this checkout, installs it (no dependencies: they
come from the test environment) into a folder of its own, and drives the installed console
script in a fresh git repository, as a new user would: ``init``, ``check``, ``pre-commit run``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gate.cli import main
from gate.commands.init import planned_files
from tests.conftest import ROOT

APPROVAL = ROOT / "examples" / "llm-finetune-grid.yaml"  # needs approval (BG110)
VIOLATION = ROOT / "examples" / "imagenet-bruteforce.yaml"  # breaks policy


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment whose ``budget-gate`` is the wheel built from this checkout."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "src"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(".venv", ".git", "*.egg-info", "build", "__pycache__"),
    )
    build = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(work / "dist"),
            str(source),
        ],
        work,
        dict(os.environ),
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = (work / "dist").glob("budget_gate-*.whl")
    target = work / "site"
    install = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        work,
        dict(os.environ),
    )
    assert install.returncode == 0, install.stderr
    env = dict(os.environ)
    env["PYTHONPATH"] = str(target)
    env["PATH"] = f"{target / 'bin'}{os.pathsep}{env['PATH']}"
    env["PRE_COMMIT_HOME"] = str(work / "pre-commit-home")
    env.pop("MLFLOW_TRACKING_URI", None)
    return env


def _git_repo(path: Path, env: dict[str, str]) -> None:
    for cmd in (
        ["git", "init", "-q"],
        ["git", "config", "user.email", "dev@example.com"],
        ["git", "config", "user.name", "dev"],
    ):
        assert _run(cmd, path, env).returncode == 0


def test_wheel_init_check_and_pre_commit_in_an_empty_git_repository(installed, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git_repo(repo, installed)

    which = _run([sys.executable, "-c", "import gate, sys; print(gate.__file__)"], repo, installed)
    assert which.stdout.startswith(installed["PYTHONPATH"]), which.stdout  # the wheel, not ROOT

    init = _run(["budget-gate", "init"], repo, installed)
    assert init.returncode == 0, init.stderr
    signing = ["policies/allowed_signers", ".budget-gate/ci-signing-key", ".budget-gate/.gitignore"]
    assert sorted(
        p.relative_to(repo).as_posix()
        for p in repo.rglob("*")
        if p.is_file() and ".git/" not in p.as_posix()
    ) == sorted([*planned_files(), *signing, ".gitignore"])
    signers = (repo / "policies/allowed_signers").read_text()
    assert "\nbudget-gate-ci ssh-ed25519 AAAA" in signers  # a new CI key, listed …
    key = repo / ".budget-gate/ci-signing-key"
    assert key.stat().st_mode & 0o077 == 0 and "PRIVATE KEY" in key.read_text()  # … its half
    ignored = _run(["git", "check-ignore", str(key)], repo, installed)
    assert ignored.returncode == 0  # never committed by accident
    assert "gh secret set BUDGET_GATE_SIGNING_KEY" in init.stderr

    check = _run(["budget-gate", "check", "experiments/"], repo, installed)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "experiments/sample.yaml" in check.stdout and "→ pass" in check.stdout
    # the policy fixtures init wrote pass at once, from the root and from a subdirectory
    fixtures = _run(["budget-gate", "policy", "test"], repo, installed)
    assert fixtures.returncode == 0, fixtures.stdout + fixtures.stderr
    assert _run(["budget-gate", "policy", "test"], repo / "experiments", installed).returncode == 0
    # the local ledger is never committed by accident
    assert _run(["git", "check-ignore", "mlflow.db"], repo, installed).returncode == 0
    assert "wrote mlflow.db to" in init.stderr

    assert _run(["git", "add", "-A"], repo, installed).returncode == 0
    hook = _run([sys.executable, "-m", "pre_commit", "run", "--all-files"], repo, installed)
    assert hook.returncode == 0, hook.stdout + hook.stderr
    assert "budget-gate" in hook.stdout and "Passed" in hook.stdout

    # init lists teams (none yet): a spec of a team the policies do not know fails the hook
    shutil.copy(APPROVAL, repo / "experiments" / "needs-approval.yaml")
    assert _run(["git", "add", "-A"], repo, installed).returncode == 0
    unknown = _run([sys.executable, "-m", "pre_commit", "run", "--all-files"], repo, installed)
    assert unknown.returncode == 1 and "BG203 team 'nlp'" in unknown.stdout, unknown.stdout
    policy = repo / "policies" / "default.yaml"
    text = policy.read_text()
    assert "\nteams: []\n" in text
    policy.write_text(text.replace("\nteams: []\n", "\nteams: [nlp, vision]\n"))
    # a spec that only waits for approval passes the hook; one that breaks policy fails it
    assert _run(["git", "add", "-A"], repo, installed).returncode == 0
    waiting = _run([sys.executable, "-m", "pre_commit", "run", "--all-files"], repo, installed)
    assert waiting.returncode == 0, waiting.stdout
    shutil.copy(VIOLATION, repo / "experiments" / "too-big.yaml")
    assert _run(["git", "add", "-A"], repo, installed).returncode == 0
    failing = _run([sys.executable, "-m", "pre_commit", "run", "--all-files"], repo, installed)
    assert failing.returncode == 1, failing.stdout
    assert "too-big.yaml" in failing.stdout and "Failed" in failing.stdout


def test_init_refuses_to_overwrite_and_writes_nothing(tmp_path, capsys):
    (tmp_path / ".pre-commit-config.yaml").write_text("repos: []\n")
    assert main(["init", "--dir", str(tmp_path)]) == 3
    err = capsys.readouterr().err
    assert ".pre-commit-config.yaml already exists; init never overwrites" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == [".pre-commit-config.yaml"]
    assert (tmp_path / ".pre-commit-config.yaml").read_text() == "repos: []\n"


def test_init_skip_existing_writes_only_what_is_missing(tmp_path, capsys):
    """A repository with its own pre-commit config (and, here, a signers file) had no way
    to get the rest: init wrote nothing and pointed to a docs page a pip user lacks."""
    (tmp_path / ".pre-commit-config.yaml").write_text("repos: []\n")
    assert main(["init", "--dir", str(tmp_path)]) == 3
    assert "pass --skip-existing to write only the files that are missing" in (
        capsys.readouterr().err
    )
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "allowed_signers").write_text("# ours\n")
    assert main(["init", "--dir", str(tmp_path), "--skip-existing"]) == 0
    err = capsys.readouterr().err
    assert (tmp_path / ".pre-commit-config.yaml").read_text() == "repos: []\n"
    assert (tmp_path / "policies" / "allowed_signers").read_text() == "# ours\n"
    assert f"kept {tmp_path / '.pre-commit-config.yaml'} (it exists; --skip-existing)" in err
    assert (tmp_path / "policies" / "default.yaml").is_file()
    assert (tmp_path / "experiments" / "sample.yaml").is_file()
    assert not (tmp_path / ".budget-gate").exists()  # no CI key beside signers it is not in
    assert "ssh-keygen was not found" not in err


def test_init_takes_a_broken_link_for_a_file_it_will_not_overwrite(tmp_path, capsys):
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "default.yaml").symlink_to("nowhere.yaml")
    assert main(["init", "--dir", str(tmp_path)]) == 3
    assert "default.yaml already exists; init never overwrites" in capsys.readouterr().err
    assert not (tmp_path / "policies" / "nowhere.yaml").exists()


def test_init_where_a_path_is_out_of_reach_is_bad_input(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    (tmp_path / "policies").symlink_to(locked)
    locked.chmod(0)
    try:
        code = main(["init", "--dir", str(tmp_path)])
    finally:
        locked.chmod(0o755)
    err = capsys.readouterr().err
    assert code == 3 and "policies is a symbolic link: init writes only into the repository" in err
    assert list(locked.iterdir()) == []  # nothing went through the link, root or not


def test_init_writes_nothing_through_a_link_or_where_a_file_blocks_a_folder(tmp_path, capsys):
    """A linked ``policies`` took the policies outside the repository (a linked
    ``.budget-gate`` the CI key); a file named ``.budget-gate`` left half the files written."""
    outside = tmp_path / "outside"
    outside.mkdir()
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".gitignore").symlink_to(outside / "gi")
    assert main(["init", "--dir", str(repo)]) == 3
    assert ".gitignore is a symbolic link" in capsys.readouterr().err
    (repo / ".gitignore").unlink()
    (repo / ".budget-gate").write_text("mine\n")
    code = main(["init", "--dir", str(repo)])
    err = capsys.readouterr().err
    if "ssh-keygen" in err:  # NOTE: no ssh-keygen: no CI key, so no .budget-gate folder
        return
    assert code == 3 and ".budget-gate is a file where init needs a folder" in err
    assert sorted(p.name for p in repo.iterdir()) == [".budget-gate"]
    assert list(outside.iterdir()) == []


def test_init_leaves_a_git_email_that_is_a_signers_pattern_out(tmp_path, capsys, monkeypatch):
    """``dev@corp,*`` in allowed_signers lets the developer's key sign as budget-gate-ci."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519.pub").write_text(
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHxQ3aRVKEn1 dev@corp\n"
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "gitconfig"))
    (home / "gitconfig").write_text("[user]\n\temail = dev@corp,*\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".gitignore").write_bytes(b"# caf\xe9\n*.pyc\n")  # Latin-1: init failed on it
    assert main(["init", "--dir", str(repo)]) == 0
    err = capsys.readouterr().err
    signers = repo / "policies" / "allowed_signers"
    if signers.exists():
        assert "dev@corp" not in signers.read_text()
        assert "'dev@corp,*' is a pattern there, not a name" in err  # left out aloud
    assert (repo / ".gitignore").read_bytes().startswith(b"# caf\xe9\n*.pyc\n")
    assert b"/mlflow.db" in (repo / ".gitignore").read_bytes()


def test_init_with_an_empty_dir_writes_nothing(tmp_path, capsys, monkeypatch):
    """``--dir ''`` (an unset variable in a script) is refused, not read as the current one."""
    monkeypatch.chdir(tmp_path)
    assert main(["init", "--dir", ""]) == 3
    assert "--dir is empty — name the repository root, e.g. --dir ." in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_init_output_loads_and_validates(tmp_path, capsys):
    assert main(["init", "--dir", str(tmp_path)]) == 0
    assert (
        main(["check", "--policy-dir", str(tmp_path / "policies"), str(tmp_path / "experiments")])
        == 0
    )
    config = yaml.safe_load((tmp_path / ".pre-commit-config.yaml").read_text())
    assert config["repos"][0]["hooks"][0]["entry"] == "budget-gate check --fail-on error"
    workflow = (tmp_path / ".github/workflows/budget-gate.yml").read_text()
    assert "uses: budget-gate/budget-gate@" in workflow


@pytest.mark.parametrize("page", ["README.md", "docs/github-action.md"])
def test_the_documented_workflow_is_the_one_init_writes(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    snippet = text.split("<!-- workflow:start -->\n```yaml\n", 1)[1].split("```\n", 1)[0]
    assert snippet == planned_files()[".github/workflows/budget-gate.yml"]


def test_the_repository_pre_commit_hook_manifest_is_valid():
    from pre_commit.clientlib import load_manifest

    (hook,) = load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))
    assert hook["id"] == "budget-gate"
    assert hook["entry"] == "budget-gate check --fail-on error"
    assert hook["language"] == "python"


@pytest.mark.parametrize(
    ("fail_on", "approval", "violation"),
    [("error", 0, 1), ("approval", 2, 1), ("warn", 2, 1)],
)
def test_fail_on_chooses_what_fails(fail_on, approval, violation, capsys):
    assert main(["check", "--fail-on", fail_on, str(APPROVAL)]) == approval
    assert main(["check", "--fail-on", fail_on, str(VIOLATION)]) == violation


def test_fail_on_refuses_unknown_values_and_mixing_with_fail_on_warn(capsys):
    assert main(["check", "--fail-on", "bogus", str(APPROVAL)]) == 3
    assert "invalid choice: 'bogus'" in capsys.readouterr().err
    assert main(["check", "--fail-on", "error", "--fail-on-warn", str(APPROVAL)]) == 3


def test_check_without_policies_uses_the_built_in_default_and_says_so(tmp_path):
    spec = tmp_path / "spec.yaml"
    shutil.copy(APPROVAL, spec)
    run = _run([sys.executable, "-m", "gate", "check", str(spec)], tmp_path, dict(os.environ))
    assert run.returncode == 2, run.stdout + run.stderr
    assert "no policies/ directory here: using the built-in default policy" in run.stderr
    assert "(policy: built-in default)" in run.stdout
    as_json = _run(
        [sys.executable, "-m", "gate", "check", "--format", "json", str(spec)],
        tmp_path,
        dict(os.environ),
    )
    assert '"policy": "built-in default"' in as_json.stdout
    named = _run(
        [sys.executable, "-m", "gate", "check", "--policy-dir", "policies", str(spec)],
        tmp_path,
        dict(os.environ),
    )
    assert named.returncode == 3 and "policy directory 'policies' not found" in named.stderr


def test_the_built_in_default_is_what_init_writes():
    from gate.policy.loader import builtin_policies

    loaded = builtin_policies().for_team(None)
    assert loaded.builtin and loaded.name == "built-in default"
    assert loaded.policy.limits.max_experiment_cost is not None
    # init's copy differs in one line: it lists teams (none yet), so an unknown team is an error
    packaged = (ROOT / "gate" / "data" / "default-policy.yaml").read_text()
    written = planned_files()["policies/default.yaml"]
    assert written == packaged.replace("\n# teams: []\n", "\nteams: []\n")
    assert written != packaged and builtin_policies().for_team(None).policy.teams is None
    assert yaml.safe_load(written)["teams"] == []


def test_the_getting_started_journey_after_init_clears_a_launch(tmp_path, monkeypatch, keys):
    """docs/getting-started.md after ``init``: the approver listed with their key, their key
    exported; request, approve and verify then record signed records and clear the launch
    (without those steps each refuses, saying what to set)."""
    monkeypatch.chdir(tmp_path)
    subprocess.run(["git", "init", "-q", "."], check=True)
    assert main(["init"]) == 0
    sample = Path("experiments/sample.yaml").read_text(encoding="utf-8")
    sweep = sample.replace("max_trials: 12", "max_trials: 20")
    sweep = sweep.replace("max_concurrent_trials: 4", "max_concurrent_trials: 8")
    assert sweep != sample
    Path("experiments/sweep.yaml").write_text(sweep, encoding="utf-8")
    policy = Path("policies/default.yaml")
    teams = "    teams: [ml-platform]"
    policy.write_text(policy.read_text().replace(teams, f"    users: [bob]\n{teams}"))
    with Path("policies/allowed_signers").open("a", encoding="utf-8") as signers:
        signers.write(keys.line("bob") + "\n")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    spec = "experiments/sweep.yaml"
    assert main(["check", spec]) == 2  # approval required
    assert main(["request-approval", spec, "--reason", "needs the full grid"]) == 3  # no key
    for name, value in keys.env("bob").items():
        monkeypatch.setenv(name, value)
    assert main(["request-approval", spec, "--reason", "needs the full grid"]) == 0
    assert main(["approve", spec, "--by", "bob", "--reason", "worth it", "--expires", "14d"]) == 0
    assert main(["verify", spec]) == 0


def test_init_below_the_repository_root_says_what_to_move_and_ignores_the_ledger_there(
    tmp_path, capsys
):
    """GitHub and pre-commit read their files at the repository's root only, and the
    default ledger is mlflow.db there: init in a/b said nothing and ignored a/b/mlflow.db."""
    (tmp_path / ".git").mkdir()
    project = tmp_path / "a" / "b"
    project.mkdir(parents=True)
    assert main(["init", "--dir", str(project)]) == 0
    err = capsys.readouterr().err
    assert f"note: {project} is not the root of its git repository ({tmp_path})" in err
    assert "specs: a/b/experiments/** and policy-dir: a/b/policies" in err
    assert "/mlflow.db" in (tmp_path / ".gitignore").read_text(encoding="utf-8")
    assert not (project / ".gitignore").exists()
    other = tmp_path / "elsewhere"
    (other / ".git").mkdir(parents=True)
    assert main(["init", "--dir", str(other)]) == 0  # a repository's root: nothing to move
    assert "is not the root" not in capsys.readouterr().err
    assert "/mlflow.db" in (other / ".gitignore").read_text(encoding="utf-8")
