"""Real GitHub webhook payloads, adjusted per test, and the environment a workflow step sees.

Why: ``budget-gate ci`` reads GITHUB_EVENT_PATH (the triggering event's webhook payload) and the
other GITHUB_* variables Actions sets. Tests start from the real payloads in
tests/fixtures/github/events (never edited copies) and override the few fields a case needs, so
the CLI always meets GitHub's full payload shape. ``seed`` puts what a payload talks about into
the fake GitHub, so the API and the event agree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.conftest import FIXTURES
from tests.github.render import swap_strings
from tests.github.state import GitHubState, PullRequest, Repo, fake_sha

EVENTS_DIR = FIXTURES / "github" / "events"
DELETE: Any = object()  # override value that removes the key, e.g. installation=DELETE


def event_names() -> list[str]:
    """The payload fixtures available, e.g. ``pull_request.opened``."""
    return sorted(p.stem for p in EVENTS_DIR.glob("*.json"))


def event_name_of(fixture: str) -> str:
    """GITHUB_EVENT_NAME for a fixture: the part before the first dot."""
    return fixture.split(".", 1)[0]


def load_event(name: str, **overrides: Any) -> dict[str, Any]:
    """The payload ``<name>.json`` with deep ``overrides`` applied (see ``apply_overrides``)."""
    payload: dict[str, Any] = json.loads((EVENTS_DIR / f"{name}.json").read_text(encoding="utf-8"))
    return apply_overrides(payload, overrides)


def apply_overrides(payload: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Set values by path, in place; returns ``payload``.

    A key is a path with ``__`` or ``.`` between parts (``pull_request__head__sha``, or
    ``**{"review.state": "approved"}``); a numeric part indexes a list. A dict value is merged
    into an existing dict; ``DELETE`` removes the key; anything else replaces it.
    """
    for key, value in overrides.items():
        _set(payload, key.replace("__", ".").split("."), value)
    return payload


def _set(node: Any, path: list[str], value: Any) -> None:
    *parents, last = path
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    key: Any = int(last) if isinstance(node, list) else last
    if value is DELETE:
        if isinstance(node, list) or key in node:
            del node[key]
    elif isinstance(value, dict) and isinstance(node, dict) and isinstance(node.get(key), dict):
        for sub, sub_value in value.items():
            _set(node[key], [sub], sub_value)
    else:
        node[key] = value


# --- seeding the fake from a payload ---------------------------------------------------------


def _account(state: GitHubState, user: Mapping[str, Any] | None) -> str | None:
    if not user:
        return None
    state.add_user(user["login"], type=user.get("type", "User"), id=user.get("id"))
    return str(user["login"])


def seed(state: GitHubState, payload: Mapping[str, Any]) -> Repo:
    """Create the repository, PR/issue, comment and review ``payload`` refers to."""
    data = payload["repository"]
    _account(state, data["owner"])
    _account(state, payload.get("sender"))
    if "organization" in payload:
        state.add_org(payload["organization"]["login"], id=payload["organization"].get("id"))
    repo = state.add_repo(
        data["full_name"],
        default_branch=data.get("default_branch") or "main",
        private=bool(data.get("private")),
        id=data.get("id"),
        owner_type=data["owner"].get("type", "User"),
    )
    number = None
    if "pull_request" in payload:
        number = _seed_pull(state, repo, payload["pull_request"]).number
        if "base" in (payload.get("changes") or {}):  # an edit of the base: GitHub dates it
            repo.base_edited(number, by=payload["sender"]["login"])
    elif "issue" in payload:
        number = _seed_issue(repo, payload["issue"])
    if number is not None and "comment" in payload:
        _seed_comment(state, repo, number, payload["comment"])
    if number is not None and "review" in payload:
        review = payload["review"]
        repo.add_review(
            number,
            str(_account(state, review["user"])),
            review["state"],
            commit_id=review.get("commit_id"),
            submitted_at=review.get("submitted_at"),
            body=review.get("body") or "",
            id=review.get("id"),
        )
    return repo


def _seed_pull(state: GitHubState, repo: Repo, data: Mapping[str, Any]) -> PullRequest:
    head, base = data["head"], data["base"]
    head_repo = (head.get("repo") or {}).get("full_name") or repo.full_name
    if head_repo != repo.full_name:
        _account(state, head["repo"]["owner"])
        state.add_repo(head_repo, fork=True, id=head["repo"].get("id"))
    existing = repo.issues.get(data["number"])
    if isinstance(existing, PullRequest):  # e.g. a synchronize after an opened
        existing.head_sha = head["sha"]
        repo.ensure_commit(head["sha"])
        home = repo.state.repos[existing.head_repo] if existing.head_repo else repo
        home.branches[existing.head_ref] = head["sha"]
        return existing
    pull = repo.add_pull(
        data["number"],
        author=str(_account(state, data["user"])),
        head_sha=head["sha"],
        head_ref=head["ref"],
        base_sha=base["sha"],
        base_ref=base["ref"],
        title=data.get("title") or "",
        body=data.get("body"),
        state=data.get("state", "open"),
        labels=[label["name"] for label in data.get("labels") or []],
        draft=bool(data.get("draft")),
        head_repo=head_repo,
        id=data.get("id"),
        created_at=data.get("created_at"),
    )
    for user in data.get("requested_reviewers") or []:
        pull.requested_users.append(str(_account(state, user)))
    for team in data.get("requested_teams") or []:
        state.add_team(repo.owner, team["slug"], name=team.get("name"), id=team.get("id"))
        pull.requested_teams.append(team["slug"])
    if data.get("merge_commit_sha"):
        pull.merge_commit_sha = data["merge_commit_sha"]
        repo.ensure_commit(data["merge_commit_sha"])
    return pull


def _seed_issue(repo: Repo, data: Mapping[str, Any]) -> int:
    number = int(data["number"])
    if number in repo.issues:
        return number
    _account(repo.state, data["user"])
    labels = [label["name"] for label in data.get("labels") or []]
    common = {"author": data["user"]["login"], "title": data.get("title") or "", "labels": labels}
    if "pull_request" in data:  # a PR comment's payload has no head/base: make them up
        repo.add_pull(number, body=data.get("body"), id=data.get("id"), **common)
    else:
        repo.add_issue(number, body=data.get("body"), **common)
    return number


def _seed_comment(state: GitHubState, repo: Repo, number: int, data: Mapping[str, Any]) -> None:
    if data["id"] in repo.comments:
        return
    repo.add_comment(
        number,
        str(_account(state, data["user"])),
        data.get("body") or "",
        created_at=data.get("created_at"),
        id=data["id"],
    )


# --- the workflow step's environment ---------------------------------------------------------


def rebase_urls(payload: Any, api_url: str, web_url: str) -> Any:
    """``payload`` with api.github.com / github.com URLs moved onto the fake (as on GHES)."""
    hosts = [("https://api.github.com", api_url), ("https://github.com", web_url)]
    return swap_strings(payload, hosts)


def github_sha(payload: Mapping[str, Any]) -> str:
    """GITHUB_SHA as Actions sets it: the PR's merge commit, else the pushed/default head."""
    pull = payload.get("pull_request")
    if pull:
        return str(pull.get("merge_commit_sha") or fake_sha("merge", pull["number"]))
    return str(payload.get("after") or fake_sha("default-branch", payload["repository"]["id"]))


def workflow_env(
    payload: Mapping[str, Any],
    *,
    event_name: str,
    directory: Path,
    api_url: str,
    web_url: str,
    token: str,
    workflow: str = "budget-gate",
    run_id: str = "4242424242",
) -> dict[str, str]:
    """Write the event file, step summary and output files; return the step's GITHUB_* env."""
    directory.mkdir(parents=True, exist_ok=True)
    event_path = directory / "event.json"
    event_path.write_text(json.dumps(rebase_urls(payload, api_url, web_url)), encoding="utf-8")
    summary, output = directory / "step_summary.md", directory / "github_output"
    summary.touch()
    output.touch()
    repo = payload["repository"]
    pull = payload.get("pull_request")
    ref = f"refs/pull/{pull['number']}/merge" if pull else f"refs/heads/{repo['default_branch']}"
    return {
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": event_name,
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_REPOSITORY": repo["full_name"],
        "GITHUB_REPOSITORY_OWNER": repo["owner"]["login"],
        "GITHUB_API_URL": api_url,
        "GITHUB_SERVER_URL": web_url,
        "GITHUB_TOKEN": token,
        "GITHUB_WORKFLOW": workflow,
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_SHA": github_sha(payload),
        "GITHUB_REF": ref,
        "GITHUB_HEAD_REF": pull["head"]["ref"] if pull else "",
        "GITHUB_BASE_REF": pull["base"]["ref"] if pull else "",
        "GITHUB_ACTOR": payload.get("sender", {}).get("login", ""),
        "GITHUB_RUN_ID": run_id,
        "GITHUB_RUN_ATTEMPT": "1",
    }
