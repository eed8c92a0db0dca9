"""Where the ledger lives: the tracking URI a command uses, and how it is named in messages."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit, urlunsplit

DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"


def redact(uri: str) -> str:
    """The URI without any user name or password, for messages."""
    parts = urlsplit(uri)
    if "@" not in parts.netloc:
        return uri
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"***@{host}"))


def resolve_tracking_uri(flag: str | None, environ: Mapping[str, str]) -> str:
    """``--tracking-uri``, else ``MLFLOW_TRACKING_URI``, else the embedded sqlite file."""
    return flag or environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI
