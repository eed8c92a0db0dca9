"""All GitHub I/O: pull-request comments through PyGithub (imported only when used).

The connection comes from the environment a GitHub Actions step has: ``GITHUB_TOKEN``,
``GITHUB_REPOSITORY`` (``owner/name``) and ``GITHUB_API_URL`` (GitHub Enterprise Server;
default ``https://api.github.com``). A comment is *sticky*: its body starts with a hidden
marker, and the next write with the same marker edits it instead of adding another.

Failures become :class:`gate.errors.BackendError` (exit 4) naming the repository and what
was being done; the token never appears in a message.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gate.errors import BackendError, InputError

if TYPE_CHECKING:
    from github import Github

DEFAULT_API_URL = "https://api.github.com"


@dataclass
class GitHubClient:
    """One repository on one GitHub API, with the token of the workflow run."""

    repository: str
    token: str = field(repr=False)
    api_url: str = DEFAULT_API_URL
    _github: Github | None = field(default=None, init=False, repr=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> GitHubClient:
        """Connect as the workflow step's environment says.

        Raises:
            gate.errors.InputError: ``GITHUB_TOKEN`` or ``GITHUB_REPOSITORY`` is missing.
        """
        token = env.get("GITHUB_TOKEN", "")
        repository = env.get("GITHUB_REPOSITORY", "")
        needed = {"GITHUB_TOKEN": token, "GITHUB_REPOSITORY": repository}
        missing = [name for name, value in needed.items() if not value]
        if missing:
            raise InputError(
                f"cannot write to GitHub: {' and '.join(missing)} not set",
                hint="in a workflow, pass env: GITHUB_TOKEN: ${{ github.token }}",
            )
        return cls(repository, token, env.get("GITHUB_API_URL") or DEFAULT_API_URL)

    def upsert_comment(self, number: int, marker: str, body: str) -> str:
        """Edit this tool's comment marked ``marker`` on issue or PR ``number``, or add one.

        Returns the comment's web URL.
        """
        with self._failing(f"writing the comment on #{number}"):
            github = self._client()
            issue = github.get_repo(self.repository).get_issue(number)
            for comment in issue.get_comments():
                if comment.body and comment.body.startswith(marker):
                    comment.edit(body)
                    return str(comment.html_url)
            return str(issue.create_comment(body).html_url)

    def _client(self) -> Github:
        if self._github is None:
            try:
                from github import Auth, Github
            except ImportError:
                raise InputError(
                    "writing to GitHub needs PyGithub", hint="pip install 'budget-gate[github]'"
                ) from None
            # NOTE: lazy objects skip a GET per object; two retries keep an outage short.
            self._github = Github(
                base_url=self.api_url, auth=Auth.Token(self.token), retry=2, lazy=True
            )
        return self._github

    @contextlib.contextmanager
    def _failing(self, doing: str) -> Iterator[None]:
        try:
            yield
        except _failures() as exc:
            raise BackendError(
                f"GitHub at {self.api_url} failed while {doing} in {self.repository}: "
                f"{_reason(exc, self.token)}"
            ) from None


def _failures() -> tuple[type[BaseException], ...]:
    """What PyGithub raises for an answer (GithubException) or no answer (requests, OSError)."""
    try:
        from github import GithubException
    except ImportError:  # then _client() says how to install it
        return (OSError,)
    import requests

    return (GithubException, requests.RequestException, OSError)


def _reason(exc: BaseException, token: str) -> str:
    """A one-line cause: GitHub's status and message, or the connection failure."""
    status = getattr(exc, "status", None)
    data = getattr(exc, "data", None)
    if status is not None:
        message = data.get("message", "") if isinstance(data, dict) else ""
        text = f"HTTP {status}" + (f" {message}" if message else "")
    elif "Connection refused" in str(exc) or "Failed to establish" in str(exc):
        text = "connection refused"
    else:
        text = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc) else ''}"
    return text.replace(token, "***") if token else text
