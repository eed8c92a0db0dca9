"""A Katib trial container's env as Kubernetes writes it into the command (pure).

Kubernetes expands ``$(NAME)`` in a container's command and args from its env before the
command runs (no shell needed), a value's own ``$(NAME)`` from the entries before it; a
shell then expands ``$NAME`` in its script. budget-gate reads the words both would make,
and refuses a name whose value is not in the file.
"""

from __future__ import annotations

import re
from typing import Any

from gate.errors import InputError
from gate.formats.command_lines import Words

KUBE_REF = re.compile(r"(?<!\$)\$\(([-.\w]+)\)")
"""``$(NAME)`` in a command or args, which Kubernetes expands from the container's env before
the command runs (``sh -c "$(TRAIN)"`` runs TRAIN's value); an unknown one stays, as there."""
_OPTION_VALUE = re.compile(r"--?[\w.-]+=\S*")
"""An option and its value in one argv word, no space: Kubernetes writes a value into it,
which stays that option's value (a shell's script, with its spaces, is never one)."""
_SHELL_REF = re.compile(r"\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))")


def env_of(container: dict[str, Any]) -> dict[str, str]:
    """The container's env values by name, for the ``$(NAME)`` Kubernetes expands in args.

    A value's own ``$(NAME)`` is expanded from the entries before it, as Kubernetes does.
    """
    listed = container.get("env")
    env: dict[str, str] = {}
    for e in listed if isinstance(listed, list) else []:
        if isinstance(e, dict) and "name" in e and "value" in e:
            env[str(e["name"])] = KUBE_REF.sub(lambda m: env.get(m[1], m[0]), str(e["value"]))
    return env


def refuse_outside_refs(
    words: Words, container: dict[str, Any], env: dict[str, str], locate: Any
) -> None:
    """Refuse a ``$(NAME)`` whose value Kubernetes takes from outside the file.

    An env entry's ``valueFrom`` (a ConfigMap, a Secret) or the container's ``envFrom``
    may set NAME to ``--epochs=1000``: Kubernetes writes it into the command, no shell
    needed.
    """
    listed = container.get("env")
    hidden = {
        str(e["name"])
        for e in (listed if isinstance(listed, list) else [])
        if isinstance(e, dict) and "name" in e and "value" not in e and not _pod_fact(e)
    }
    for word, path in words:
        if _OPTION_VALUE.fullmatch(word):  # NOTE: --data=$(DIR): one argv word, whatever DIR
            continue
        for name in KUBE_REF.findall(word):
            if name not in env and (name in hidden or container.get("envFrom")):
                raise InputError(
                    f"$({name}) in the trial's command: Kubernetes writes there the value of "
                    f"{name}, which the file does not hold (valueFrom or envFrom)",
                    location=locate(path),
                    hint=f"give {name} its value in the container's env, or write the words "
                    "in the command itself",
                )


def _pod_fact(entry: dict[str, Any]) -> bool:
    """A value Kubernetes takes from the pod itself (its name, IP, a resource quantity).

    No shell syntax fits in those: a ``fieldRef`` or ``resourceFieldRef`` adds no words.
    """
    source = entry.get("valueFrom")
    return isinstance(source, dict) and set(source) <= {"fieldRef", "resourceFieldRef"}


def expand(word: str, env: dict[str, str]) -> str:
    """The word as Kubernetes and then a shell expand it from the container's env."""
    word = KUBE_REF.sub(lambda m: env.get(m[1], m[0]), word)
    return _SHELL_REF.sub(lambda m: env.get(m[1] or m[2], m[0]), word)
