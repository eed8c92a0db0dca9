"""``report --issue``: the Markdown report as the period's GitHub issue, edited on a re-run.

PyGithub is imported only when ``--issue`` is given; the connection is made before the
report reads anything, so a missing token or extra is exit 3 before a minute's read.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import sys
from typing import TYPE_CHECKING

from gate.errors import BackendError, WriteForbidden
from gate.integrations import needs_github
from gate.report.model import MonthReport

if TYPE_CHECKING:
    from gate.integrations.github.client import GitHubClient


def issue_client(
    args: argparse.Namespace,
) -> contextlib.AbstractContextManager[GitHubClient | None]:
    """The GitHub connection for --issue (GITHUB_TOKEN, GITHUB_REPOSITORY, GITHUB_API_URL)."""
    if not args.issue:
        return contextlib.nullcontext()
    with needs_github("report --issue"):
        from gate.integrations.github.client import GitHubClient

    return GitHubClient.from_env(os.environ)


def post_issue(github: GitHubClient, report: MonthReport) -> None:
    """The Markdown report as the period's issue: edited when this tool opened it before."""
    from gate.reporters.report_markdown import issue

    title, marker, body = issue(report)
    since = report.period.start - dt.timedelta(days=1)  # its issue is never older; a day for skew
    try:
        posted = github.upsert_issue(title, marker, body, since)
    except WriteForbidden as exc:
        raise BackendError(f"{exc}: give the job permissions: issues: write") from None
    print(f"budget-gate: {'opened' if posted.opened else 'updated'} the issue {posted.url}",
          file=sys.stderr)  # fmt: skip
    if not posted.ours:
        print(
            f"budget-gate: warning: the issue was posted as {posted.author}, and only issues "
            f"{github.bot_login} opened are edited: the next run opens another unless "
            f"BUDGET_GATE_BOT_LOGIN={posted.author}",
            file=sys.stderr,
        )
