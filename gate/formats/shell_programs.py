"""What a command's program is and does: wrappers, harmless utilities, shells and their scripts.

A command is looked at through its wrappers (``env``, ``nohup``, ``timeout``, ``sudo``) and
assignments. A shell's script is its script argument only (``bash -c SCRIPT``, ``su -c``,
``eval WORDS``, ``ssh HOST CMD``): any other program's arguments are words, not a script.
A training command is known by its program and the script it runs (:func:`run_key`).
The reader's bounds and decoders (:data:`MAX_DEPTH`, ``$'...'``, here-documents) are here too.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

__all__ = [
    "HIDDEN",
    "MAX_DEPTH",
    "PYTHON",
    "REPEATERS",
    "SHELLS",
    "SSH_VALUED",
    "TooDeep",
    "Unreadable",
    "ansi_c",
    "deeper",
    "harmless",
    "program",
    "repeated_commands",
    "run_key",
    "shell_script",
    "skip_heredocs",
    "without_installers",
]


class Unreadable(ValueError):
    """A script whose structure is not what a shell would run (an open quote, no ``done``)."""


class TooDeep(Unreadable):
    """A script nested deeper than :data:`MAX_DEPTH` (``$(`` in ``$(``, ``{`` in ``{``)."""


MAX_DEPTH = 64
"""How deep quoting, substitutions and compound commands may nest before a script is refused."""


def deeper(level: int) -> int:
    """``level`` one deeper, or :class:`TooDeep` past :data:`MAX_DEPTH`."""
    if level >= MAX_DEPTH:
        raise TooDeep(f"nested more than {MAX_DEPTH} deep")
    return level + 1


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b"}
_ESCAPES |= {"f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_CODES = re.compile(r"x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}")


def ansi_c(body: str) -> str:
    """A ``$'...'`` word's text, its escapes decoded; one bash may read otherwise raises."""
    text, at = [], 0
    while (slash := body.find("\\", at)) >= 0:
        text.append(body[at:slash])
        escape = body[slash + 1 : slash + 2]
        if escape in _ESCAPES:
            text.append(_ESCAPES[escape])
            at = slash + 2
        elif (code := _CODES.match(body, slash + 1)) is not None:
            digits = code[0].lstrip("xuU")
            text.append(chr(int(digits, 8 if code[0][0].isdigit() else 16) % 0x110000))
            at = code.end()
        else:
            raise Unreadable(f"a `$'...'` with an escape `\\{escape}` read as bash may not")
    return "".join(text) + body[at:]


def skip_heredocs(script: str, at: int, heredocs: list[tuple[str, bool, bool]]) -> int:
    """Past the bodies of the here-documents a line opened: they are text, not commands."""
    for word, plain, tabs in heredocs:
        while at < len(script):
            end = script.find("\n", at)
            end = len(script) if end < 0 else end
            line = script[at:end]
            at = end + 1
            if (line.lstrip("\t") if tabs else line) == word:
                break
            if plain and ("$(" in line or "`" in line):
                raise Unreadable("a here-document that runs commands")
    return min(at, len(script))


REPEATERS = frozenset({"xargs", "parallel", "watch", "repeat"})
_EXECS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
"""Commands that run the command they are given any number of times, and ``find``'s."""


_SHELL_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*(?:\[[^]]*\])?\+?=")


def program(words: list[str], depth: int) -> int | None:
    """Where a command's program is, past wrappers and assignments (an argv sets none)."""
    at = 0
    while at < len(words):
        name = words[at].rsplit("/", 1)[-1]
        if _SHELL_ASSIGNMENT.match(words[at]) and (depth or at):
            at += 1
            continue
        if name not in _WRAPPERS:
            return at
        if name == "command" and words[at + 1 : at + 2] in (["-v"], ["-V"]):
            return None  # NOTE: command -v python looks python up
        at += 1
        while at < len(words) and words[at].startswith("-") and words[at] != "-":
            at += 1 + (words[at] in _VALUED)
            if at > len(words):
                return None  # NOTE: exec -a, its value missing: no program to run
            if words[at - 1] == "--":
                break
        at += name in ("timeout", "taskset")  # NOTE: timeout 10h python t.py
    return None


def repeated_commands(name: str, args: list[str]) -> Iterator[tuple[str, list[str]]]:
    """The command a repeater runs again (``xargs python t.py``), with the repeater."""
    if name == "find":
        for at, word in enumerate(args):
            if word in _EXECS:
                ends = [i for i, end in enumerate(args) if i > at and end in (";", "+")]
                yield f"find {word}", args[at + 1 : ends[0] if ends else len(args)]
    elif name == "repeat":  # NOTE: zsh's `repeat N command`
        yield name, args[1:]
    elif name in REPEATERS:
        at = 0
        while at < len(args) and args[at].startswith("-"):
            at += 1 + (args[at] in _VALUED)
        yield name, args[at:]


def _split(*names: str) -> frozenset[str]:
    return frozenset(" ".join(names).split())


_HARMLESS = _split(
    "echo printf sleep true false test [ : cd pushd popd export unset set shift read wait exit",
    "return break continue trap ulimit umask declare local readonly typeset let pwd which type",
    "hash alias cp mv rm mkdir rmdir ln touch chmod chown cat head tail wc grep egrep sed awk cut",
    "tr sort uniq tee ls du df free nproc hostname whoami id date basename dirname realpath find",
    "readlink stat file md5sum sha256sum seq jq yq envsubst tar unzip gunzip gzip zip xz wget",
    "curl git git-lfs gsutil rsync scp nc ping nvidia-smi ps kill pkill pip pip3 apt apt-get yum",
    "dnf apk brew lsb_release lscpu lspci lsblk ldconfig uname arch nvcc nslookup getent dig",
    "host pg_isready ss netstat ip ifconfig",
)
"""Utilities that train nothing and run none of their words as a command."""
_TOOLS = _split(
    "uv:pip uv:venv uv:sync uv:add uv:lock poetry:install poetry:add poetry:lock poetry:update",
    "poetry:config poetry:env ray:start ray:stop ray:status huggingface-cli:download",
    "huggingface-cli:login huggingface-cli:upload hf:download hf:auth hf:upload wandb:login",
    "wandb:sync docker:pull docker:login docker:push aws:s3 aws:configure gcloud:storage",
)
"""Tools' subcommands that install, fetch or look up (``uv pip``; not ``uv run``)."""
_CONDA = _split(
    "install create activate deactivate env config update clean init info list remove shell",
    "shell.bash shell.zsh shell.fish shell.posix",
)
PYTHON = re.compile(r"(?:python|pypy)[\d.]*")
_PYTHON_HARMLESS = (["-m", "pip"], ["-m", "venv"], ["-m", "ensurepip"], ["-V"], ["--version"])
_ENVIRONMENTS = _split("activate .bashrc .profile .bash_profile .env conda.sh")
"""What ``source`` reads that sets up a shell: a virtual environment's ``activate``."""


def harmless(name: str, args: list[str]) -> bool:
    """Whether a program with its arguments trains nothing (``pip install``, not ``python``)."""
    first = args[0] if args else ""
    if name in ("awk", "gawk") and any("system" in arg or "|" in arg for arg in args):
        return False  # NOTE: awk 'BEGIN {system("python t.py")}' runs a command
    if PYTHON.fullmatch(name):
        return args[:2] in _PYTHON_HARMLESS or args[:3] == ["-m", "spacy", "download"]
    if name in ("conda", "mamba", "micromamba"):
        return first in _CONDA
    if name in ("source", "."):
        return first.rsplit("/", 1)[-1] in _ENVIRONMENTS
    return name in _HARMLESS or f"{name}:{first}" in _TOOLS


_WRAPPERS = _split(
    "env nice time timeout sudo exec stdbuf ionice numactl taskset nohup command busybox toybox"
)
"""Programs that run the command after their options (``nohup python t.py``)."""
_VALUED = _split(
    "-u --unset -C --chdir -n --adjustment -f --format -o --output -s --signal -k --kill-after",
    "--user -g --group -h --host -p --prompt -D -a -i -e --input --error -c --class -N -m",
    "--cpunodebind --membind --physcpubind --preferred -I -L -P -d -E -j -S --arg-file",
    "--delimiter --max-args --max-procs --max-lines --max-chars --eof --jobs --sshlogin --delay",
    "--timeout --joblog --results --retries --colsep --tmpdir --halt --interval",
)
"""The options of wrappers and repeaters (``xargs``, ``parallel``, ``watch``) that take a value."""


SHELLS = frozenset(
    {"sh", "bash", "dash", "zsh", "ksh", "su", "eval", "ssh"}
    | set(_split("ash mksh lksh oksh pdksh yash posh rbash fish csh tcsh"))
)
"""Programs that run a script: their script's commands are theirs (any shell a job may
call: one left out runs its loops unread)."""
HIDDEN = "\0"
"""What :func:`shell_script` returns for a script the file does not show (stdin, ``<(...)``)."""
SSH_VALUED = _split("-b -c -D -E -e -F -I -i -J -L -l -m -O -o -p -Q -R -S -W -w")


def shell_script(name: str, args: list[str]) -> str | None:
    """The script a shell runs: ``bash -c SCRIPT``, ``su -c``, ``eval WORDS``, ``ssh HOST CMD``.

    :data:`HIDDEN` where it reads one the words do not show (stdin, a ``<(...)``); "" for a
    script file (``bash setup.sh``); None where ``name`` is no shell.
    """
    if (
        name in ("source", ".")
        and args[:1]
        and (args[0].startswith("<(") or args[0] == "/dev/stdin")
    ):
        return HIDDEN  # NOTE: source <(echo ...) runs a script the file does not show
    if name not in SHELLS:
        return None
    if name == "eval":
        script = " ".join(args)
        return "" if _ENVIRONMENT_HOOK.fullmatch(script) else script
    if name == "ssh":
        at = 0
        while at < len(args) and args[at].startswith("-"):
            at += 1 + (args[at] in SSH_VALUED)
        return " ".join(args[at + 1 :]) if at + 1 < len(args) else HIDDEN
    for at, word in enumerate(args):
        if word in ("--command", "-c") or (
            name != "su" and re.fullmatch(r"-[a-zA-Z]*c[a-zA-Z]*", word)
        ):
            return args[at + 1] if at + 1 < len(args) else HIDDEN
        if word.startswith("--command="):
            return word.split("=", 1)[1]
        if not word.startswith(("-", "+")) or word == "-":
            return HIDDEN if word.startswith("<(") or word == "-" else ""
    return HIDDEN if name != "su" else ""


_ENVIRONMENT_HOOK = re.compile(
    r"""(["']?)\$\((?:conda|mamba|micromamba|pyenv|rbenv|nodenv|direnv|ssh-agent|fnm|opam)"""
    r"""(?:\s+[-\w.=/]+)*\)\1"""
)
"""``eval "$(conda shell.bash hook)"``: a tool's shell setup, as ``source activate`` is."""


_LAUNCHERS = _split("torchrun deepspeed torch.distributed.run torch.distributed.launch")
"""Programs that launch the Python script they name (``torchrun --nproc_per_node 8 t.py``)."""
_PYTHON_VALUED = frozenset({"-W", "-X", "-Q"})


def run_key(words: tuple[str, ...]) -> str:
    """What a command runs, to know it again: its program and its script.

    ``python``, ``python3`` and ``python3.11`` alike, past their options; ``-m module``
    is the script; ``./train.py`` is ``train.py``; ``torchrun``, ``accelerate launch``,
    ``deepspeed`` and ``python -m torch.distributed.run`` run the script they name, as
    ``python`` does. Any other program: its name and its first word that is no option.
    """
    at = program(list(words), 1)
    if at is None:
        return " ".join(words)
    name, args = words[at].rsplit("/", 1)[-1], list(words[at + 1 :])
    if name == "accelerate" and args[:1] == ["launch"]:
        name, args = "torchrun", args[1:]
    if PYTHON.fullmatch(name):
        name, args = "python", _python_script(args)
        if args[:1] == ["-m"] and args[1:2] and args[1] in _LAUNCHERS:
            name, args = "torchrun", args[2:]
    if name in _LAUNCHERS:
        scripts = [a for a in args if a.endswith(".py")] or [a for a in args if a[:1] not in "-"]
        name, args = "python", _python_script(scripts[:1] if scripts else [])
    if args[:1] in (["-m"], ["-c"]):
        return " ".join([name, *args[:2]])
    first = next((a for a in args if not a.startswith("-")), "")
    return f"{name} {posixpath.normpath(first)}" if first else name


def _python_script(args: list[str]) -> list[str]:
    """Python's arguments from its script on (``-m module``, ``-c code``, ``train.py``)."""
    at = 0
    while at < len(args) and args[at].startswith("-") and args[at] not in ("-m", "-c", "-"):
        at += 1 + (args[at] in _PYTHON_VALUED)
    return args[at:]


_FETCH_FLAG = (
    r"(?:-[LsSfq]+|-q?O\s*-|--proto\s+'?=https'?|--tlsv1\.[23]|--location|--silent"
    r"|--show-error|--fail|--https-only)"
)
_INSTALLER = re.compile(
    r"(?<![^\s;&|(])(?:curl|wget)(?:\s+" + _FETCH_FLAG + r")*\s+(['\"]?)https://"
    r"(?:astral\.sh/uv/(?:\d+(?:\.\d+)*/)?install\.sh|pixi\.sh/install\.sh|sh\.rustup\.rs"
    r"|install\.python-poetry\.org/?)\1(?:\s+" + _FETCH_FLAG + r")*"
    r"\s*\|\s*(?:sh|bash)(?:\s+-s(?:\s+--(?:\s+-y)?)?)?(?=[ \t]*(?:$|[;&|)\n#]))",
    re.M,
)
"""A well-known tool installer piped to a shell (``curl -LsSf https://astral.sh/uv/install.sh
| sh``: uv, pixi, rustup, poetry): one fetch of one fixed https address, its flags those that
only quiet or harden it (no ``-K`` config, no second address), into a plain shell."""


def without_installers(script: str) -> str:
    """``script`` with each :data:`_INSTALLER` pipeline as ``true``.

    A script read from a pipe is refused as unshown, but these are a third party's fixed
    installers, not the author's loop, and a SkyPilot task's setup commonly starts with one.
    """
    return _INSTALLER.sub("true", script) if "https://" in script else script
