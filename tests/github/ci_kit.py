"""Drive the real ``budget-gate ci`` process against the fake GitHub, one event at a time.

Why: the Action is a process that reads a webhook payload and the workflow's environment and
talks HTTP to GitHub. ``PullRequestStory`` sets up a pull request in the fake (policies at the
base commit, a spec changed at the head, commits with chosen dates), builds each event from the
real payloads in tests/fixtures/github/events (overriding only what the case needs), runs
``python -m gate ci`` as a subprocess in a workspace whose own ``policies/`` are hostile, and
hands back what the step printed and wrote. Every run checks that the token never leaked.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import ROOT
from tests.github.events import load_event
from tests.github.fake_github import FakeGitHub
from tests.github.state import FileChange, Repo, fake_sha
from tests.mlflow_server import zygote

REPO = "Codertocat/Hello-World"
NUMBER = 2
AUTHOR = "Codertocat"
HEAD = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
BASE = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"
SPEC = "experiments/llm-grid.yaml"
T0 = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) - dt.timedelta(days=1)

SPEC_TEXT = (ROOT / "examples" / "llm-finetune-grid.yaml").read_text(encoding="utf-8")
GRID_LINE = "    warmup_ratio: {values: [0.0, 0.03, 0.1, 0.2]}"
assert GRID_LINE in SPEC_TEXT

POLICY = """\
apiVersion: budget-gate/v1
kind: Policy
prices: {overrides: {H100: {on-demand: 8}}}
limits: {max_experiment_cost: 20000, max_gpus_per_trial: 8}
approval:
  trials_over: 32
  approvers:
    users: [alice]
    teams: [Octocoders/budget-approvers]
    permission: maintain
"""
# The checkout is the pull request's head: a hostile PR can put anything in policies/.
HOSTILE_POLICY = """\
apiVersion: budget-gate/v1
kind: Policy
prices: {overrides: {H100: {on-demand: 0.01}}}
approval: {trials_over: 1000000, approvers: {users: [Codertocat], allow_self_approval: true}}
"""


def fresh() -> dt.datetime:
    """A moment ago: a ``/budget-gate approve`` binds to the head only while it is new."""
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0) - dt.timedelta(seconds=30)


def grid_spec(warmups: int = 4, *, name: str = "llama-8b-lora-grid") -> str:
    """The example grid (4 × 4 × ``warmups`` trials of one H100) under ``name``."""
    values = ", ".join(str(round(0.01 * i, 2)) for i in range(warmups))
    text = SPEC_TEXT.replace(GRID_LINE, f"    warmup_ratio: {{values: [{values}]}}")
    return text.replace("name: llama-8b-lora-grid", f"name: {name}")


@dataclass
class CiRun:
    """One finished ``budget-gate ci`` step."""

    code: int
    stdout: str
    stderr: str
    env: dict[str, str]

    @property
    def summary(self) -> str:
        return Path(self.env["GITHUB_STEP_SUMMARY"]).read_text(encoding="utf-8")

    @property
    def outputs(self) -> dict[str, str]:
        text = Path(self.env["GITHUB_OUTPUT"]).read_text(encoding="utf-8")
        return dict(line.split("=", 1) for line in text.splitlines() if line)

    @property
    def report(self) -> dict[str, Any]:
        return json.loads(Path(self.outputs["report-json"]).read_text(encoding="utf-8"))


class PullRequestStory:
    """Codertocat/Hello-World PR #2 (by Codertocat) as the fake sees it, and runs against it."""

    def __init__(self, fake: FakeGitHub, github_env: Any, workspace: Path) -> None:
        self.fake = fake
        self.github_env = github_env
        self.workspace = workspace
        self.specs = "experiments/**/*.yaml"
        self.extra_env: dict[str, str] = {}
        self.runs = 0
        (workspace / "policies").mkdir(parents=True, exist_ok=True)
        (workspace / "policies" / "default.yaml").write_text(HOSTILE_POLICY, encoding="utf-8")
        self.opened = load_event("pull_request.opened")
        fake.seed_from_event(self.opened)
        self.repo.put_file("policies/default.yaml", POLICY, ref=BASE)
        self.repo.commits[BASE].date = T0
        self.repo.set_permission("alice", "write")
        fake.add_team("Octocoders", "budget-approvers", members=["carol"])

    @property
    def repo(self) -> Repo:
        return self.fake.repo(REPO)

    @property
    def head(self) -> str:
        return self.repo.pull(NUMBER).head_sha

    def change(self, path: str, text: str | None, *, at: dt.datetime, before: str | None = None):
        """Make the head commit change ``path`` (to ``text``; None removes it), dated ``at``."""
        self.repo.change_file(NUMBER, path, before=before, after=text)
        self.repo.commits[self.head].date = at

    def push(self, files: dict[str, str], *, at: dt.datetime, **who: Any) -> str:
        """A new head commit on top of the current one, changing ``files``, dated ``at``.

        ``who`` goes to :meth:`Repo.add_commit` (``author``, ``committer``, ``linked``), and
        ``merging`` names a second parent (a merge).
        """
        repo, pull = self.repo, self.repo.pull(NUMBER)
        old = pull.head_sha
        merging = who.pop("merging", None)
        sha = fake_sha(REPO, "push", len(repo.commits))
        repo.contents[sha] = dict(repo.files_at(old))
        changes = []
        for path, text in files.items():
            repo.put_file(path, text, ref=sha)
            changes.append(FileChange(filename=path))
            if not any(f.filename == path for f in pull.files):
                pull.files.append(FileChange(filename=path, status="added"))
        parents = [old, merging] if merging else [old]
        repo.add_commit(sha, date=at, files=changes, parents=parents, branch=pull.head_ref, **who)
        pull.head_sha = sha
        return sha

    # --- events -----------------------------------------------------------------------------

    def pull_request_event(self, action: str = "opened") -> dict[str, Any]:
        name = "pull_request.synchronize" if action == "synchronize" else "pull_request.opened"
        payload = load_event(name, action=action, pull_request__head__sha=self.head)
        return payload

    def review_event(self, login: str, *, at: dt.datetime, state: str = "approved", **extra):
        payload = load_event(
            "pull_request_review.submitted.commented",
            pull_request__head__sha=self.head,
            review__state=state,
            review__submitted_at=at.isoformat().replace("+00:00", "Z"),
            review__commit_id=extra.pop("commit_id", self.head),
            review__id=extra.pop("id", 237895671 + len(self.repo.pull(NUMBER).reviews)),
            review__user={"login": login, "type": extra.pop("type", "User")},
            sender={"login": login},
        )
        return payload

    def comment_event(self, login: str, body: str, *, at: dt.datetime, **extra: Any):
        payload = load_event("issue_comment.created.on-pull-request")
        payload["repository"] = copy.deepcopy(self.opened["repository"])
        payload["issue"]["number"] = NUMBER
        payload["issue"]["user"] = copy.deepcopy(self.opened["pull_request"]["user"])
        stamp = at.isoformat().replace("+00:00", "Z")
        payload["comment"].update(
            body=body,
            created_at=stamp,
            updated_at=stamp,
            id=extra.pop("id", 546616131 + len(self.repo.comments)),
            user={**payload["comment"]["user"], "login": login, "type": extra.pop("type", "User")},
        )
        payload["sender"] = {**payload["sender"], "login": login}
        return payload

    # --- running the step -------------------------------------------------------------------

    def run(self, event: str, payload: dict[str, Any], *, seed: bool = True, **env: str) -> CiRun:
        """Run ``budget-gate ci`` for one event (:meth:`_ci`); the token must never show up.

        ``seed=False`` replays an event without letting it move the fake's pull request (a
        delayed run for an older head).
        """
        step = self.github_env(event, payload=payload, seed=seed)
        step.update(
            PYTHONWARNINGS="error",  # like pytest's filterwarnings = error, in the child too
            BUDGET_GATE_SPECS=self.specs,
            RUNNER_TEMP=str(self.workspace.parent),
            **self.extra_env,
            **env,
        )
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("GITHUB_", "RUNNER_", "BUDGET_GATE_", "MLFLOW_TRACKING"))
        }
        code, stdout, stderr = self._ci({**base, **step})
        ran = CiRun(code, stdout, stderr, step)
        self.assert_no_token(ran)
        return ran

    def _ci(self, env: dict[str, str]) -> tuple[int, str, str]:
        """``python -m gate ci`` in the workspace: its exit code, stdout and stderr.

        The step is forked from a process that imported the program, PyGithub and the CI
        path once, under ``-W error`` as ``PYTHONWARNINGS=error`` has it (:mod:`tests.zygote`:
        0.4 s of the 0.55 s of CPU a fresh process spends, on each of some hundred steps).
        Every step of a test process shares that process's hash seed.
        """
        self.runs += 1
        out = self.workspace.parent / f"ci-{self.runs}.out"
        err = self.workspace.parent / f"ci-{self.runs}.err"
        start = {"env": env, "stdout": str(out), "stderr": str(err), "argv": ["ci"],
                 "cwd": str(self.workspace)}  # fmt: skip
        child = zygote("ci", env, ("-W", "error")).fork(start)
        try:
            code = child.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(timeout=30)
            raise
        return code, out.read_text(encoding="utf-8"), err.read_text(encoding="utf-8")

    def assert_no_token(self, ran: CiRun) -> None:
        token = self.fake.token
        places = {
            "stdout": ran.stdout,
            "stderr": ran.stderr,
            "summary": ran.summary,
            "outputs": Path(ran.env["GITHUB_OUTPUT"]).read_text(encoding="utf-8"),
            "comments": "\n".join(c.body for c in self.repo.comments.values()),
            "statuses": "\n".join(str(s) for s in self.repo.statuses),
        }
        if "report-json" in ran.outputs:
            places["report"] = Path(ran.outputs["report-json"]).read_text(encoding="utf-8")
        leaked = [name for name, text in places.items() if token in text]
        assert not leaked, f"the token leaked into {leaked}"

    # --- what GitHub shows ------------------------------------------------------------------

    def status(self, sha: str | None = None) -> tuple[str, str]:
        (found,) = [
            s for s in self.repo.latest_statuses(sha or self.head) if s.context == "budget-gate"
        ]
        return found.state, found.description or ""

    def comments(self) -> list[str]:
        return [c.body for c in self.repo.comments_on(NUMBER)]

    def bot_comments(self) -> list[str]:
        return [c.body for c in self.repo.comments_on(NUMBER) if c.author.endswith("[bot]")]

    @property
    def labels(self) -> list[str]:
        return self.repo.issue(NUMBER).labels

    @property
    def requested(self) -> tuple[list[str], list[str]]:
        pull = self.repo.pull(NUMBER)
        return pull.requested_users, pull.requested_teams
