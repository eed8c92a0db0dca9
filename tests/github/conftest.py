"""Fixtures for tests that run budget-gate against the fake GitHub.

Why: every CI test needs the same three things: a fresh fake GitHub that knows the repository
and pull request of the triggering event, the event payload, and the environment a workflow step
would have. The ``fake_github`` fixture also fails the test at teardown if any request broke
GitHub's OpenAPI description, so no test can pass with a request GitHub would reject.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from github import Github

from tests.github.ci_kit import PullRequestStory
from tests.github.events import event_name_of, load_event, workflow_env
from tests.github.fake_github import FakeGitHub

DEFAULT_EVENT = "pull_request.opened"  # Codertocat/Hello-World, PR #2 by Codertocat

EnvFactory = Callable[..., dict[str, str]]


@pytest.fixture
def fake_github(request: pytest.FixtureRequest) -> Iterator[FakeGitHub]:
    """A running fake GitHub seeded from pull_request.opened; checks every request at teardown.

    For a GHES-style API root, parametrize it indirectly:
    ``@pytest.mark.parametrize("fake_github", ["/api/v3"], indirect=True)``.
    """
    with FakeGitHub(base_path=getattr(request, "param", "")) as fake:
        fake.seed_from_event(load_event(DEFAULT_EVENT))
        yield fake
        fake.assert_all_requests_valid()


@pytest.fixture
def github_client(fake_github: FakeGitHub) -> Iterator[Github]:
    """PyGithub pointed at ``fake_github`` with its token."""
    with fake_github.client() as client:
        yield client


@pytest.fixture
def github_env(fake_github: FakeGitHub, tmp_path: Path) -> EnvFactory:
    """Make a workflow step's env: ``github_env(event=..., payload=None, **overrides)``.

    Loads ``event`` (a fixture name such as ``pull_request_review.submitted.approved``) with
    ``overrides`` unless ``payload`` is given, seeds the fake from it (``seed=False`` to skip),
    writes the event file (URLs moved onto the fake), and returns the GITHUB_* variables.
    """

    def make(
        event: str = DEFAULT_EVENT,
        payload: dict[str, Any] | None = None,
        *,
        seed: bool = True,
        token: str | None = None,
        **overrides: Any,
    ) -> dict[str, str]:
        payload = payload if payload is not None else load_event(event, **overrides)
        env = workflow_env(
            payload,
            event_name=event_name_of(event),
            directory=tmp_path / "github",
            api_url=fake_github.base_url,
            web_url=fake_github.web_url,
            token=token or fake_github.token,
        )
        if seed:
            fake_github.seed_from_event(payload).ensure_commit(env["GITHUB_SHA"])
        return env

    return make


@pytest.fixture
def story(fake_github: FakeGitHub, github_env: EnvFactory, tmp_path: Path) -> PullRequestStory:
    """Codertocat/Hello-World PR #2 with base policies, and ``budget-gate ci`` runs against it."""
    return PullRequestStory(fake_github, github_env, tmp_path / "workspace")
