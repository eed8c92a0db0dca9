"""The Action names every changed spec it leaves out, and says what it did not read.

Red team (paths, B): the list of "Specs this run did not judge" matched ``kind: Experiment``
as text, so a spec spelled ``kind: !!str Experiment``, ``kind: &k Experiment``, with a
comment or a line break before the value, as ``? kind``, or with an escape
(``"Experim\\x65nt"``, a JSON ``\\u006bind``) was never listed, though ``budget-gate verify``
judges each as a spec; nor was an engine's file (a W&B sweep) that a launch judges as one.
Only the first 50 changed files outside the globs were read, and a file that could not be
read was dropped, both without a word. Runs the real ``budget-gate ci`` against the fake
GitHub.
"""

from __future__ import annotations

import datetime as dt

from tests.github.ci_kit import NUMBER, SPEC, T0, PullRequestStory, grid_spec
from tests.github.state import FileChange

HOUR = dt.timedelta(hours=1)
NOT_JUDGED = "### ⚠️ Specs this run did not judge"
SPEC_TEXT = "apiVersion: budget-gate/v1\nkind: Experiment\n"
NOT_READ = "### ⚠️ Files this run could not tell are specs"
SPELLINGS = {
    "configs/tag.yaml": "kind: !!str Experiment\nmetadata: {name: a}\n",
    "configs/anchor.yaml": "kind: &k Experiment\nmetadata: {name: b}\n",
    "configs/comment.yaml": "kind: # the kind\n  Experiment\nmetadata: {name: c}\n",
    "configs/complex-key.yml": "? kind\n: Experiment\nmetadata: {name: d}\n",
    "configs/escape.YAML": 'kind: "Experim\\x65nt"\nmetadata: {name: e}\n',
    "configs/escaped-key.json": '{"\\u006bind": "Experiment", "metadata": {"name": "f"}}',
    "configs/sweep.yaml": "method: grid\nparameters: {lr: {values: [0.1, 0.2]}}\n",  # W&B
}


def _section(comment: str, title: str) -> str:
    assert title in comment, comment
    return comment.split(title, 1)[1].split("###", 1)[0]


def test_a_spec_is_found_by_parsing_it_however_it_is_spelled(story: PullRequestStory) -> None:
    others = {
        "configs/notes.yaml": "title: not a spec\nkind: Notes\n",
        "configs/broken.yaml": "kind: Experiment\nkind: Experiment\n",  # every launch refuses it
    }
    story.push({**SPELLINGS, **others}, at=T0 + HOUR)
    story.specs = ""  # experiments/**
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 0, ran.stderr
    (comment,) = story.bot_comments()
    listed = _section(comment, NOT_JUDGED)
    assert sorted(line[3:-1] for line in listed.splitlines() if line.startswith("- `")) == sorted(
        SPELLINGS
    )
    assert "notes.yaml" not in comment and "broken.yaml" not in comment
    assert NOT_READ not in comment  # every file was read
    warned = [line for line in ran.stdout.splitlines() if "spec not judged" in line]
    assert sorted(line.split("file=", 1)[1].split(",", 1)[0] for line in warned) == sorted(
        SPELLINGS
    )
    unjudged = ran.report["unjudged"]  # the JSON report a later step reads says it too
    assert sorted(unjudged["specs"]) == sorted(SPELLINGS)
    assert unjudged["unread"] == [] and unjudged["not_read"] == []


def test_a_file_that_cannot_be_read_is_said_to_be_unread(story: PullRequestStory) -> None:
    story.push({"configs/plain.yaml": SPELLINGS["configs/tag.yaml"]}, at=T0 + HOUR)
    story.repo.put_link("configs/link.yaml", "../../elsewhere/spec.yaml", ref=story.head)
    files = story.repo.pull(NUMBER).files
    files.append(FileChange(filename="configs/link.yaml", status="added"))
    files.append(FileChange(filename="vendor/module.yaml", status="added"))  # no file: a gitlink
    story.specs = ""
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 0, ran.stderr
    (comment,) = story.bot_comments()
    assert "- `configs/plain.yaml`" in _section(comment, NOT_JUDGED)
    unread = _section(comment, NOT_READ)
    assert "- `configs/link.yaml`: configs/link.yaml: a symbolic link" in unread
    assert "- `vendor/module.yaml`: no file at the head commit" in unread
    warnings = [line for line in ran.stdout.splitlines() if line.startswith("::warning")]
    assert any(
        "configs/link.yaml is outside the specs globs and was not read" in w for w in warnings
    )
    assert any(
        "vendor/module.yaml is outside the specs globs and was not read" in w for w in warnings
    )
    unjudged = ran.report["unjudged"]
    assert unjudged["specs"] == ["configs/plain.yaml"]
    assert [u["file"] for u in unjudged["unread"]] == ["configs/link.yaml", "vendor/module.yaml"]


def test_past_the_cap_the_files_not_read_are_named(story: PullRequestStory) -> None:
    plain = {f"docs/page-{i:02}.yaml": f"title: page {i}\n" for i in range(50)}
    late = {
        "docs/z-last.yaml": "title: last\n",
        "configs/z-spec.yaml": SPELLINGS["configs/anchor.yaml"],
    }
    story.push({**plain, **late}, at=T0 + HOUR)
    story.specs = ""
    ran = story.run("pull_request.opened", story.pull_request_event())
    assert ran.code == 0, ran.stderr
    (comment,) = story.bot_comments()
    assert NOT_JUDGED not in comment  # the one spec lies past the cap: not read, not known
    unread = _section(comment, NOT_READ)
    assert "- 2 more, not read (a run reads at most 50):" in unread
    assert "- `docs/z-last.yaml`" in unread and "- `configs/z-spec.yaml`" in unread
    assert "page-49" not in unread  # the first 50 were read
    (warning,) = [line for line in ran.stdout.splitlines() if "were not read" in line]
    assert "2 changed spec files outside the specs globs were not read" in warning
    assert warning.endswith("docs/z-last.yaml, configs/z-spec.yaml")
    assert ran.report["unjudged"]["not_read"] == ["docs/z-last.yaml", "configs/z-spec.yaml"]


def test_a_flood_of_long_outside_paths_never_keeps_a_withdrawn_approval_green(story) -> None:
    """The author pads the outside-the-globs section past GitHub's comment limit: the comment
    is cut to fit (the files counted, each named in the log), and the run that withdraws an
    approval sets the status before anything else it writes."""
    deep = "/".join(["d" * 250] * 12)
    story.change(SPEC, grid_spec(4), at=T0 + HOUR)
    for i in range(20):
        story.change(f"other/{deep}/{'p' * 99}/spec-{i:02d}.yaml", SPEC_TEXT, at=T0 + HOUR)
    assert story.run("pull_request.opened", story.pull_request_event()).code == 0
    review = story.review_event("alice", at=T0 + 2 * HOUR)
    assert story.run("pull_request_review", review).code == 0
    assert story.status()[0] == "success"
    withdrawn = story.review_event("alice", at=T0 + 3 * HOUR, state="changes_requested")
    ran = story.run("pull_request_review", withdrawn)
    assert ran.code == 0, ran.stderr
    assert story.status()[0] == "pending"
    (comment,) = story.bot_comments()
    assert len(comment.encode("utf-16-le")) // 2 <= 65_536
    assert "20 files, each named in the job's log" in comment
