"""Every launch path refuses a spec the Action never judges: by its name, or by its place.

Red team (paths, A): the Action picks the specs a pull request changes by their names
(:func:`gate.spec.globs.is_spec_file`: ``.yaml``, ``.yml``, ``.json``, any case) and sees
only the repository's own files, but ``budget-gate verify``, ``gate.require_approval``, the
SkyPilot policy and Kueue's check judged any file they were given. A pull request that adds
``experiments/small`` (or ``small.yaml.bak``, or a submodule holding ``big.yaml``) got no
judgment, no BG205 and no review, and the file then launched under its team's policy. Each
path now refuses it (exit 3), saying why and how to name or place it. Real files in a real
git repository; SkyPilot's own classes in a network namespace.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

import gate
from gate.admission.spec_file import SpecRefError, read_spec
from gate.cli import main
from gate.integrations.skypilot_spec import Rejection, read_named_spec
from tests.ledger_kit import Team
from tests.mlflow_server import free_port
from tests.netns import run_on_loopback
from tests.test_base_ref import git

SPEC = "experiments/small.yaml"  # judged by the Action, and so cleared at launch
UNNAMED = ("experiments/small", "experiments/small.yaml.bak", "experiments/small.txt")
NAME_FIX = "rename it to end in .yaml"
PLACE_FIX = "commit the spec in the repository itself"


@pytest.fixture
def repo(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch) -> Team:
    """A repository with a policy, a spec that clears without the ledger, and copies of it
    under names and in places the Action never judges (a submodule, a nested clone)."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    team = Team(root, f"http://127.0.0.1:{free_port()}", capsys)  # never read: no approval
    team.policy()
    (root / "experiments").mkdir()
    text = Path(team.spec(2, file=SPEC)).read_text()
    for name in UNNAMED:
        (root / name).write_text(text)
    (root / "experiments" / "link.yaml").symlink_to("small")
    source = tmp_path / "sub"
    source.mkdir()
    git(source, "init", "-q")
    (source / "big.yaml").write_text(text)
    git(source, "add", "big.yaml")
    git(source, "commit", "-q", "-m", "spec")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "base")
    git(
        root,
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        str(source),
        "experiments/ext",
    )
    clone = root / "experiments" / "clone"
    clone.mkdir()
    git(clone, "init", "-q")
    (clone / "big.yaml").write_text(text)
    (root / ".git" / "specs").mkdir()
    (root / ".git" / "specs" / "big.yaml").write_text(text)
    monkeypatch.chdir(root)  # the CLI runs from the repository's root, as users do
    return team


NESTED = {
    "experiments/ext/big.yaml": "lies inside experiments/ext, a nested git repository",
    "experiments/clone/big.yaml": "lies inside experiments/clone, a nested git repository",
    ".git/specs/big.yaml": "lies inside .git, a git directory, whose files no commit holds",
}


def test_verify_refuses_a_spec_the_action_never_picks_by_name(repo: Team) -> None:
    assert repo.cli("verify", SPEC, "--dry-run")[0] == 0  # the same content, named as a spec
    for name in UNNAMED:
        code, _, err = repo.cli("verify", name, "--dry-run")
        assert code == 3, err
        assert f"{name}: not a spec file name: the Action judges only files whose" in err
        assert NAME_FIX in err
    code, _, err = repo.cli("verify", "experiments/small.yaml.bak")
    assert "(e.g. small.yaml)" in err
    code, _, err = repo.cli("verify", "experiments/link.yaml")
    assert code == 3 and "link.yaml: not a spec file name (a link to the file small)" in err


def test_verify_of_a_directory_says_it_is_one(repo: Team) -> None:
    """``verify experiments`` said to rename the folder to end in .yaml."""
    for name in ("experiments", "experiments/"):
        code, _, err = repo.cli("verify", name, "--dry-run")
        assert code == 3, err
        assert f"{name}: a directory — a launch judges the one spec file it launches" in err
        assert "rename" not in err


def test_verify_refuses_a_spec_inside_a_submodule_or_a_nested_repository(repo: Team) -> None:
    assert (repo.root / "experiments/ext/.git").is_file()  # a real submodule's .git file
    for name, why in NESTED.items():
        code, _, err = repo.cli("verify", name, "--dry-run")
        assert code == 3, err
        assert why in err and PLACE_FIX in err
    # from inside the submodule, by the outer repository's policies: still its place
    os.chdir(repo.root / "experiments" / "ext")
    code, _, err = repo.cli("verify", "big.yaml")
    assert code == 3 and NESTED["experiments/ext/big.yaml"] in err
    # and with no --policy-dir, the submodule its own root (no policies: the default judged)
    repo.capsys.readouterr()
    code = main(["verify", "big.yaml", "--tracking-uri", repo.uri])
    out, err = repo.capsys.readouterr()
    assert code == 3, out + err
    assert "a submodule of another repository: the Action judges that repository's" in err


def test_require_approval_refuses_them_too(repo: Team) -> None:
    def clear(spec: str) -> gate.launch.Verification:
        return gate.require_approval(spec, policy_dir=repo.policy_dir, tracking_uri=repo.uri)

    assert clear(SPEC).approval is None
    for name in (*UNNAMED, "experiments/link.yaml"):
        with pytest.raises(gate.InputError, match="not a spec file name") as raised:
            clear(name)
        assert raised.value.exit_code == 3 and NAME_FIX in str(raised.value)
    for name, why in NESTED.items():
        with pytest.raises(gate.InputError, match=why):
            clear(str(repo.root / name))  # an absolute path is placed the same


def test_the_spec_kueue_and_skypilot_read_is_refused_the_same(repo: Team) -> None:
    root = repo.root
    assert read_spec(SPEC, root, subject=f"annotation x={SPEC}")[0] == SPEC
    for name in (*UNNAMED, "experiments/link.yaml"):
        with pytest.raises(SpecRefError) as kueue:
            read_spec(name, root, subject=f"annotation budget-gate.io/spec={name}")
        assert str(kueue.value).startswith(f"annotation budget-gate.io/spec={name}: {name}: not")
        with pytest.raises(Rejection, match=f"BUDGET_GATE_SPEC={name}: {name}: not a spec"):
            read_named_spec(name, root)
    for name, why in NESTED.items():
        with pytest.raises(SpecRefError, match=why):
            read_spec(name, root, subject=f"annotation budget-gate.io/spec={name}")
        with pytest.raises(Rejection, match=why):
            read_named_spec(name, root)


ADMIT = """
import json, sys
from pathlib import Path
import sky
from sky import exceptions
from gate.integrations.skypilot import apply_policy
from gate.integrations.skypilot_settings import PolicySettings
root, uri, *names = sys.argv[1:]
settings = PolicySettings(Path(root), Path(root) / "policies", uri)
for name in names:
    config = {"name": "t", "resources": {"accelerators": "L4:1"}, "run": "python t.py",
              "envs": {"BUDGET_GATE_SPEC": name}}
    (Path(root).parent / "task.yaml").write_text(json.dumps(config))
    task = sky.Task.from_yaml(str(Path(root).parent / "task.yaml"))
    asked = sky.UserRequest(task=task, skypilot_config=sky.Config(),
                            request_name=sky.AdminPolicyRequestName.CLUSTER_LAUNCH, user=None)
    try:
        apply_policy(asked, settings)
        print(json.dumps([name, "admitted"]))
    except exceptions.UserRequestRejectedByPolicy as exc:
        print(json.dumps([name, str(exc)]))
"""


def test_the_skypilot_policy_rejects_the_task(repo: Team, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "SKYPILOT_DISABLE_USAGE_COLLECTION": "1"}
    names = [SPEC, "experiments/small", "experiments/ext/big.yaml"]
    command = [sys.executable, "-W", "ignore", "-c", ADMIT, str(repo.root), repo.uri, *names]
    proc = run_on_loopback(shlex.join(command), env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    said = dict(json.loads(line) for line in proc.stdout.splitlines() if line.startswith("["))
    assert said[SPEC] == "admitted"
    assert "BUDGET_GATE_SPEC=experiments/small: experiments/small: not a spec" in said[names[1]]
    assert NESTED[names[2]] in said[names[2]]


def test_the_pre_commit_hook_checks_every_spec_file_the_action_judges() -> None:
    from pre_commit.clientlib import load_manifest
    from pre_commit.commands.run import filter_by_include_exclude

    from gate.spec.globs import is_spec_file, matches
    from tests.conftest import ROOT

    (hook,) = load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))
    names = [
        *(f"experiments/{d}a.{end}" for d in ("", "nlp/") for end in ("yaml", "yml", "json")),
        *("experiments/b.YAML", "experiments/c.Yml", "experiments/d.JSON", "experiments/e.jSoN"),
        *("experiments/small", "experiments/a.yaml.bak", "experiments/a.txt", "docs/a.yaml"),
    ]
    picked = set(filter_by_include_exclude(names, hook["files"], hook["exclude"]))
    judged = {n for n in names if is_spec_file(n) and matches(["experiments/**"], n)}
    assert picked == judged and len(judged) == 10


def test_a_spec_outside_the_repository_is_refused_by_verify_and_require_approval(
    repo: Team, tmp_path: Path
) -> None:
    """A spec reached through a directory link out of the repository, or named by a path
    outside it, was judged by the repository's policies and cleared, though no pull request
    judged it (SkyPilot and Kueue refused the same file)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.yaml").write_text((repo.root / SPEC).read_text())
    (repo.root / "experiments" / "out").symlink_to(outside)
    why = f"lies outside the repository {repo.root.resolve()} whose policies judge it"
    for name in ("experiments/out/x.yaml", str(outside / "x.yaml")):
        code, out, err = repo.cli("verify", name, "--dry-run")
        assert code == 3, out + err
        assert why in err and "so no pull request judged this spec" in err
        with pytest.raises(gate.InputError, match="lies outside the repository"):
            gate.require_approval(name, policy_dir=repo.policy_dir, tracking_uri=repo.uri)
    code, _, err = repo.cli("verify", "experiments/out/x.yaml", "--dry-run")
    assert f"(a link to {(outside / 'x.yaml').resolve()})" in err
    assert repo.cli("verify", SPEC, "--dry-run")[0] == 0  # the same file, in the repository


def test_a_spec_outside_policies_that_lie_in_no_git_work_tree_is_refused_too(
    repo: Team, tmp_path: Path, monkeypatch
) -> None:
    """An image built without ``.git``: its policies' folder is the repository, and a spec
    outside it was cleared by them. With the built-in default no repository judges at all,
    so a spec anywhere is judged by it (and said so), as before."""
    image = tmp_path / "image"
    (image / "experiments").mkdir(parents=True)
    (image / "policies").mkdir()
    for policy in Path(repo.policy_dir).glob("*.yaml"):
        (image / "policies" / policy.name).write_text(policy.read_text())
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text((repo.root / SPEC).read_text())
    monkeypatch.chdir(image)
    code, out, err = repo.cli("verify", str(outside), "--dry-run")  # --policy-dir: the repo's
    assert code == 3 and "lies outside the repository" in err, out + err
    repo.capsys.readouterr()
    assert main(["verify", str(outside), "--dry-run", "--policy-dir", "policies"]) == 3
    err = repo.capsys.readouterr().err
    assert f"lies outside the repository {image.resolve()}" in err
    assert "(a link to" not in err  # named by its own path: no link
    bare = tmp_path / "bare"
    bare.mkdir()
    monkeypatch.chdir(bare)  # no policies anywhere: the built-in default judges
    code = main(["verify", str(outside), "--dry-run", "--tracking-uri", repo.uri])
    err = repo.capsys.readouterr().err
    assert code != 3 and "lies outside" not in err and "built-in default policy" in err
