"""The CLI end to end: exit codes, stdout/stderr split, formats, several specs, policies."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Any

import pytest
import yaml

from gate.cli import main
from tests.conftest import ROOT

POLICIES = str(ROOT / "policies")
PASSING = str(ROOT / "examples" / "cifar-sweep.yaml")
APPROVAL = str(ROOT / "examples" / "llm-finetune-grid.yaml")
VIOLATION = str(ROOT / "examples" / "imagenet-bruteforce.yaml")

SPEC = """\
apiVersion: budget-gate/v1
kind: Experiment
metadata: {name: tiny, team: TEAM, labels: {}}
resources: {accelerator: L4, gpus_per_trial: 1, precision: bf16}
workload: {max_epochs: 10, epoch_minutes: 6}
search: {strategy: random, max_trials: 2}
quality_gate: [{metric: val_f1, op: ">=", value: 0.8}]
"""
POLICY = """\
apiVersion: budget-gate/v1
kind: Policy
prices: {overrides: {L4: {on-demand: 1}}}
"""


def check(*args: str) -> int:
    return main(["check", "--policy-dir", POLICIES, *args])


@pytest.mark.parametrize(("spec", "code"), [(PASSING, 0), (VIOLATION, 1), (APPROVAL, 2)])
def test_exit_code_per_verdict(spec, code, capsys):
    assert check(spec) == code
    out, err = capsys.readouterr()
    assert "verdict:" in out and err == ""


def test_several_specs_worst_outcome_wins_and_json_keeps_each(capsys):
    assert check("--format", "json", PASSING, APPROVAL, VIOLATION) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["schema_version"] == "2"
    assert [r["exit_code"] for r in report["results"]] == [0, 2, 1]
    assert (report["outcome"], report["exit_code"]) == ("violation", 1)


def test_invalid_input_beats_everything(write_yaml, capsys):
    bad = write_yaml("bad.yaml", "apiVersion: budget-gate/v1\nkind: Experiment\nmetadata: [1]\n")
    assert check(VIOLATION, bad, APPROVAL) == 3
    out, err = capsys.readouterr()  # input errors go where findings go: stdout
    assert f"{bad}:1:1: missing required key 'resources' in the top level — add resources:" in out
    assert f"{bad}:3:11: metadata: a list is not a mapping — write metadata: {{name: ...," in out
    assert "→ invalid" in out and err == ""


def test_a_misspelt_required_key_is_one_line_that_names_the_fix(write_yaml, capsys):
    """``gpus_per_trail`` drew two lines, the first at ``resources:`` asking to add the
    key the user wrote: now only the did-you-mean, where the typo is."""
    bad = write_yaml(
        "typo.yaml", SPEC.replace("TEAM", "ml").replace("gpus_per_trial", "gpus_per_trail")
    )
    assert check(bad) == 3
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith(bad)]
    assert lines == [
        f"{bad}:4:30: unknown key 'gpus_per_trail' in resources — did you mean 'gpus_per_trial'?"
    ]


@pytest.mark.parametrize("fmt", ["json", "sarif", "junit", "markdown"])
def test_input_errors_reach_stderr_when_stdout_holds_a_document(write_yaml, capsys, fmt):
    """``check --format json > out.json`` in CI showed no error line: the errors were only
    inside the JSON. They are said on stderr too, as for ``verify`` and ``estimate``."""
    bad = write_yaml("typo.yaml", SPEC.replace("TEAM", "ml").replace("max_epochs", "max_epoch"))
    assert check("--format", fmt, bad) == 3
    err = capsys.readouterr().err
    assert f"{bad}:5:12: unknown key 'max_epoch' in workload — did you mean 'max_epochs'?" in err


def test_approval_beats_pass(capsys):
    assert check(PASSING, APPROVAL) == 2


def test_json_is_stable_and_ordered(capsys):
    check("--format", "json", APPROVAL)
    first = capsys.readouterr().out
    check("--format", "json", APPROVAL)
    assert capsys.readouterr().out == first
    result = json.loads(first)["results"][0]
    assert list(result) == [
        "file",
        "name",
        "policy",
        "fingerprint",
        "outcome",
        "exit_code",
        "currency",
        "estimate",
        "findings",
        "errors",
        "budget",
        "approval",
        "alternatives",
        "notes",
    ]
    assert result["fingerprint"].startswith("sha256:")
    assert result["estimate"]["worst"]["trials"] == 64


def test_fail_on_warn_turns_warnings_into_a_violation(write_yaml, capsys):
    spec = write_yaml("s.yaml", SPEC.replace("TEAM", "x").replace("bf16", "fp32"))
    policy_dir = str(ROOT / "policies")
    assert main(["check", "--policy-dir", policy_dir, spec]) == 1  # default requires labels
    policy = write_yaml("p/default.yaml", POLICY)
    pdir = policy.rsplit("/", 1)[0]
    assert main(["check", "--policy-dir", pdir, spec]) == 0
    assert "warn BG304 fp32 on L4" in capsys.readouterr().out
    assert main(["check", "--policy-dir", pdir, "--fail-on-warn", spec]) == 1


def test_team_policy_is_chosen_by_metadata_team(write_yaml, capsys):
    write_yaml("p/default.yaml", POLICY)
    team = write_yaml(
        "p/vision.yaml",
        "apiVersion: budget-gate/v1\nkind: Policy\nextends: default\n"
        "limits: {max_experiment_cost: 1}\n",
    )
    pdir = team.rsplit("/", 1)[0]
    vision = write_yaml("vision.yaml", SPEC.replace("TEAM", "vision"))
    other = write_yaml("other.yaml", SPEC.replace("TEAM", "nlp"))
    assert main(["check", "--policy-dir", pdir, vision]) == 1  # 2 GPU-h × 1 USD > 1 USD
    assert "(policy: vision ← default)" in capsys.readouterr().out
    assert main(["check", "--policy-dir", pdir, other]) == 0
    assert "(policy: default)" in capsys.readouterr().out


def _waived(write_yaml: Any, reason: str, expires: str) -> tuple[str, str]:
    """A spec over the policy's cost limit, and the policy directory whose waiver covers it."""
    write_yaml(
        "p/default.yaml",
        POLICY + "limits: {max_experiment_cost: 1}\nwaivers:\n"
        f"  - {{rule: BG104, specs: 'big.yaml', reason: {reason}, expires: {expires}}}\n",
    )
    spec = write_yaml("big.yaml", SPEC.replace("TEAM", "x"))
    return spec, spec.rsplit("/", 1)[0] + "/p"


def test_waivers_suppress_until_they_expire(write_yaml, capsys):
    spec, pdir = _waived(write_yaml, "board approved", "2026-12-31")
    assert main(["check", "--policy-dir", pdir, "--as-of", "2026-12-01", spec]) == 0
    assert "(waived: board approved)" in capsys.readouterr().out
    assert main(["check", "--policy-dir", pdir, "--as-of", "2027-01-01", spec]) == 1
    out = capsys.readouterr().out
    assert "error BG104" in out
    assert "default.yaml:6:5: warn BG901 waiver for BG104" in out


def test_a_moment_other_than_now_is_said_in_every_format(write_yaml, capsys):
    """A past --as-of revives an expired waiver: a pass judged then says it was judged then."""
    spec, pdir = _waived(write_yaml, "old", "2025-01-01")
    said = "judged as of 2024-06-01 (--as-of), not now"
    assert main(["check", "--policy-dir", pdir, "--as-of", "2024-06-01", spec]) == 0
    assert said in capsys.readouterr().out
    assert (
        main(["check", "--policy-dir", pdir, "--as-of", "2024-06-01", "--format", "json", spec])
        == 0
    )
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert any(note.startswith(said) for note in result["notes"])
    assert main(["verify", "--policy-dir", pdir, "--as-of", "2024-06-01", spec]) == 0
    assert said in capsys.readouterr().out
    assert main(["check", "--policy-dir", pdir, spec]) == 1
    assert "--as-of" not in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["broken link", "link loop", "directory", "fifo"])
def test_a_team_policy_that_cannot_be_read_is_bad_input_not_the_default(write_yaml, capsys, kind):
    """Left out, nlp.yaml's limits would give way to the default policy's, in silence."""
    write_yaml("p/default.yaml", POLICY)
    spec = write_yaml("s.yaml", SPEC.replace("TEAM", "nlp"))
    pdir = spec.rsplit("/", 1)[0] + "/p"
    team = f"{pdir}/nlp.yaml"
    if kind == "broken link":
        os.symlink("../missing/nlp.yaml", team)
    elif kind == "link loop":
        os.symlink("nlp.yaml", team)
    elif kind == "directory":
        os.mkdir(team)
    else:
        os.mkfifo(team)
    assert main(["check", "--policy-dir", pdir, spec]) == 3
    err = capsys.readouterr().err
    assert "nlp.yaml" in err and "Traceback" not in err


@pytest.mark.parametrize("name", ["nlp.json", "nlp.yaml ", "nlp.yaml.yaml", "NLP.yaml", "nlp.yml"])
def test_a_team_policy_named_as_none_is_read_is_refused_not_skipped(write_yaml, capsys, name):
    write_yaml("p/default.yaml", POLICY)
    write_yaml(f"p/{name}", POLICY + "limits: {max_gpus_per_trial: 0}\n")
    spec = write_yaml("s.yaml", SPEC.replace("TEAM", "nlp"))
    pdir = spec.rsplit("/", 1)[0] + "/p"
    assert main(["check", "--policy-dir", pdir, spec]) == 3
    assert "not read — a policy file is named <team>.yaml" in capsys.readouterr().err


@pytest.mark.parametrize("place", ["teams/nlp.yaml", "teams/old/NLP.yml"])
def test_a_team_policy_in_a_folder_of_the_policies_is_refused_not_skipped(
    write_yaml, capsys, place
):
    """Only the files directly in the policy directory are read: one folder down, the team
    was judged by the default policy, and ``policy check`` counted one policy valid."""
    write_yaml("p/default.yaml", POLICY)
    write_yaml(f"p/{place}", POLICY + "limits: {max_gpus_per_trial: 0}\n")
    write_yaml("p/tests/nlp.yaml", SPEC.replace("TEAM", "nlp"))  # a fixture: no policy
    write_yaml("p/.git/nlp.yaml", "x: 1\n")  # hidden: never looked at
    spec = write_yaml("s.yaml", SPEC.replace("TEAM", "nlp"))
    pdir = spec.rsplit("/", 1)[0] + "/p"
    for argv in (["check", "--policy-dir", pdir, spec], ["policy", "check", pdir]):
        assert main(argv) == 3
        err = capsys.readouterr().err
        assert f"p/{place}: not read — only the files directly in " in err, err
        assert "tests/nlp.yaml" not in err and ".git" not in err
    other = write_yaml("o.yaml", SPEC.replace("TEAM", "cv"))  # another team is judged as before
    assert main(["check", "--policy-dir", pdir, other]) != 3


@pytest.mark.parametrize(
    "policy",
    [
        "owns: {specs: ['experiments/nlp/\\']}\n",
        "waivers: [{rule: BG101, specs: 'a\\', reason: old one, expires: 2099-12-31}]\n",
        "owns: {specs: ['!']}\n",
        "owns: {specs: [exp/**, '! ']}\n",
        # a '..' step matches nothing (paths are the repository's): a dead '!' widened owns
        "owns: {specs: [exp/**, '!../exp/secret/**']}\n",
        "waivers: [{rule: BG101, specs: 'exp/../../s.yaml', reason: old, expires: 2099-12-31}]\n",
    ],
)
def test_a_policy_glob_gitignore_refuses_is_refused_at_its_line(write_yaml, capsys, policy):
    """pathspec raised on a trailing lone backslash at match time: exit 70, after policy check
    had passed the policy."""
    write_yaml("p/default.yaml", POLICY)
    write_yaml("p/nlp.yaml", POLICY + policy)
    spec = write_yaml("s.yaml", SPEC.replace("TEAM", "nlp"))
    pdir = spec.rsplit("/", 1)[0] + "/p"
    for argv in (["policy", "check", pdir], ["check", "--policy-dir", pdir, spec]):
        assert main(argv) == 3
        err = capsys.readouterr().err
        assert "nlp.yaml:4:" in err and "is not a usable glob" in err, err


def test_a_quoted_glob_under_no_directory_says_so_as_typed(tmp_path, monkeypatch, capsys):
    """``check 'nomatch/*.yaml'`` said ``./nomatch: cannot read the directory`` and asked
    to let the check read it, as if a permission were missing."""
    monkeypatch.chdir(tmp_path)
    for flags in ([], ["--allow-empty"]):
        assert main(["check", *flags, "nomatch/*.yaml"]) == 3
        err = capsys.readouterr().err
        assert "nomatch/*.yaml: no file matches (nomatch is no directory)" in err, err
        assert "cannot read" not in err


def test_a_spec_named_in_no_utf_8_under_a_quoted_glob_is_bad_input(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "e").mkdir()
    spec = (ROOT / "examples" / "cifar-sweep.yaml").read_bytes()
    (tmp_path / "e" / "ok.yaml").write_bytes(spec)
    with open(os.path.join(os.fsencode(tmp_path / "e"), b"bad\xff.yaml"), "wb") as handle:
        handle.write(spec)
    for named in ("e/*.yaml", "e/o*", "e"):
        assert main(["check", named]) == 3, named
        err = capsys.readouterr().err
        assert "the file name is not UTF-8" in err and "internal error" not in err


def test_a_quoted_glob_gitignore_refuses_is_bad_input(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "a.yaml").write_text((ROOT / "examples" / "cifar-sweep.yaml").read_text())
    assert main(["check", "e/*\\"]) == 3
    assert "not a usable glob" in capsys.readouterr().err


def test_the_calibration_beside_the_policies_is_no_misnamed_policy(write_yaml, capsys):
    """Nor an editor's lock link (Emacs writes .#default.yaml, a link to nowhere)."""
    pdir = write_yaml("p/default.yaml", POLICY).rsplit("/", 1)[0]
    write_yaml(
        "p/calibration.json",
        '{"apiVersion": "budget-gate/v1", "kind": "Calibration", "created": "2026-12-01"}',
    )
    os.symlink("alice@host.1234:1700000000", f"{pdir}/.#default.yaml")
    assert main(["policy", "check", pdir]) == 0, capsys.readouterr().err


def test_bad_policy_is_exit_3_with_its_position(write_yaml, capsys):
    write_yaml("p/default.yaml", POLICY + "limits: {max_trial_cost: -5}\n")
    spec = write_yaml("s.yaml", SPEC.replace("TEAM", "x"))
    assert main(["check", "--policy-dir", spec.rsplit("/", 1)[0] + "/p", spec]) == 3
    err = capsys.readouterr().err
    assert (
        "/p/default.yaml:4:26: limits.max_trial_cost: input should be greater than or equal to 0"
        in err
    )


def test_missing_policy_dir_is_exit_3(capsys):
    assert main(["check", "--policy-dir", "/nonexistent", PASSING]) == 3
    assert "--policy-dir" in capsys.readouterr().err


def test_policy_extends_cycle_is_exit_3(write_yaml, capsys):
    write_yaml("p/default.yaml", "apiVersion: budget-gate/v1\nkind: Policy\nextends: vision\n")
    write_yaml("p/vision.yaml", "apiVersion: budget-gate/v1\nkind: Policy\nextends: default\n")
    spec = write_yaml("s.yaml", SPEC.replace("TEAM", "vision"))
    assert main(["check", "--policy-dir", spec.rsplit("/", 1)[0] + "/p", spec]) == 3
    assert "extends itself" in capsys.readouterr().err


def test_directories_and_quoted_globs_are_expanded(capsys):
    assert check("--format", "json", str(ROOT / "examples")) == 1
    files = [r["file"] for r in json.loads(capsys.readouterr().out)["results"]]
    # Directories are searched recursively: examples/digits-grid/ is found too.
    assert len(files) == len(list((ROOT / "examples").rglob("*.yaml")))
    assert str(ROOT / "examples" / "digits-grid" / "digits-grid.yaml") in files
    assert check("--format", "json", str(ROOT / "examples" / "c*.yaml")) == 0


def test_a_quoted_glob_judges_what_the_directory_judges(tmp_path, monkeypatch, capsys):
    """Hidden files and names with backslashes are specs like any other, whichever way named."""
    spec = (ROOT / "examples" / "cifar-sweep.yaml").read_text()
    (tmp_path / "experiments" / "nlp").mkdir(parents=True)
    names = ["experiments/a.yaml", "experiments/.b.yaml", "experiments/nlp/x\\..\\..\\..\\c.yaml"]
    for name in names:
        (tmp_path / name).write_text(spec)
    (tmp_path / "experiments" / ".gitkeep").write_text("")  # no spec: neither way reads it
    (tmp_path / "experiments" / "README.md").write_text("# specs\n")
    monkeypatch.chdir(tmp_path)
    judged = []
    for named in ("experiments", "experiments/**"):
        assert check("--format", "json", named) in (0, 1)
        judged.append(sorted(r["file"] for r in json.loads(capsys.readouterr().out)["results"]))
    assert judged[0] == judged[1] == sorted(names)


def test_a_linked_directory_is_not_searched_and_said(tmp_path, monkeypatch, capsys):
    """A directory reached by a link is left out (no loops), aloud, whichever way named."""
    spec = (ROOT / "examples" / "cifar-sweep.yaml").read_text()
    (tmp_path / "experiments" / "real").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "experiments" / "real" / "a.yaml").write_text(spec)
    (tmp_path / "elsewhere" / "b.yaml").write_text(spec)
    (tmp_path / "experiments" / "link").symlink_to("../elsewhere")
    monkeypatch.chdir(tmp_path)
    for named in ("experiments", "experiments/**"):
        assert check("--format", "json", named) in (0, 1)
        out, err = capsys.readouterr()
        assert [r["file"] for r in json.loads(out)["results"]] == ["experiments/real/a.yaml"]
        assert "warning: experiments/link is a link to a directory, not searched" in err


def test_a_directory_s_specs_come_in_path_order(tmp_path, monkeypatch, capsys):
    """Directory by directory, names in order: ``a/x.yaml`` before ``a-c/`` and ``a.yaml``
    (as paths compare by their parts), hidden files included."""
    spec = (ROOT / "examples" / "cifar-sweep.yaml").read_text()
    names = ["e/a/x.yaml", "e/a-c/d.json", "e/a.yaml", "e/b/.c.yaml", "e/b.YML"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        text = spec if name.endswith("ml") else json.dumps(yaml.safe_load(spec))
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    for named in ("e", "./e/", "."):
        assert check("--format", "json", named) in (0, 1)
        files = [r["file"] for r in json.loads(capsys.readouterr().out)["results"]]
        assert files == names, named


def test_links_that_loop_in_a_searched_directory_are_bad_input_not_a_crash(
    tmp_path, monkeypatch, capsys
):
    spec = (ROOT / "examples" / "cifar-sweep.yaml").read_text()
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "a.yaml").write_text(spec)
    for a, b in (("l1", "l2"), ("l2", "l1"), ("l3.yaml", "l4.yaml"), ("l4.yaml", "l3.yaml")):
        (tmp_path / "e" / a).symlink_to(b)
    monkeypatch.chdir(tmp_path)
    for named in ("e", "e/**"):
        assert main(["check", "--format", "json", named]) == 3
        results = json.loads(capsys.readouterr().out)["results"]
        assert [r["file"] for r in results] == ["e/a.yaml", "e/l3.yaml", "e/l4.yaml"]
        assert [r["outcome"] for r in results][1:] == ["invalid", "invalid"]


def test_a_directory_that_cannot_be_read_is_bad_input(tmp_path, monkeypatch, capsys):
    """Its specs would go unjudged: exit 3 and the directory named, whichever way named."""
    spec = (ROOT / "examples" / "cifar-sweep.yaml").read_text()
    (tmp_path / "e" / "locked").mkdir(parents=True)
    (tmp_path / "e" / "locked" / "a.yaml").write_text(spec)
    (tmp_path / "e" / "b.yaml").write_text(spec)
    monkeypatch.chdir(tmp_path)
    locked = tmp_path / "e" / "locked"
    if os.geteuid() == 0:  # NOTE: root reads any directory: the system's refusal, injected
        scandir = os.scandir

        def refusing(path: Any = ".") -> Any:
            if os.path.realpath(path) == str(locked):
                raise PermissionError(13, "Permission denied", str(path))
            return scandir(path)

        monkeypatch.setattr(os, "scandir", refusing)
    else:
        locked.chmod(0)
    try:
        for named in ("e", "e/**"):
            assert main(["check", "--format", "json", named]) == 3
            out, err = capsys.readouterr()
            assert out == ""
            assert "e/locked: cannot read the directory (Permission denied)" in err
            assert len(err.strip().splitlines()) <= 2 and "Traceback" not in err
    finally:
        locked.chmod(0o755)


def test_a_report_file_is_written_through_a_link_and_into_a_fifo(tmp_path, monkeypatch):
    """The link stays a link, a FIFO (or /dev/stdout) stays what it is: written, not replaced."""
    import threading

    monkeypatch.chdir(tmp_path)
    (tmp_path / "real.json").write_text("")
    (tmp_path / "link.json").symlink_to("real.json")
    assert main(["check", "--format", "json=link.json", PASSING]) == 0
    assert (tmp_path / "link.json").is_symlink()
    assert json.loads((tmp_path / "real.json").read_text())["results"][0]["outcome"] == "pass"
    os.mkfifo(tmp_path / "pipe")
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append((tmp_path / "pipe").read_text()))
    reader.start()
    assert main(["check", "--format", "json=pipe", PASSING]) == 0
    reader.join(10)
    assert json.loads(got[0])["results"][0]["outcome"] == "pass"
    assert not (tmp_path / "pipe").is_file()  # still the FIFO


def test_a_report_file_that_is_a_spec_judged_is_refused(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    text = (ROOT / "examples" / "cifar-sweep.yaml").read_text()
    spec.write_text(text)
    for target in (str(spec), str(tmp_path / "." / "spec.yaml")):
        assert main(["check", "--format", f"json={target}", str(spec)]) == 3
        assert "which this run reads" in capsys.readouterr().err
    assert spec.read_text() == text


def test_a_report_file_in_the_policy_directory_is_refused(tmp_path, capsys):
    """A red team's --format json=policies/vision.yaml replaced the policy the run read."""
    policies = tmp_path / "policies"
    shutil.copytree(ROOT / "policies", policies)
    before = (policies / "vision.yaml").read_text()
    for name in ("vision.yaml", "new-report.yaml"):
        target = f"json={policies / name}"
        assert main(["check", "--policy-dir", str(policies), "--format", target, PASSING]) == 3
        assert "the policy directory this run reads" in capsys.readouterr().err
    assert (policies / "vision.yaml").read_text() == before
    assert not (policies / "new-report.yaml").exists()
    outside = tmp_path / "report.json"
    main(["check", "--policy-dir", str(policies), "--format", f"json={outside}", PASSING])
    assert json.loads(outside.read_text())["results"]


def test_a_report_file_over_the_calibration_read_is_refused(tmp_path, capsys):
    cal = tmp_path / "cal.json"
    cal.write_text(
        '{"apiVersion": "budget-gate/v1", "kind": "Calibration", "created": "2026-12-01", '
        '"entries": []}'
    )
    before = cal.read_text()
    assert main(["check", "--calibration", str(cal), "--format", f"json={cal}", PASSING]) == 3
    assert "which this run reads" in capsys.readouterr().err
    assert cal.read_text() == before


def test_every_format_says_the_built_in_policy_judged(tmp_path, monkeypatch, capsys):
    """Outside a repository with policies/, SARIF and annotations say so, as text does."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(PASSING, tmp_path / "passing.yaml")  # NOTE: PASSING's folder finds policies/
    said = "judged by the built-in default policy: there is no policies/ directory"
    assert main(["check", "passing.yaml", "--format", "sarif"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert [n["level"] for n in notes if n["message"]["text"].startswith(said)] == ["warning"]
    assert main(["check", "passing.yaml", "--format", "github"]) == 0
    out = capsys.readouterr().out
    assert f"title=budget-gate%3A taken as given::{said}" in out
    assert out.startswith("::") and "::warning file=" in out


def test_usage_errors_exit_3_not_2(capsys):
    assert main(["check"]) == 3
    assert main(["check", "--format", "xml", PASSING]) == 3
    assert main(["nonsense"]) == 3
    assert main(["check", "--as-of", "tomorrow", PASSING]) == 3
    assert "budget-gate: error:" in capsys.readouterr().err


def test_help_and_version_exit_0(capsys):
    assert main(["--help"]) == 0
    assert "exit codes: 0 pass, 1 policy violation" in capsys.readouterr().out
    assert main(["--version"]) == 0


def test_estimate_text_and_json(capsys):
    assert main(["estimate", "--policy-dir", POLICIES, PASSING]) == 0
    out = capsys.readouterr().out
    assert "worst case" in out and "expected case" in out and "assumptions:" in out
    assert main(["estimate", "--policy-dir", POLICIES, "--format", "json", VIOLATION]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["estimates"][0]["estimate"]["worst"]["trials"] == 64


def test_estimate_json_carries_the_input_errors(write_yaml, capsys):
    bad = write_yaml(
        "bad.yaml", "apiVersion: budget-gate/v1\nkind: Experiment\nmetadata: {name: x}\n"
    )
    assert main(["estimate", "--policy-dir", POLICIES, "--format", "json", bad, PASSING]) == 3
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert [e["file"] for e in doc["estimates"]] == [PASSING]
    (invalid,) = doc["invalid"]
    assert invalid["file"] == bad
    assert {(e["line"], e["col"]) for e in invalid["errors"]} == {(1, 1)}
    assert "missing required key 'resources'" in invalid["errors"][0]["message"]
    assert "missing required key 'resources'" in captured.err  # and on stderr, as before


def test_rules_lists_every_rule_with_examples(capsys):
    from gate.policy.rules import all_rule_ids

    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    for rule_id in all_rule_ids():
        assert f"\n{rule_id} " in f"\n{out}"
    assert out.count("Passes") == len(all_rule_ids())
    assert main(["rules", "experiment-cost"]) == 0
    assert capsys.readouterr().out.startswith("BG104 experiment-cost [error]")
    assert main(["rules", "BG999"]) == 3


def test_schema_prints_every_schema_and_writes(tmp_path, capsys):
    assert main(["schema"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == {
        "experiment.schema.json",
        "policy.schema.json",
        "x-budget-gate.schema.json",
    }
    assert main(["schema", "--write", "--dir", str(tmp_path)]) == 0
    assert (tmp_path / "policy.schema.json").read_text() == (
        ROOT / "schemas" / "policy.schema.json"
    ).read_text()


def test_prices_table(capsys):
    assert main(["prices", "H100"]) == 0
    out = capsys.readouterr().out
    assert "H100         aws        8.4280  3.3214" in out and "SkyPilot" in out
    assert main(["prices", "H1000"]) == 3
    assert main(["prices", "h100"]) == 3  # the table is the catalog's names: it says which
    assert "unknown accelerator 'h100' — did you mean 'H100'?" in capsys.readouterr().err


def test_the_console_script_runs_in_a_fresh_process():
    proc = subprocess.run(
        [sys.executable, "-m", "gate", "check", "examples/llm-finetune-grid.yaml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "approval BG110 64 trials is over the approval trigger of 32" in proc.stdout
    assert "prices: SkyPilot v8" in proc.stdout


def test_rules_write_regenerates_the_rules_page(tmp_path):
    out = tmp_path / "rules.md"
    assert main(["rules", "--write", "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == (ROOT / "docs" / "rules.md").read_text()
    assert "::" not in out.read_text(encoding="utf-8")


def test_several_formats_from_one_evaluation(tmp_path, monkeypatch, capsys):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_REPOSITORY", "acme/ml")
    monkeypatch.setenv("GITHUB_WORKFLOW", "budget")
    sarif, comment = tmp_path / "out.sarif", tmp_path / "comment.md"
    code = check(
        "--format", "github",
        "--format", f"sarif={sarif}",
        "--format", f"markdown={comment}",
        "--docs-url", "https://example.com/rules.md",
        APPROVAL,
    )  # fmt: skip
    assert code == 2
    out = capsys.readouterr().out
    assert out.startswith(f"::warning file={APPROVAL},line=21,col=3,title=BG110 ")
    log = json.loads(sarif.read_text(encoding="utf-8"))
    assert log["runs"][0]["results"][0]["ruleId"] == "BG110"
    body = comment.read_text(encoding="utf-8")
    assert "(https://example.com/rules.md#bg110-large-search)" in body
    assert summary.read_text(encoding="utf-8") == body
    from gate.evaluation.report import RenderContext
    from gate.reporters.markdown import comment_marker

    marker = comment_marker(RenderContext("acme/ml", "budget", POLICIES))
    assert body.startswith(marker)


def test_only_one_format_may_write_stdout(capsys):
    assert check("--format", "text", "--format", "json", PASSING) == 3
    assert "formats text, json all want stdout" in capsys.readouterr().err


def test_a_folder_that_takes_no_new_file_is_named(capsys):
    """``/proc/version`` said "No such file or directory" of a file that is there: the
    folder refused the temporary file the write goes through."""
    assert check("--format", "text=/proc/version", PASSING) == 3
    err = capsys.readouterr().err
    assert "/proc/version: cannot write: no file can be made in /proc" in err


def test_a_dash_is_stdout(tmp_path, capsys, monkeypatch):
    """``--format sarif=-`` wrote a file named ``-``."""
    monkeypatch.chdir(tmp_path)
    assert check("--format", "sarif=-", PASSING) == 0
    assert json.loads(capsys.readouterr().out)["version"] == "2.1.0"
    assert not (tmp_path / "-").exists()


def test_a_link_to_another_formats_file_is_the_same_file(tmp_path, capsys):
    """The link's own path was compared: the second format replaced the first's file."""
    sarif = tmp_path / "gate.sarif"
    sarif.write_text("old")
    (tmp_path / "link.sarif").symlink_to(sarif)
    code = check(
        "--format", f"sarif={sarif}", "--format", f"json={tmp_path / 'link.sarif'}", PASSING
    )
    assert code == 3
    assert "two formats write the same file" in capsys.readouterr().err
    assert sarif.read_text() == "old"


def test_a_directory_as_the_format_file_is_said_to_be_one(tmp_path, capsys):
    """The hint was to check that the directory exists and is writable: it was both."""
    assert check("--format", f"sarif={tmp_path}", PASSING) == 3
    err = capsys.readouterr().err
    assert err == f"budget-gate: {tmp_path}: cannot write: it is a directory — name a file in it\n"


def test_unknown_format_and_empty_file_name_are_usage_errors(capsys):
    assert check("--format", "yaml", PASSING) == 3
    assert "unknown format 'yaml'" in capsys.readouterr().err
    assert check("--format", "sarif=", PASSING) == 3


def test_an_unwritable_output_leaves_nothing_behind(tmp_path, capsys):
    good = tmp_path / "good.json"
    code = check("--format", f"json={good}", "--format", f"sarif={tmp_path}/no/x.sarif", PASSING)
    assert code == 3
    assert "no/x.sarif: cannot write" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.json"]


def test_without_github_format_the_step_summary_is_left_alone(tmp_path, monkeypatch, capsys):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert check("--format", "json", PASSING) == 0
    assert not summary.exists()


def test_text_check_imports_no_other_reporter():
    probe = (
        "import sys\n"
        "from gate.cli import main\n"
        "code = main(['check', 'examples/cifar-sweep.yaml'])\n"
        "from gate.reporters import REPORTERS\n"
        "names = {path.partition(':')[0] for path in REPORTERS.values()} | {'xml.etree'}\n"
        "loaded = sorted(names & set(sys.modules))\n"
        "print(code, loaded)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert proc.stdout.splitlines()[-1] == "0 ['gate.reporters.text']"


def test_render_context_comes_from_the_environment_and_options():
    import argparse

    from gate.commands.common import render_context
    from gate.evaluation.report import DOCS_URL, RenderContext

    args = argparse.Namespace(policy_dir="./policies/", docs_url=None, base_ref="main")
    env = {"GITHUB_REPOSITORY": "o/r", "GITHUB_WORKFLOW": "ci", "HOME": "/x"}
    assert render_context(args, env) == RenderContext("o/r", "ci", "policies", DOCS_URL, "main")
    assert render_context(args, {}).repository == ""


def test_every_command_has_a_description_and_the_exit_codes():
    from gate.cli import build_parser

    parser = build_parser()
    (commands,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in commands.choices.items():
        assert command.description and len(command.description) > 40, name
        assert command.epilog and "3 invalid input" in command.epilog, name


def test_estimate_speaks_of_one_trial_in_the_singular(write_yaml, capsys):
    spec = write_yaml(
        "one.yaml",
        "apiVersion: budget-gate/v1\nkind: Experiment\nmetadata: {name: one}\n"
        "resources: {accelerator: A100-80GB, gpus_per_trial: 1, precision: bf16}\n"
        "workload: {max_epochs: 1, epoch_minutes: 6}\n"
        "search: {strategy: random, max_trials: 1, seeds: [0]}\n",
    )
    assert main(["estimate", spec]) == 0
    out = capsys.readouterr().out
    assert "= 1 trial × 1 GPU × 0.100 h" in out
    assert "1 epoch, 0.10 h" in out and "(1 wave of 1 concurrent trial)" in out
    assert "1 trial (random max_trials 1 × 1 seed)" in out
    assert "every trial runs its 1 epoch" in out
    assert " 1 trials" not in out and " 1 GPUs" not in out and " 1 seeds" not in out


def test_findings_and_input_errors_start_at_column_1_on_stdout(write_yaml):
    bad = write_yaml("bad.yaml", "apiVersion: budget-gate/v1\nkind: Experiment\nmetadata: [1]\n")
    cmd = [
        sys.executable,
        "-m",
        "gate",
        "check",
        str(ROOT / "examples/llm-finetune-grid.yaml"),
        bad,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
    assert proc.returncode == 3 and proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert any(
        line.startswith(f"{ROOT}/examples/llm-finetune-grid.yaml:21:3: approval BG110 ")
        for line in lines
    ), proc.stdout
    assert any(line.startswith(f"{bad}:3:11: ") for line in lines), proc.stdout


def test_input_errors_go_to_stderr_when_no_report_is_on_stdout(write_yaml, tmp_path):
    bad = write_yaml("bad.yaml", "apiVersion: budget-gate/v1\nkind: Experiment\nmetadata: [1]\n")
    out = tmp_path / "report.json"
    cmd = [sys.executable, "-m", "gate", "check", "--format", f"json={out}", bad]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
    assert proc.returncode == 3 and proc.stdout == ""
    assert f"\n{bad}:3:11: metadata: " in "\n" + proc.stderr
    errors = json.loads(out.read_text())["results"][0]["errors"]
    (error,) = (e for e in errors if e["line"] == 3)
    assert (error["file"], error["line"], error["col"]) == (bad, 3, 11)
    assert error["message"] and error["text"].startswith(f"{bad}:3:11: ")


def _console(*args: str, stdin: str | None = None, env: dict[str, str] | None = None):
    return subprocess.run(
        [sys.executable, "-m", "gate", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env=env,
    )


def test_dash_reads_the_spec_from_stdin():
    text = (ROOT / "examples/llm-finetune-grid.yaml").read_text()
    proc = _console("check", "-", stdin=text)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert (
        "<stdin>:21:3: approval BG110 64 trials is over the approval trigger of 32" in proc.stdout
    )
    broken = _console("check", "-", stdin="apiVersion: [\n")
    assert broken.returncode == 3 and broken.stdout.startswith("<stdin>:")
    twice = _console("check", "-", "-", stdin=text)
    assert twice.returncode == 3 and "may be given once" in twice.stderr


def test_quiet_prints_only_the_findings_and_what_was_taken_as_given():
    proc = _console("check", "-q", "examples/llm-finetune-grid.yaml", "examples/cifar-sweep.yaml")
    assert proc.returncode == 2
    assert proc.stdout == (
        "examples/llm-finetune-grid.yaml:21:3: approval BG110 64 trials is over the approval "
        "trigger of 32\n"
        "examples/llm-finetune-grid.yaml: note: team nlp is taken as the spec declares it: no "
        "policy states which specs it owns (team nlp has no policy file: add nlp.yaml with "
        "owns.specs), so any spec may claim it\n"
    )


def test_rules_list_is_one_line_per_rule(capsys):
    from gate.policy.rules import all_rule_ids

    assert main(["rules", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(all_rule_ids())
    assert any(line.split()[:3] == ["BG110", "large-search", "approval"] for line in lines)


def test_shell_completion_through_argcomplete(tmp_path):
    import os

    out = tmp_path / "completions"
    line = "budget-gate check --fail-on "
    env = dict(
        os.environ,
        _ARGCOMPLETE="1",
        COMP_LINE=line,
        COMP_POINT=str(len(line)),
        _ARGCOMPLETE_STDOUT_FILENAME=str(out),
        _ARGCOMPLETE_IFS="\n",
    )
    proc = _console(env=env)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().split() == ["error", "approval", "warn"]


SPY_PLUGIN = """\
import os
import pathlib

pathlib.Path(os.environ["SPY_MARK"]).write_text("loaded", encoding="utf-8")


class _Spy:
    def new_schema_validator(self, *args, **kwargs):
        return None, None, None


plugin = _Spy()
"""


@pytest.mark.parametrize("setting", [None, "someone-else"])
def test_check_imports_no_pydantic_so_no_plugin_of_it_runs(tmp_path, setting):
    """``check`` validates without pydantic (gate.model): an installed pydantic plugin is
    never loaded, whatever ``PYDANTIC_DISABLE_PLUGINS`` says, and no distribution is scanned
    for one."""
    (tmp_path / "spyplugin.py").write_text(SPY_PLUGIN, encoding="utf-8")
    dist = tmp_path / "spy_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: spy-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[pydantic]\nspy = spyplugin:plugin\n")
    mark = tmp_path / "mark"
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    env |= {"PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}", "SPY_MARK": str(mark)}
    if setting is not None:
        env["PYDANTIC_DISABLE_PLUGINS"] = setting
    proc = _console("check", "examples/cifar-sweep.yaml", env=env)
    assert proc.returncode == 0, proc.stderr
    assert not mark.exists()


def _check_to(stdout: int | None, spec: str = "imagenet-bruteforce.yaml") -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "gate", "check", f"examples/{spec}", "--policy-dir", "policies"],
        stdout=stdout, stderr=subprocess.PIPE, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


def test_a_failing_spec_whose_reader_leaves_early_does_not_exit_0():
    """``check spec | head -1`` under ``pipefail`` must not pass a violation: a reader that
    leaves before the report is written gets 141 (128 + SIGPIPE), never 0."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before a byte is written
    proc = _check_to(write)
    os.close(write)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode in (1, 141), err
    assert b"Traceback" not in err and b"Exception ignored" not in err


def test_passing_specs_whose_reader_leaves_early_are_141_not_0(tmp_path):
    """``check specs/ | head -c 100``: the report, larger than the pipe holds, was not read
    whole, and a pass nobody saw is no pass (docs/cli.md). The reader leaves after its
    first bytes: the write of the rest fails (Python's text stdout took it for done)."""
    specs = tmp_path / "specs"
    specs.mkdir()
    text = (ROOT / "examples" / "cifar-sweep.yaml").read_text(encoding="utf-8")
    for i in range(300):
        (specs / f"s{i}.yaml").write_text(text, encoding="utf-8")
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "default.yaml").write_text("apiVersion: budget-gate/v1\nkind: Policy\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gate", "check", str(specs), "--policy-dir", str(policies)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    assert len(proc.stdout.read(100)) == 100
    proc.stdout.close()
    with proc.stderr:
        err = proc.stderr.read()
    assert proc.wait(timeout=120) == 141, err
    assert b"Traceback" not in err and b"Exception ignored" not in err


def test_a_report_that_cannot_be_written_is_one_line_not_a_traceback():
    with open("/dev/full", "wb") as full:
        failing = _check_to(full.fileno())
        passing = _check_to(full.fileno(), "cifar-sweep.yaml")
        _, failing_err = failing.communicate(timeout=60)
        _, passing_err = passing.communicate(timeout=60)
    assert failing.returncode == passing.returncode == 3  # no report written: never a pass
    said = "budget-gate: cannot write the output (No space left on device)"
    for err in (failing_err.decode(), passing_err.decode()):
        assert len(err.splitlines()) == 1 and err.startswith(said), err


def test_check_under_a_profiler_still_lets_it_save_at_exit(tmp_path):
    """``check`` skips the interpreter's teardown, but not under a profiler or coverage,
    which write what they measured at exit."""
    out = tmp_path / "check.prof"
    proc = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "gate", "check",
         "examples/cifar-sweep.yaml", "--policy-dir", "policies"],
        capture_output=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size > 10_000


def test_check_with_an_exit_hook_registered_leaves_the_usual_way(tmp_path):
    """Coverage (and any tool) that saves in an atexit hook gets its hook run."""
    mark = tmp_path / "saved"
    code = (
        "import atexit, sys\n"
        f"atexit.register(lambda: open({str(mark)!r}, 'w').write('saved'))\n"
        "sys.argv = ['budget-gate', 'check', 'examples/cifar-sweep.yaml', '--policy-dir', "
        "'policies']\n"
        "from gate.cli import run\n"
        "run()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, cwd=ROOT, check=False, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert mark.read_text() == "saved"


def test_a_spec_in_a_folder_named_like_a_spec_file_is_refused(tmp_path, capsys, monkeypatch):
    """A waiver of experiments/nlp/nightly-eval.yaml covered nightly-eval.yaml/a.yaml, b.yaml…
    (gitignore's patterns name a folder of that name and all in it): 28k USD, no approval."""
    monkeypatch.chdir(tmp_path)  # no repository: from this one's root, a spec outside it
    folder = tmp_path / "experiments" / "nightly-eval.yaml"
    folder.mkdir(parents=True)
    (folder / "a.yaml").write_text((ROOT / "examples" / "cifar-sweep.yaml").read_text())
    for command in ("check", "verify"):
        assert main([command, str(folder / "a.yaml")]) == 3
        out = capsys.readouterr()
        assert "the spec lies in a folder named like a spec file (nightly-eval.yaml/)" in (
            out.out + out.err
        )


def test_a_file_named_with_brackets_is_that_file_not_a_glob(tmp_path, monkeypatch, capsys):
    """check 'experiments/[x].yaml' (a pre-commit hook passes names) judged x.yaml instead."""
    spec = (ROOT / "examples" / "cifar-sweep.yaml").read_text()
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "x.yaml").write_text(spec)
    (tmp_path / "experiments" / "[x].yaml").write_text(
        spec.replace("max_trials: 12", "max_trials: 10000")
    )
    monkeypatch.chdir(tmp_path)
    check("--format", "json", "experiments/[x].yaml")
    report = json.loads(capsys.readouterr().out)
    assert [r["file"] for r in report["results"]] == ["experiments/[x].yaml"]
    assert report["results"][0]["estimate"]["worst"]["trials"] == 20000  # 10,000 × 2 seeds


def test_a_glob_says_the_hidden_folders_it_does_not_search(tmp_path, monkeypatch, capsys):
    spec = (ROOT / "examples" / "cifar-sweep.yaml").read_text()
    (tmp_path / "experiments" / ".drafts").mkdir(parents=True)
    (tmp_path / "experiments" / ".drafts" / "big.yaml").write_text(spec)
    (tmp_path / "experiments" / "a.yaml").write_text(spec)
    monkeypatch.chdir(tmp_path)
    check("--format", "json", "experiments/**")
    out = capsys.readouterr()
    assert [r["file"] for r in json.loads(out.out)["results"]] == ["experiments/a.yaml"]
    assert "experiments/.drafts is a hidden folder, not searched by a glob" in out.err


@pytest.mark.parametrize(
    "argv", [["rules"], ["schema"], ["prices"], ["policy", "check", "policies"]]
)
def test_every_command_that_cannot_write_its_output_is_one_line_exit_3(argv):
    """``rules``, ``schema``, ``prices``, ``policy check`` printed straight to stdout: a full
    disk was an internal error (exit 70)."""
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "gate", *argv], stdout=full, stderr=subprocess.PIPE,
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False, timeout=120,
        )  # fmt: skip
    err = proc.stderr.decode()
    assert proc.returncode == 3, err
    assert err.startswith("budget-gate: cannot write the output (No space left on device)")


def test_check_says_it_did_not_read_the_ledger_the_environment_names(capsys, monkeypatch):
    """A plain check reads no ledger: with ``MLFLOW_TRACKING_URI`` set, a spec that needs an
    approval says that approvals recorded there were not counted, and how to count them."""
    argv = ["check", "examples/llm-finetune-grid.yaml", "--policy-dir", "policies", "-q"]
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert main(argv) == 2
    assert "were not read" not in capsys.readouterr().err
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:9")  # never contacted
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "approvals recorded in the ledger at $MLFLOW_TRACKING_URI were not read" in err
    assert 'pass --tracking-uri "$MLFLOW_TRACKING_URI" to count them' in err


def test_check_says_it_did_not_read_the_default_ledger_approve_writes(
    tmp_path, capsys, monkeypatch
):
    """After ``approve`` wrote the default ledger (mlflow.db at the repository root), a plain
    check of the spec still needs approval: it says the ledger was not read, and where."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    shutil.copytree(ROOT / "policies", repo / "policies")
    (repo / "experiments").mkdir()
    shutil.copy(ROOT / "examples" / "llm-finetune-grid.yaml", repo / "experiments" / "g.yaml")
    monkeypatch.chdir(repo)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    argv = ["check", "experiments/g.yaml", "-q"]
    assert main(argv) == 2
    assert "were not read" not in capsys.readouterr().err  # no ledger yet: nothing to say
    (repo / "mlflow.db").write_bytes(b"")
    assert main(argv) == 2
    err = capsys.readouterr().err
    ledger = f"sqlite:///{(repo / 'mlflow.db').as_posix()}"
    assert f"approvals recorded in the default ledger, {ledger}, were not read" in err
    assert f"pass --tracking-uri {ledger} to count them" in err


def test_verify_says_an_input_error_once_at_column_1(tmp_path, capsys):
    """With its text report on stdout, verify's input errors are there, not twice."""
    spec = tmp_path / "typo.yaml"
    text = (ROOT / "examples" / "cifar-sweep.yaml").read_text(encoding="utf-8")
    spec.write_text(text.replace("max_epochs:", "max_epoch:"), encoding="utf-8")
    policies = str(tmp_path / "policies")  # beside the spec: this repository's lie outside it
    shutil.copytree(ROOT / "policies", policies)
    assert main(["verify", str(spec), "--policy-dir", policies]) == 3
    out, err = capsys.readouterr()
    assert f"{spec}:16:3: unknown key 'max_epoch' in workload" in out
    assert "max_epoch'" not in err
    assert main(["verify", str(spec), "--policy-dir", policies, "--format", "json"]) == 3
    assert f"{spec}:16:3: unknown key 'max_epoch' in workload" in capsys.readouterr().err


def test_estimate_and_diff_name_the_policy_that_priced_each_side(capsys):
    """Every output names the policy it used, the built-in default or a team's."""
    assert main(["estimate", "examples/cifar-sweep.yaml", "--format", "json"]) == 0
    (estimate,) = json.loads(capsys.readouterr().out)["estimates"]
    assert estimate["policy"] == "vision ← default"
    argv = ["diff", "examples/cifar-sweep.yaml", "examples/llm-finetune-grid.yaml"]
    assert main(argv) == 0
    assert "  policy: vision ← default (base), default (head)\n" in capsys.readouterr().out
    assert main([*argv, "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["policy"] == {"base": "vision ← default", "head": "default"}


def test_a_slow_reader_of_a_non_blocking_stdout_gets_the_whole_report(tmp_path):
    """A full non-blocking pipe (EAGAIN) is a reader still to come, not a full disk."""
    import fcntl

    specs = tmp_path / "specs"
    specs.mkdir()
    text = (ROOT / "examples" / "imagenet-bruteforce.yaml").read_text(encoding="utf-8")
    for i in range(100):
        (specs / f"s{i}.yaml").write_text(text, encoding="utf-8")
    read, write = os.pipe()
    fcntl.fcntl(write, fcntl.F_SETFL, fcntl.fcntl(write, fcntl.F_GETFL) | os.O_NONBLOCK)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gate", "check", str(specs), "--policy-dir", "policies"],
        stdout=write, stderr=subprocess.PIPE, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    os.close(write)
    time.sleep(2)  # the report (hundreds of KB) is past what the pipe holds by now
    with os.fdopen(read, "rb") as reader:
        out = reader.read()
    _, err = proc.communicate(timeout=120)
    assert len(out) > 200_000
    assert proc.returncode == 1, err  # violations, read whole
    assert out.rstrip().endswith(b"verdict: violation (exit 1)"), out[-300:]


def test_a_stdout_that_cannot_show_a_character_gets_it_escaped_not_a_crash():
    proc = subprocess.run(
        [sys.executable, "-m", "gate", "check", "examples/cifar-sweep.yaml", "--policy-dir",
         "policies"],
        capture_output=True, cwd=ROOT, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "ascii"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert b"cifar10-resnet18-sweep (policy: vision \\u2190 default)" in proc.stdout


def test_check_of_a_kubernetes_job_says_kueue_judges_it(tmp_path, capsys):
    job = tmp_path / "job.yaml"
    job.write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: sample-job}\n"
        "spec: {template: {spec: {containers: [{name: c, image: busybox}]}}}\n"
    )
    assert main(["check", str(job), "--policy-dir", "policies", "-q"]) == 3
    out = capsys.readouterr().out
    assert f"{job}:2:7: Job (batch/v1) is a Kubernetes object, not an experiment spec" in out
    assert "did you mean" not in out


def test_a_windows_path_and_a_link_loop_get_their_own_fix(tmp_path, capsys, monkeypatch):
    """ "no such file — check the path" for experiments\\a.yaml, and "check permissions" for a
    link to itself, sent a newcomer looking in the wrong place."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "experiments").mkdir()
    shutil.copy(PASSING, tmp_path / "experiments" / "a.yaml")
    (tmp_path / "loop.yaml").symlink_to("loop.yaml")
    assert main(["check", "-q", "experiments\\a.yaml", "loop.yaml", "nope.yaml"]) == 3
    out = capsys.readouterr().out
    assert (
        "experiments\\a.yaml: no such file — write the path with /, as in experiments/a.yaml" in out
    )
    assert "loop.yaml: cannot read (Too many levels of symbolic links) — a link that leads" in out
    assert "nope.yaml: no such file — check the path, or quote a glob" in out


def test_no_command_shows_the_commands_not_one_error_line(capsys):
    """A first try of ``budget-gate`` alone: the help lists what to run (still exit 3)."""
    assert main([]) == 3
    err = capsys.readouterr().err
    assert err.startswith("usage: budget-gate")
    assert "budget-gate check examples/cifar-sweep.yaml" in err and "verify" in err
