"""A Hydra defaults-list group path that leaves the config's folder is refused unread.

In the Action the config comes from a pull request: ``model: /tmp/secretcfg`` or
``model: ../../../tmp/secretcfg`` read a file of the runner, and the errors named it and
the keys it set. The real CLI checks a config on disk beside a secret outside its folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.cli import main
from tests.test_formats_strict_keys import DEFAULT, VISION

CONFIG = """\
defaults:
  - _self_
  {entry}
x-budget-gate: {{team: vision}}
trainer: {{max_epochs: 10}}
hydra:
  sweeper:
    params:
      lr: 0.1,0.01
"""
SECRET = "# @package _global_\ntrainer: {max_epochs: 1000}\nrunner_token_key: hunter2\n"


def check(tmp_path: Path, entry: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The config (in repo/conf/) checked; the secret lies in secret/, beside repo/."""
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "default.yaml").write_text(DEFAULT)
    (policies / "vision.yaml").write_text(VISION)
    secret = tmp_path / "secret" / "secretcfg.yaml"
    secret.parent.mkdir()
    secret.write_text(SECRET)
    conf = tmp_path / "repo" / "conf"
    (conf / "model").mkdir(parents=True)
    (conf / "model" / "small.yaml").write_text("width: 64\n")
    (conf / "model" / "link.yaml").symlink_to(secret)
    config = conf / "config.yaml"
    config.write_text(CONFIG.format(entry=entry.replace("SECRET", str(secret.with_suffix("")))))
    code = main(["check", "--policy-dir", str(policies), str(config)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_a_group_beside_the_config_is_read(tmp_path, capsys):
    code, out = check(tmp_path, "- model: small", capsys)
    assert code == 1, out  # read, and judged by the vision policy


@pytest.mark.parametrize(
    "entry",
    [
        "- model: SECRET",  # an absolute path
        "- model: ../../../secret/secretcfg",
        "- model: link",  # a symlink out of the folder
        "- ../../secret/secretcfg",  # a config by its path
        "- ../../secret: secretcfg",  # a group path
        "- override /../../secret: secretcfg",
    ],
)
def test_a_group_path_out_of_the_configs_folder_is_refused_unread(tmp_path, capsys, entry):
    code, out = check(tmp_path, entry, capsys)
    assert code == 3
    assert "config.yaml:3:5:" in out and "the group path leaves the config's folder" in out
    assert "secret/secretcfg.yaml" not in out and "runner_token_key" not in out
    assert "max_epochs" not in out  # nothing the file sets is said
