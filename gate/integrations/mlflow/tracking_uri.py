"""Where the ledger lives: the tracking URI a command uses, and how it is named in messages.

The default ledger is the file ``mlflow.db`` at the root of the git work tree that holds
the current directory, so ``verify`` run from ``experiments/`` reads the same ledger as
``approve`` run from the root; outside a git work tree it is ``mlflow.db`` in the current
directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from gate.integrations.git.repo import repository_root

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
"""MLflow's own default: relative to the current directory, which is why it is anchored."""
LEDGER_FILE = "mlflow.db"


def redact(uri: str) -> str:
    """The URI without user name, password or query values, for messages (a non-URL too)."""
    base, question, query = uri.partition("?")
    if not question:
        return _without_user(uri)
    query, hash_, fragment = query.partition("#")
    # NOTE: ?token=..., ?access_token=...: any value there may be a secret
    shown = "&".join(
        f"{pair.split('=', 1)[0]}=***" if "=" in pair else pair for pair in query.split("&")
    )
    return f"{_without_user(base)}?{shown}{hash_}{fragment}"


def _without_user(uri: str) -> str:
    try:
        parts = urlsplit(uri)
    except ValueError:  # e.g. an unclosed [IPv6 bracket: mask up to the last @ by hand
        scheme, sep, rest = uri.partition("://")
        return f"{scheme}{sep}***@{rest.rsplit('@', 1)[1]}" if "@" in rest else uri
    if "@" not in parts.netloc:
        return uri
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"***@{host}"))


def resolve_tracking_uri(flag: str | None, environ: Mapping[str, str]) -> str:
    """``--tracking-uri``, else ``MLFLOW_TRACKING_URI``, else the repository's sqlite file."""
    return flag or environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri(Path.cwd())


def default_tracking_uri(cwd: Path) -> str:
    """``sqlite:///`` + the absolute path of ``mlflow.db`` at the repository root of ``cwd``.

    The root is the nearest directory upward that holds ``.git`` (a directory, or the file
    of a linked work tree or submodule) — what ``git rev-parse --show-toplevel`` prints,
    without starting git. Outside a work tree the file is in ``cwd``.
    """
    root = repository_root(cwd) or cwd
    return "sqlite:///" + (root / LEDGER_FILE).as_posix()
