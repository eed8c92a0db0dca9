"""YAML bytes → plain data plus a source map, through every YAML safety check.

A text in the plain block style specs are written in is read a line at a time
(:mod:`gate.spec.yaml_lines`, no PyYAML imported); any other through libyaml
(:mod:`gate.spec.yaml_walk`), which also says what is wrong with a broken one. Both give
plain Python values and a :class:`SourceMap` from each data path to its 1-based position,
so later stages (validation, rules) can point at the exact line and column without
marker keys in the data.
"""

from __future__ import annotations

import copy
import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate.errors import InputError, Location
from gate.spec.yaml_lines import read_lines
from gate.spec.yaml_tags import MAX_NODES

STDIN_NAME = "<stdin>"
"""The name a spec read from stdin goes by: it lies in no directory, so no team owns it."""
MAX_FILE_BYTES = 1024 * 1024
"""Specs and policies are hand-written; anything larger is a mistake or an attack."""

DataPath = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class SourceMap:
    """Where each value (and each mapping key) of a document came from."""

    values: dict[DataPath, Location] = field(default_factory=dict)
    keys: dict[DataPath, Location] = field(default_factory=dict)

    def locate(self, path: DataPath, *, key: bool = False) -> Location | None:
        """Return the position of ``path``, or of its nearest ancestor that has one."""
        table = self.keys if key else self.values
        for end in range(len(path), -1, -1):
            found = table.get(path[:end]) or self.values.get(path[:end])
            if found is not None:
                return found
        return None

    def merged(self, other: SourceMap) -> SourceMap:
        """Overlay ``other`` on this map (for policies deep-merged over their parents)."""
        return SourceMap({**self.values, **other.values}, {**self.keys, **other.keys})


@dataclass(frozen=True, slots=True)
class LoadedDoc:
    """One parsed YAML document: its plain data, where each value came from, and its file."""

    file: str
    data: dict[str, Any]
    source_map: SourceMap
    text: str = ""
    """The document's text, for what YAML drops (a W&B sweep's ``# x-budget-gate:`` comment)."""
    ambiguous: tuple[InputError, ...] = ()
    """Values YAML 1.1 and 1.2 read differently (``010``: 8 or 10?). A spec or a policy
    refuses them (:func:`gate.spec.validation.validate`); an engine's own file keeps YAML
    1.1's reading, which its engine (PyYAML, Kubernetes) shares: ``defaultMode: 0644``."""
    exponent_texts: tuple[DataPath, ...] = ()
    """Where a plain ``1e3`` stands: text to YAML 1.1, a number to YAML 1.2 (:meth:`yaml12`)."""

    def yaml12(self) -> dict[str, Any]:
        """The data as OmegaConf (Hydra) and Kubernetes read it: a plain ``1e3`` is 1000.0.

        What YAML 1.1 keeps as text, these engines take as a number: a Hydra epochs key of
        ``1e3`` trains a thousand epochs.
        """
        if not self.exponent_texts:
            return self.data
        data = copy.deepcopy(self.data)
        for path in self.exponent_texts:
            node: Any = data
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = float(node[path[-1]].replace("_", ""))
        return data


def load_file(path: str | Path, *, empty_ok: bool = False) -> LoadedDoc:
    """Read and parse one YAML file, refusing anything unsafe or malformed.

    ``empty_ok``: a file of comments at most is an empty mapping, not an error (a Hydra
    config group may be one).
    """
    name = str(path)
    try:
        raw = read_raw(path)
    except FileNotFoundError:
        raise InputError(f"{name}: no such file", hint=_missing_hint(name)) from None
    except IsADirectoryError:
        raise InputError(
            f"{name}: is a directory", hint="pass YAML files, e.g. dir/*.yaml"
        ) from None
    except OSError as exc:
        hint = (
            "check permissions"
            if exc.errno in (errno.EACCES, errno.EPERM)
            else (
                "a link that leads back to itself: point it at the spec file"
                if exc.errno == errno.ELOOP
                else "check the path and the file"
            )
        )
        raise InputError(f"{name}: cannot read ({exc.strerror})", hint=hint) from None
    return load_bytes(raw, name, empty_ok=empty_ok)


def read_raw(path: str | Path) -> bytes:
    """A file's bytes, up to one past :data:`MAX_FILE_BYTES` (more is no spec anyway).

    NOTE: opened without blocking: the open of a FIFO with no writer would wait for one
    forever (and hang the CI job). Then read as usual: a FIFO nobody writes reads as empty,
    a pipe of a process substitution, <(cat spec.yaml), as what it carries.

    Raises:
        OSError: the file cannot be opened or read.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.set_blocking(fd, True)
        return _read_at_most(fd, MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)


def read_small_file(path: Path) -> bytes | None:
    """A regular file's bytes, at most :data:`MAX_FILE_BYTES`; ``None`` when it is absent.

    NOTE: for the files beside the policies (``allowed_signers``): a link to /dev/zero ran
    out of memory (exit 70) and a FIFO waited for a writer for ever. Opened without
    blocking, then asked what it is.

    Raises:
        gate.errors.InputError: not a regular file, too large, or unreadable.
    """
    hint = f"make {path.name} a readable file"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})", hint=hint) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(
                f"{path}:1:1: is not a regular file (a directory, a pipe or a device)", hint=hint
            )
        raw = _read_at_most(fd, MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})", hint=hint) from None
    finally:
        os.close(fd)
    if len(raw) > MAX_FILE_BYTES:
        raise InputError(
            f"{path}:1:1: file is larger than the {MAX_FILE_BYTES // 1024} KiB limit",
            hint=f"{path.name} is a short list; check that it is the right file",
        )
    return raw


BACKSLASH = "\\"


def _missing_hint(name: str) -> str:
    """How to name the file: with ``/`` where a Windows path used a backslash, else check it."""
    if BACKSLASH in name and os.path.exists(name.replace(BACKSLASH, "/")):
        return f"write the path with /, as in {name.replace(BACKSLASH, '/')}"
    return "check the path, or quote a glob the shell did not expand"


def _read_at_most(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes, to the end of the file or pipe.

    NOTE: not a buffered ``read(limit)``, which sets aside the whole megabyte for every
    small spec: 23 ms of reading a thousand specs, against 4 ms.
    """
    chunks: list[bytes] = []
    while limit > 0:
        chunk = os.read(fd, min(limit, _CHUNK))
        if not chunk:
            break
        chunks.append(chunk)
        limit -= len(chunk)
    return b"".join(chunks)


_CHUNK = 64 * 1024


def load_bytes(raw: bytes, file: str, *, empty_ok: bool = False) -> LoadedDoc:
    """Parse YAML bytes into a mapping plus its source map."""
    if len(raw) > MAX_FILE_BYTES:
        raise InputError(
            f"file is larger than the {MAX_FILE_BYTES // 1024} KiB limit",
            location=Location(file, 1, 1),
            hint="specs and policies are small; split or trim this file",
        )
    text = _decode(raw, file)
    if empty_ok and _blank(text):
        return LoadedDoc(file, {}, SourceMap(), text)
    read = read_lines(text, file)
    if read is not None and len(read[1]) <= MAX_NODES:
        data, values, keys = read
        return LoadedDoc(file, data, SourceMap(values, keys), text)
    from gate.spec.yaml_walk import read_yaml  # NOTE: PyYAML, for texts past the plain style

    data, values, keys, ambiguous, exponents = read_yaml(text, file)
    return LoadedDoc(file, data, SourceMap(values, keys), text, ambiguous, exponents)


def _blank(text: str) -> bool:
    """Whether ``text`` holds nothing but blank lines and comments."""
    return all(not line.strip() or line.lstrip().startswith("#") for line in text.split("\n"))


def _decode(raw: bytes, file: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        line_start = before[before.rfind(b"\n") + 1 :]
        col = len(line_start.decode("utf-8", errors="replace")) + 1  # characters, not bytes
        raise InputError(
            f"byte 0x{raw[exc.start]:02x} is not valid UTF-8",
            location=Location(file, line, col),
            hint="save the file as UTF-8",
        ) from None
