"""Where the ledger lives: the tracking URI a command uses, and how it is named in messages.

The default ledger is the file ``mlflow.db`` at the root of the git work tree that holds
the policy directory in use (outside a work tree, beside that directory), so every command
reads the ledger of the policies that judge: ``verify`` run from ``experiments/``, from
``/tmp`` or with ``--policy-dir /repo/policies`` reads the ledger ``approve`` wrote from the
root. Under the built-in default policy (no policy directory) it is ``mlflow.db`` at the
root of the current directory's work tree, else in the current directory.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from gate.errors import InputError
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


def resolve_tracking_uri(
    flag: str | None,
    environ: Mapping[str, str],
    policy_dir: str | Path | None = None,
    *,
    named: str = "--tracking-uri",
) -> str:
    """``--tracking-uri``, else ``MLFLOW_TRACKING_URI``, else the policies' sqlite file.

    An empty one given (an unset ``$VAR``) is refused, not read as none: the default ledger
    in its place would read a month of no spend. ``named`` is what the caller calls it (a
    flag, or a parameter of the Python API). ``policy_dir`` is the policy directory in use
    (``None``: the built-in default policy).
    """
    if flag is not None and not flag.strip():
        raise InputError(
            f"{named} is empty (an unset variable?): no store is named that",
            hint=f"name the tracking server or sqlite file ({named}=http://mlflow:5000), "
            f"or leave {named} out for the default ledger",
        )
    found = flag or environ.get("MLFLOW_TRACKING_URI")
    if found:
        return found
    if policy_dir is None:
        return default_tracking_uri(Path.cwd())
    home = Path(os.path.abspath(policy_dir))
    return default_tracking_uri(home, outside=home.parent)


def default_tracking_uri(cwd: Path, *, outside: Path | None = None) -> str:
    """``sqlite:///`` + the absolute path of ``mlflow.db`` at the repository root of ``cwd``.

    The root is the nearest directory upward that holds ``.git`` (a directory, or the file
    of a linked work tree or submodule) — what ``git rev-parse --show-toplevel`` prints,
    without starting git. Outside a work tree the file is in ``outside``, else in ``cwd``.
    """
    root = repository_root(cwd) or outside or cwd
    return "sqlite:///" + (root / LEDGER_FILE).as_posix()
