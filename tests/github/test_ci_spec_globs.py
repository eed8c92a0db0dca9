"""The Action judges every spec file ``check`` would, and names the spec-like files it leaves out.

Issue 21 #13: with the old default globs (``experiments/**/*.yaml``) a pull request that
adds ``b.yml``, ``c.YAML`` or ``d.json`` got no comment, label or approval request, though
``budget-gate check`` judges each of them. The default is now ``experiments/**`` (every
``.yaml``/``.yml``/``.json`` under it, any case), and a changed file outside the globs that
declares ``kind: Experiment`` (``Experiments/f.yaml``) is listed in the comment and
annotated. Runs the real ``budget-gate ci`` against the fake GitHub.
"""

from __future__ import annotations

import datetime as dt
import json

import yaml

from tests.github.ci_kit import T0, PullRequestStory, grid_spec

HOUR = dt.timedelta(hours=1)
BIG = grid_spec(4)  # 64 trials: needs an approval under the base policy (over 32)


def test_every_spec_file_under_the_default_globs_is_judged(story: PullRequestStory) -> None:
    judged = {
        "experiments/b.yml": BIG,
        "experiments/c.YAML": BIG,
        "experiments/d.json": json.dumps(yaml.safe_load(BIG)),
        "experiments/team/e.yaml": BIG,
    }
    ignored = {
        "Experiments/f.yaml": BIG,  # a spec, outside the globs (another directory, on Linux)
        "configs/sweep.json": json.dumps({"kind": "Experiment", "metadata": {"name": "x"}}),
        "docs/notes.yaml": "title: not a spec\n",  # outside, and no kind: Experiment
        "experiments/README.md": "# kind: Experiment\n",  # not a spec file
    }
    story.push({**judged, **ignored}, at=T0 + HOUR)
    story.specs = ""  # the action's default
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 0, ran.stderr
    assert sorted(r["file"] for r in ran.report["results"]) == sorted(judged)
    assert {r["outcome"] for r in ran.report["results"]} == {"approval-required"}
    assert story.status()[0] == "pending" and "budget-approval-required" in story.labels
    (comment,) = story.bot_comments()
    section = comment.split("### ⚠️ Specs this run did not judge", 1)[1]
    assert "- `Experiments/f.yaml`" in section and "- `configs/sweep.json`" in section
    assert "docs/notes.yaml" not in comment and "README.md" not in comment
    warnings = [line for line in ran.stdout.splitlines() if "spec not judged" in line]
    assert len(warnings) == 2
    assert warnings[0].startswith("::warning file=Experiments/f.yaml,title=budget-gate")


def test_a_negated_glob_takes_files_back(story: PullRequestStory) -> None:
    story.push({"experiments/a.yaml": BIG, "experiments/drafts/b.yaml": BIG}, at=T0 + HOUR)
    story.specs = "experiments/** !experiments/drafts/**"
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert [r["file"] for r in ran.report["results"]] == ["experiments/a.yaml"]
    (comment,) = story.bot_comments()
    assert "- `experiments/drafts/b.yaml`" in comment  # taken back, so said not judged


def test_only_unjudged_specs_still_get_a_comment(story: PullRequestStory) -> None:
    story.push({"Experiments/f.yaml": BIG}, at=T0 + HOUR)
    story.specs = ""
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 0 and ran.report["results"] == []
    (comment,) = story.bot_comments()
    assert "- `Experiments/f.yaml`" in comment
    assert story.status() == ("success", "no experiment spec changed")
