"""A stateful fake of the GitHub REST API, served over real HTTP on 127.0.0.1.

Why: budget-gate's ``ci`` command talks to GitHub through PyGithub. Patching PyGithub (or our
code) would test our assumptions about GitHub instead of our behaviour against it. This server
speaks HTTP on loopback, keeps state (comments, labels, reviews, statuses ...) so a test can seed
a situation and inspect what the CLI did, and judges every request against GitHub's published
OpenAPI description (openapi_contract.py): an unknown path/method answers 404, a malformed request
422, and both are recorded so ``assert_all_requests_valid()`` fails the test. Its own responses
are validated against the same description (``response_errors``), so the fake stays faithful.

Usage::

    with FakeGitHub(base_path="/api/v3") as fake:        # GHES-style root; "" for github.com
        repo = fake.add_repo("octo/demo", default_branch="main")
        repo.add_pull(7, author="alice")
        ...  # run the CLI with GITHUB_API_URL=fake.base_url, GITHUB_TOKEN=fake.token
        fake.assert_all_requests_valid()
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import math
import posixpath
import socket
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from github import Auth, Github
from werkzeug.datastructures import Headers

from tests.github import events
from tests.github.openapi_contract import (
    Operation,
    ValidatedRequest,
    ValidatedResponse,
    operations,
    path_exists,
    request_errors,
    response_errors,
    route,
)
from tests.github.render import Render
from tests.github.state import (
    ACTIONS_BOT,
    ACTIONS_BOT_ID,
    CheckRun,
    GitHubState,
    Issue,
    PullRequest,
    Repo,
    Status,
    parse_time,
    utc_now,
)
from tests.loopback import serve_in_background

DEFAULT_TOKEN = "ghs_FakeGitHubToken0000000000000000budget"
FORBIDDEN_FOR_INTEGRATION = "Resource not accessible by integration"
WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
DOCS = "https://docs.github.com/rest"
MAX_LISTED_FILES = 3000
"""GitHub lists at most this many files of a pull request or a commit (its REST docs)."""

Reply = tuple[int, Any]
Handler = Callable[["FakeGitHub", "Call"], Reply]
_HANDLERS: dict[str, Handler] = {}


def handles(operation_id: str) -> Callable[[Handler], Handler]:
    """Register the method that answers ``operation_id``."""

    def register(func: Handler) -> Handler:
        _HANDLERS[operation_id] = func
        return func

    return register


COMMENT_BODY_LIMIT = 65_536
"""GitHub's limit on an issue comment's body."""
ISSUE_TITLE_LIMIT = 256
"""GitHub's limit on an issue's title."""


class ApiError(Exception):
    """An error answer: GitHub's ``{"message", "documentation_url", "status"}`` body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class RecordedRequest:
    """One request as the fake received it, with what it made of it."""

    method: str
    path: str  # as sent, including a GHES base path
    query: dict[str, list[str]]
    headers: dict[str, str]
    raw_body: bytes
    body: Any = None  # parsed JSON; None when there was no (JSON) body
    operation_id: str | None = None
    status: int = 0
    errors: list[str] = field(default_factory=list)

    def header(self, name: str) -> str | None:
        """A request header, case-insensitively."""
        return next((v for k, v in self.headers.items() if k.lower() == name.lower()), None)

    @property
    def authorization(self) -> str | None:
        """The ``Authorization`` header as sent (e.g. ``token ghs_...``)."""
        return self.header("Authorization")

    @property
    def is_write(self) -> bool:
        """POST/PATCH/PUT/DELETE."""
        return self.method in WRITE_METHODS


@dataclass
class Call:
    """What a handler needs from a request."""

    params: dict[str, str]
    query: dict[str, list[str]]
    body: Any
    viewer: str | None

    def arg(self, name: str) -> str | None:
        """The first value of query parameter ``name``."""
        values = self.query.get(name)
        return values[0] if values else None

    def number(self, name: str) -> int:
        """An integer path parameter (already validated as one)."""
        return int(self.params[name])


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeGitHub) -> None:
        super().__init__(("127.0.0.1", 0), _RequestHandler)
        self.fake = fake
        self.connections: set[socket.socket] = set()


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like api.github.com
    server: _Server

    def setup(self) -> None:
        super().setup()
        # headers and body go out in two writes: without this, Nagle + delayed ACK cost 40 ms
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.connections.add(self.connection)

    def finish(self) -> None:
        self.server.connections.discard(self.connection)
        super().finish()

    def _serve(self) -> None:
        self.server.fake.serve(self)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the request log is ``FakeGitHub.requests``."""


class FakeGitHub(GitHubState):
    """The fake GitHub: seedable state (GitHubState) + an HTTP server + a request log."""

    def __init__(
        self,
        *,
        base_path: str = "",
        token: str = DEFAULT_TOKEN,
        token_user: str = ACTIONS_BOT,
        clock: Callable[[], dt.datetime] = utc_now,
    ) -> None:
        super().__init__(clock)
        self.base_path = "/" + base_path.strip("/") if base_path.strip("/") else ""
        self.token = token
        self.tokens: dict[str, str] = {token: token_user}
        self.read_only = False
        self.requests: list[RecordedRequest] = []
        self.response_errors: list[str] = []
        self._failures: dict[str, list[tuple[int, str]]] = {}
        self._lock = threading.RLock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        bot = token_user == ACTIONS_BOT
        self.add_user(token_user, type="Bot" if bot else "User", id=ACTIONS_BOT_ID if bot else None)

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeGitHub:
        """Listen on a free loopback port, serving from a daemon thread."""
        self._server = _Server(self)
        self._thread = serve_in_background(self._server)
        return self

    def stop(self) -> None:
        """Stop serving and drop open keep-alive connections."""
        if self._server is None:
            return
        self._server.shutdown()
        for conn in list(self._server.connections):
            _hang_up(conn)
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The port the server listens on."""
        if self._server is None:
            raise RuntimeError("FakeGitHub is not started")
        return int(self._server.server_address[1])

    @property
    def web_url(self) -> str:
        """The HTML root (``html_url`` fields), ``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The API root: what GITHUB_API_URL / ``Github(base_url=...)`` get."""
        return self.web_url + self.base_path

    # --- test controls -----------------------------------------------------------------------

    def add_token(self, token: str, login: str) -> None:
        """Accept ``token`` as ``login``'s (other tokens answer 401 Bad credentials)."""
        self.add_user(login)
        self.tokens[token] = login

    def fail_next(
        self, operation_id: str, status: int = 500, message: str = "Server Error"
    ) -> None:
        """Answer the next ``operation_id`` request with ``status`` (after validating it)."""
        self._failures.setdefault(operation_id, []).append((status, message))

    def client(self, token: str | None = None, **kwargs: Any) -> Github:
        """A PyGithub client for this fake (no client-side throttling); close it after use."""
        return Github(
            base_url=self.base_url,
            auth=Auth.Token(token or self.token),
            seconds_between_requests=0,
            seconds_between_writes=0,
            **kwargs,
        )

    def seed_from_event(self, payload: dict[str, Any]) -> Repo:
        """Create the repo/PR/issue/comment/review a webhook ``payload`` talks about."""
        return events.seed(self, payload)

    @property
    def validation_errors(self) -> list[str]:
        """Every request-validation error, as ``METHOD path: error``."""
        return [f"{r.method} {r.path}: {e}" for r in self.requests for e in r.errors]

    def assert_all_requests_valid(self) -> None:
        """Fail if any request broke GitHub's description, or any response did (a fake bug)."""
        problems = self.validation_errors + [f"fake response {e}" for e in self.response_errors]
        if problems:
            raise AssertionError(
                "requests to the fake GitHub that GitHub's OpenAPI description rejects:\n  "
                + "\n  ".join(problems)
            )

    def clear_log(self) -> None:
        """Forget recorded requests (and their validation errors)."""
        with self._lock:
            self.requests.clear()
            self.response_errors.clear()

    def requests_for(self, operation_id: str) -> list[RecordedRequest]:
        """Recorded requests for one operation, e.g. ``issues/create-comment``."""
        return [r for r in self.requests if r.operation_id == operation_id]

    @property
    def writes(self) -> list[RecordedRequest]:
        """Recorded POST/PATCH/PUT/DELETE requests (whatever their outcome)."""
        return [r for r in self.requests if r.is_write]

    # --- HTTP --------------------------------------------------------------------------------

    def serve(self, handler: BaseHTTPRequestHandler) -> None:
        """Record, validate and answer one HTTP request."""
        url = urllib.parse.urlsplit(handler.path)
        raw = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        record = RecordedRequest(
            method=handler.command,
            path=url.path,
            query=urllib.parse.parse_qs(url.query, keep_blank_values=True),
            headers=dict(handler.headers.items()),
            raw_body=raw,
        )
        with self._lock:
            self.requests.append(record)
            status, body, headers = self._answer(record)
            record.status = status
        _send(handler, status, body, {**self._standard_headers(), **headers})

    def _standard_headers(self) -> dict[str, str]:
        return {
            "X-GitHub-Media-Type": "github.v3; format=json",
            "X-RateLimit-Limit": "5000",
            "X-RateLimit-Remaining": "4999",
            "X-RateLimit-Reset": str(_reset_epoch(self)),
            "X-RateLimit-Used": "1",
            "X-RateLimit-Resource": "core",
        }

    def _answer(self, record: RecordedRequest) -> tuple[int, Any, dict[str, str]]:
        try:
            op, call = self._accept(record)
            failure = self._failures.get(op.operation_id)
            if failure:
                status, message = failure.pop(0)
                return status, _error(message, op.docs_url, status), {}
            status, body = _HANDLERS[op.operation_id](self, call)
        except ApiError as err:
            return err.status, _error(err.message, _docs_of(record), err.status), {}
        except Exception as exc:  # a fake bug: fail the test, not the connection
            self.response_errors.append(f"{record.method} {record.path} crashed: {exc!r}")
            return 500, _error("Server Error", DOCS, 500), {}
        headers: dict[str, str] = {}
        if op.paginated and isinstance(body, list):
            body, headers = self._paginate(record, body)
        self._check_response(op, record, call, status, body)
        return status, body, headers

    def _accept(self, record: RecordedRequest) -> tuple[Operation, Call]:
        """Route, parse, validate and authorize ``record``; raise ApiError to refuse it."""
        relative = self._relative(record.path)
        match = route(record.method, relative) if relative is not None else None
        if match is None:
            record.errors.append(self._no_operation(record, relative))
            raise ApiError(404, "Not Found")
        op, params = match
        record.operation_id = op.operation_id
        record.body = self._parse_body(record)
        record.errors += request_errors(self._validated(record, op, params))
        viewer = self._viewer(record)
        if record.errors:
            raise ApiError(422, "Invalid request.\n\n" + "\n".join(record.errors))
        return op, Call(params=params, query=record.query, body=record.body, viewer=viewer)

    def _no_operation(self, record: RecordedRequest, relative: str | None) -> str:
        if relative is None:
            return f"no operation: {record.path} is outside the API root {self.base_path}"
        other = " (the path exists for other methods)" if path_exists(relative) else ""
        return f"no operation {record.method} {relative} in the description{other}"

    def _relative(self, path: str) -> str | None:
        if not self.base_path:
            return path
        return path.removeprefix(self.base_path) if path.startswith(self.base_path + "/") else None

    @staticmethod
    def _parse_body(record: RecordedRequest) -> Any:
        if not record.raw_body:
            return None
        try:
            return json.loads(record.raw_body)
        except ValueError:
            record.errors.append("body is not JSON")
            raise ApiError(400, "Problems parsing JSON") from None

    @staticmethod
    def _validated(
        record: RecordedRequest, op: Operation, params: dict[str, str]
    ) -> ValidatedRequest:
        return ValidatedRequest(
            method=record.method.lower(),
            path=op.template.format(**params),
            path_pattern=op.template,
            path_params=params,
            query=record.query,
            headers=record.headers,
            body=record.raw_body or None,
            content_type=(record.header("Content-Type") or "application/json").lower(),
        )

    def _viewer(self, record: RecordedRequest) -> str | None:
        """The authenticated login (None: anonymous); 401/403 as GitHub answers them."""
        header = record.authorization
        if header is None:
            if record.is_write:
                raise ApiError(401, "Requires authentication")
            return None
        scheme, _, token = header.partition(" ")
        if scheme.lower() not in ("token", "bearer") or token not in self.tokens:
            raise ApiError(401, "Bad credentials")
        if self.read_only and record.is_write:
            raise ApiError(403, FORBIDDEN_FOR_INTEGRATION)
        return self.tokens[token]

    def _paginate(
        self, record: RecordedRequest, items: list[Any]
    ) -> tuple[list[Any], dict[str, str]]:
        per_page = min(max(_int_arg(record.query, "per_page", 30), 1), 100)
        page = max(_int_arg(record.query, "page", 1), 1)
        last = max(1, math.ceil(len(items) / per_page))
        links = []
        if page < last:
            links += [(page + 1, "next"), (last, "last")]
        if page > 1:
            links += [(page - 1, "prev"), (1, "first")]
        headers = {"Link": ", ".join(self._link(record, p, per_page, rel) for p, rel in links)}
        chunk = items[(page - 1) * per_page : page * per_page]
        return chunk, headers if links else {}

    def _link(self, record: RecordedRequest, page: int, per_page: int, rel: str) -> str:
        query = {**record.query, "page": [str(page)], "per_page": [str(per_page)]}
        url = f"{self.web_url}{record.path}?{urllib.parse.urlencode(query, doseq=True)}"
        return f'<{url}>; rel="{rel}"'

    def _check_response(
        self, op: Operation, record: RecordedRequest, call: Call, status: int, body: Any
    ) -> None:
        if str(status) not in op.statuses:
            return
        request = self._validated(record, op, call.params)
        data = None if body is None else json.dumps(body).encode()
        response = ValidatedResponse(status_code=status, data=data, headers=Headers())
        problems = response_errors(request, response)
        self.response_errors += [f"{op.operation_id} {status}: {e}" for e in problems]

    # --- lookups -----------------------------------------------------------------------------

    def _render(self, call: Call) -> Render:
        return Render(self, self.base_url, self.web_url, call.viewer or "")

    def _repo(self, call: Call) -> Repo:
        repo = self.repos.get(f"{call.params['owner']}/{call.params['repo']}")
        if repo is None:
            raise ApiError(404, "Not Found")
        return repo

    def _issue(self, call: Call, name: str = "issue_number") -> tuple[Repo, Issue]:
        repo = self._repo(call)
        issue = repo.issues.get(call.number(name))
        if issue is None:
            raise ApiError(404, "Not Found")
        return repo, issue

    def _pull(self, call: Call) -> tuple[Repo, PullRequest]:
        repo, pull = self._issue(call, "pull_number")
        if not isinstance(pull, PullRequest):
            raise ApiError(404, "Not Found")
        return repo, pull

    def _commit_sha(self, repo: Repo, ref: str) -> str:
        sha = repo.resolve(ref)
        if sha not in repo.commits:
            raise ApiError(422, f"No commit found for SHA: {ref}")
        return sha

    def _must_exist(self, login: str) -> None:
        if login not in self.users:
            raise ApiError(404, "Not Found")

    # --- repositories, contents, commits -----------------------------------------------------

    @handles("repos/get")
    def _get_repo(self, call: Call) -> Reply:
        return 200, self._render(call).repo(self._repo(call))

    @handles("repos/get-content")
    def _get_content(self, call: Call) -> Reply:
        repo = self._repo(call)
        ref = call.arg("ref") or repo.default_branch
        files = repo.files_at(ref)
        path = call.params["path"].strip("/")
        render = self._render(call)
        link = repo.links_at(ref).get(path)
        if link is not None:
            # GitHub: a link to a file in the repository answers with that file (its own
            # path and name); any other link, with an object describing the link itself.
            target = posixpath.normpath(posixpath.join(posixpath.dirname(path), link))
            if target in files:
                return 200, render.content(repo, target, ref, files[target])
            return 200, render.symlink(repo, path, ref, link)
        if path in files:
            return 200, render.content(repo, path, ref, files[path])
        below = sorted(
            {p[len(path) + 1 :].split("/")[0] for p in files if p.startswith(path + "/")}
        )
        if not below:
            raise ApiError(404, "Not Found")
        entries = [f"{path}/{name}" for name in below]
        return 200, [render.content(repo, p, ref, files.get(p)) for p in entries]

    @handles("repos/get-commit")
    def _get_commit(self, call: Call) -> Reply:
        """A commit, its files a page at a time, 3,000 in all at most (as GitHub documents)."""
        repo = self._repo(call)
        commit = repo.commits[self._commit_sha(repo, call.params["ref"])]
        per_page = min(max(int(call.arg("per_page") or 300), 1), 300)
        page = max(int(call.arg("page") or 1), 1)
        files = commit.files[:MAX_LISTED_FILES][(page - 1) * per_page : page * per_page]
        return 200, self._render(call).commit(repo, dataclasses.replace(commit, files=files))

    @handles("repos/get-collaborator-permission-level")
    def _get_permission(self, call: Call) -> Reply:
        repo = self._repo(call)
        self._must_exist(call.params["username"])
        return 200, self._render(call).permission(repo, call.params["username"])

    # --- pull requests -----------------------------------------------------------------------

    @handles("pulls/get")
    def _get_pull(self, call: Call) -> Reply:
        return 200, self._render(call).pull(*self._pull(call))

    @handles("pulls/list-files")
    def _list_files(self, call: Call) -> Reply:
        repo, pull = self._pull(call)
        render = self._render(call)
        listed = pull.files[:MAX_LISTED_FILES]  # GitHub's documented cap
        return 200, [render.file_change(repo, f, pull.head_sha) for f in listed]

    @handles("pulls/list-reviews")
    def _list_reviews(self, call: Call) -> Reply:
        repo, pull = self._pull(call)
        reviews = sorted(pull.reviews, key=lambda r: (r.submitted_at, r.id))
        return 200, [self._render(call).review(repo, pull, r) for r in reviews]

    @handles("pulls/list-requested-reviewers")
    def _list_requested(self, call: Call) -> Reply:
        return 200, self._render(call).review_requests(*self._pull(call))

    @handles("pulls/request-reviewers")
    def _request_reviewers(self, call: Call) -> Reply:
        repo, pull = self._pull(call)
        body = call.body or {}
        users, teams = body.get("reviewers", []), body.get("team_reviewers", [])
        if pull.author in users:
            raise ApiError(422, "Review cannot be requested from pull request author.")
        org = self.orgs.get(repo.owner)
        strangers = [u for u in users if repo.permission_of(u) == "none"]
        strangers += [t for t in teams if org is None or t not in org.teams]
        if strangers:
            raise ApiError(
                422,
                "Reviews may only be requested from collaborators. One or more of the users or "
                f"teams you specified is not a collaborator of the {repo.full_name} repository.",
            )
        pull.requested_users += [u for u in users if u not in pull.requested_users]
        pull.requested_teams += [t for t in teams if t not in pull.requested_teams]
        return 201, self._render(call).pull(repo, pull)

    @handles("pulls/remove-requested-reviewers")
    def _remove_reviewers(self, call: Call) -> Reply:
        repo, pull = self._pull(call)
        body = call.body or {}
        users, teams = body.get("reviewers", []), body.get("team_reviewers", [])
        pull.requested_users = [u for u in pull.requested_users if u not in users]
        pull.requested_teams = [t for t in pull.requested_teams if t not in teams]
        return 200, self._render(call).pull(repo, pull)

    # --- issues, comments, labels ------------------------------------------------------------

    @handles("issues/get")
    def _get_issue(self, call: Call) -> Reply:
        return 200, self._render(call).issue(*self._issue(call))

    @handles("issues/list-for-repo")
    def _list_issues(self, call: Call) -> Reply:
        """Issues and pull requests, newest first, by ``state`` (default open), ``creator`` and
        ``since`` (updated at or after)."""
        repo = self._repo(call)
        state, creator = call.arg("state") or "open", call.arg("creator")
        since = parse_time(call.arg("since"))
        found = [
            issue
            for issue in sorted(repo.issues.values(), key=lambda i: -i.number)
            if state in ("all", issue.state)
            and (creator is None or issue.author.lower() == creator.lower())
            and (since is None or issue.updated_at >= since)
        ]
        render = self._render(call)
        return 200, [render.issue(repo, issue) for issue in found]

    @staticmethod
    def _issue_fits(fields: dict[str, Any]) -> None:
        """GitHub refuses an empty title or one over 256 characters, and a body over 65,536."""
        title, body = fields.get("title"), fields.get("body")
        if title is not None and not 0 < len(str(title)) <= ISSUE_TITLE_LIMIT:
            raise ApiError(422, "Validation Failed: title is empty or too long (maximum is 256)")
        if body is not None and len(body.encode("utf-16-le")) // 2 > COMMENT_BODY_LIMIT:
            raise ApiError(422, "Validation Failed: body is too long (maximum is 65536 characters)")

    @handles("issues/create")
    def _create_issue(self, call: Call) -> Reply:
        repo = self._repo(call)
        if not call.viewer:
            raise ApiError(401, "Requires authentication")
        self._issue_fits(call.body)
        number = max(repo.issues, default=0) + 1
        issue = repo.add_issue(
            number, author=call.viewer, title=str(call.body["title"]), body=call.body.get("body")
        )
        return 201, self._render(call).issue(repo, issue)

    @handles("issues/update")
    def _update_issue(self, call: Call) -> Reply:
        repo, issue = self._issue(call)
        body = call.body or {}
        self._issue_fits(body)
        if "title" in body:
            issue.title = str(body["title"])
        if "body" in body:
            issue.body = body["body"]
        if body.get("state") in ("open", "closed"):
            issue.state = body["state"]
        issue.updated_at = self.clock()
        return 200, self._render(call).issue(repo, issue)

    @handles("issues/list-comments")
    def _list_comments(self, call: Call) -> Reply:
        repo, issue = self._issue(call)
        since = parse_time(call.arg("since"))
        found = [
            c for c in repo.comments_on(issue.number) if since is None or c.updated_at >= since
        ]
        return 200, [self._render(call).comment(repo, c) for c in found]

    @handles("issues/list-events")
    def _list_events(self, call: Call) -> Reply:
        repo, issue = self._issue(call)
        return 200, [self._render(call).issue_event(repo, e) for e in issue.events]

    @staticmethod
    def _comment_fits(body: str) -> None:
        """GitHub refuses a comment body over 65,536 characters (UTF-16 code units): 422."""
        if len(body.encode("utf-16-le")) // 2 > COMMENT_BODY_LIMIT:
            raise ApiError(422, "Validation Failed: body is too long (maximum is 65536 characters)")

    @handles("issues/create-comment")
    def _create_comment(self, call: Call) -> Reply:
        self._comment_fits(call.body["body"])
        repo, issue = self._issue(call)
        comment = repo.add_comment(issue.number, call.viewer or "", call.body["body"])
        return 201, self._render(call).comment(repo, comment)

    def _comment(self, call: Call) -> tuple[Repo, Any]:
        repo = self._repo(call)
        comment = repo.comments.get(call.number("comment_id"))
        if comment is None:
            raise ApiError(404, "Not Found")
        return repo, comment

    @handles("issues/get-comment")
    def _get_comment(self, call: Call) -> Reply:
        return 200, self._render(call).comment(*self._comment(call))

    @handles("issues/update-comment")
    def _update_comment(self, call: Call) -> Reply:
        self._comment_fits(call.body["body"])
        repo, comment = self._comment(call)
        comment.body = call.body["body"]
        comment.updated_at = self.clock()
        return 200, self._render(call).comment(repo, comment)

    @handles("issues/delete-comment")
    def _delete_comment(self, call: Call) -> Reply:
        repo, comment = self._comment(call)
        del repo.comments[comment.id]
        return 204, None

    @handles("issues/list-labels-on-issue")
    def _list_labels(self, call: Call) -> Reply:
        return 200, self._render(call).labels(*self._issue(call))

    @handles("issues/add-labels")
    def _add_labels(self, call: Call) -> Reply:
        repo, issue = self._issue(call)
        repo.add_labels(issue.number, _label_names(call.body))
        return 200, self._render(call).labels(repo, issue)

    @handles("issues/set-labels")
    def _set_labels(self, call: Call) -> Reply:
        repo, issue = self._issue(call)
        issue.labels = []
        repo.add_labels(issue.number, _label_names(call.body))
        return 200, self._render(call).labels(repo, issue)

    @handles("issues/remove-label")
    def _remove_label(self, call: Call) -> Reply:
        repo, issue = self._issue(call)
        if call.params["name"] not in issue.labels:
            raise ApiError(404, "Label does not exist")
        issue.labels.remove(call.params["name"])
        return 200, self._render(call).labels(repo, issue)

    # --- statuses and checks -----------------------------------------------------------------

    @handles("repos/create-commit-status")
    def _create_status(self, call: Call) -> Reply:
        repo = self._repo(call)
        status = Status(
            id=self.next_id(),
            sha=self._commit_sha(repo, call.params["sha"]),
            state=call.body["state"],
            context=call.body.get("context") or "default",
            description=call.body.get("description"),
            target_url=call.body.get("target_url"),
            creator=call.viewer or "",
            created_at=self.clock(),
        )
        repo.statuses.append(status)
        return 201, self._render(call).status(repo, status)

    @handles("repos/get-combined-status-for-ref")
    def _combined_status(self, call: Call) -> Reply:
        repo = self._repo(call)
        return 200, self._render(call).combined_status(repo, repo.resolve(call.params["ref"]))

    @handles("checks/create")
    def _create_check(self, call: Call) -> Reply:
        repo = self._repo(call)
        body = call.body
        run = CheckRun(
            id=self.next_id(),
            name=body["name"],
            head_sha=self._commit_sha(repo, body["head_sha"]),
            started_at=self.clock(),
        )
        repo.check_runs[run.id] = run
        self._update_run(run, body)
        return 201, self._render(call).check_run(repo, run)

    def _run(self, call: Call) -> tuple[Repo, CheckRun]:
        repo = self._repo(call)
        run = repo.check_runs.get(call.number("check_run_id"))
        if run is None:
            raise ApiError(404, "Not Found")
        return repo, run

    def _update_run(self, run: CheckRun, body: dict[str, Any]) -> None:
        for key in ("name", "status", "conclusion", "details_url", "external_id"):
            if key in body:
                setattr(run, key, body[key])
        for key in ("started_at", "completed_at"):
            if key in body:
                setattr(run, key, parse_time(body[key]))
        if run.conclusion is not None:
            run.status = "completed"
            run.completed_at = run.completed_at or self.clock()
        output = body.get("output", {})
        notes = run.output.get("annotations", []) + output.get("annotations", [])
        run.output.update(output, annotations=notes)

    @handles("checks/get")
    def _get_check(self, call: Call) -> Reply:
        return 200, self._render(call).check_run(*self._run(call))

    @handles("checks/update")
    def _update_check(self, call: Call) -> Reply:
        repo, run = self._run(call)
        self._update_run(run, call.body or {})
        return 200, self._render(call).check_run(repo, run)

    # --- people ------------------------------------------------------------------------------

    @handles("users/get-by-username")
    def _get_user(self, call: Call) -> Reply:
        self._must_exist(call.params["username"])
        return 200, self._render(call).public_user(call.params["username"])

    @handles("orgs/get")
    def _get_org(self, call: Call) -> Reply:
        org = self.orgs.get(call.params["org"])
        if org is None:
            raise ApiError(404, "Not Found")
        return 200, self._render(call).org(org)

    def _team(self, call: Call) -> Any:
        org = self.orgs.get(call.params["org"])
        team = org.teams.get(call.params["team_slug"]) if org else None
        if team is None:
            raise ApiError(404, "Not Found")
        return team

    @handles("teams/get-by-name")
    def _get_team(self, call: Call) -> Reply:
        return 200, self._render(call).team(self._team(call))

    def _member(self, call: Call, team: Any) -> Reply:
        if team is None or call.params["username"] not in team.members:
            raise ApiError(404, "Not Found")
        return 200, self._render(call).membership(team, call.params["username"])

    @handles("teams/get-membership-for-user-in-org")
    def _get_membership(self, call: Call) -> Reply:
        return self._member(call, self._team(call))

    @handles("teams/get-membership-for-user-legacy")
    def _get_membership_legacy(self, call: Call) -> Reply:
        return self._member(call, self.team_by_id(call.number("team_id")))

    @handles("teams/get-member-legacy")
    def _get_member_legacy(self, call: Call) -> Reply:
        team = self.team_by_id(call.number("team_id"))
        member = team.members.get(call.params["username"]) if team else None
        if member is None or member.state != "active":
            raise ApiError(404, "Not Found")
        return 204, None

    @handles("rate-limit/get")
    def _rate_limit(self, call: Call) -> Reply:
        return 200, self._render(call).rate_limit(_reset_epoch(self))


def _int_arg(query: dict[str, list[str]], name: str, default: int) -> int:
    values = query.get(name)
    return int(values[0]) if values else default


def _hang_up(conn: socket.socket) -> None:
    """Wake a handler thread blocked on a keep-alive connection (it may be closing already)."""
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RDWR)


def _label_names(body: Any) -> list[str]:
    """Label names from any body shape GitHub accepts (list, {"labels": [...]}, objects)."""
    items = body.get("labels", []) if isinstance(body, dict) else body or []
    items = [items] if isinstance(items, str) else items
    return [item["name"] if isinstance(item, dict) else item for item in items]


def _error(message: str, docs: str, status: int) -> dict[str, str]:
    return {"message": message, "documentation_url": docs, "status": str(status)}


def _docs_of(record: RecordedRequest) -> str:
    op = next((o for o in operations() if o.operation_id == record.operation_id), None)
    return op.docs_url if op else DOCS


def _reset_epoch(fake: FakeGitHub) -> int:
    return int(fake.clock().timestamp()) + 3600


def _send(handler: BaseHTTPRequestHandler, status: int, body: Any, headers: dict[str, str]) -> None:
    data = b"" if body is None else json.dumps(body).encode()
    handler.send_response(status)
    for name, value in headers.items():
        handler.send_header(name, value)
    if status != 204:
        handler.send_header("Content-Type", "application/json; charset=utf-8")
        handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def handled_operations() -> frozenset[str]:
    """The operationIds the fake answers (all of the description's)."""
    return frozenset(_HANDLERS)


_missing = {op.operation_id for op in operations()} - _HANDLERS.keys()
if _missing:
    raise RuntimeError(f"FakeGitHub lacks handlers for {sorted(_missing)}")
