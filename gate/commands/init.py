"""``budget-gate init``: start a repository with a policy, the schemas, a spec and the checks.

Writes ``policies/default.yaml`` (the built-in default policy) with two fixtures in
``policies/tests/`` (so ``policy test`` passes at once), ``schemas/``, a sample spec in
``experiments/``, the pull-request workflow and a pre-commit entry, adds ``/mlflow.db`` (the
local ledger) to ``.gitignore``, and, where ``ssh-keygen``
is installed, the ledger's signers: ``policies/allowed_signers`` listing a new CI key (its
private half in ``.budget-gate/ci-signing-key``, git-ignored, for the repository secret) and
the user's own SSH key when one is found. It never overwrites: when any of those files
exists, nothing is written and the command says which ones. ``--kueue`` writes only the
manifests of the Kueue AdmissionCheck (``deploy/budget-gate-kueue.yaml``),
``--report-workflow`` only the monthly report's workflow; given together, both.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

from gate.commands.schema import SCHEMAS, render_schema
from gate.errors import InputError
from gate.integrations.git.repo import repository_root
from gate.ledger.signing import CI_PRINCIPAL

PRE_COMMIT = """\
# budget-gate as a pre-commit hook (written by `budget-gate init`): fails on policy errors,
# not on specs that wait for an approval. Uses the budget-gate installed in your environment.
repos:
  - repo: local
    hooks:
      - id: budget-gate
        name: budget-gate
        entry: budget-gate check --fail-on error
        language: system
        files: ^experiments/.*\\.(?i:ya?ml|json)$
"""


def packaged(name: str) -> str:
    """A text file shipped in ``gate/data``."""
    return resources.files("gate").joinpath("data").joinpath(name).read_text(encoding="utf-8")


KUEUE_MANIFESTS = "deploy/budget-gate-kueue.yaml"
REPORT_WORKFLOW = ".github/workflows/budget-gate-report.yml"


def planned_files(kueue: bool = False, report_workflow: bool = False) -> dict[str, str]:
    """Every file ``init`` writes, by path relative to the repository, with its contents.

    With ``kueue``, only the Kueue AdmissionCheck's manifests (docs/kueue.md); with
    ``report_workflow``, only the scheduled workflow that posts the monthly report; with
    both, both (each flag names a file to add instead of the starter files).
    """
    extras = {
        **({KUEUE_MANIFESTS: packaged("kueue.yaml")} if kueue else {}),
        **({REPORT_WORKFLOW: packaged("report-workflow.yml")} if report_workflow else {}),
    }
    if extras:
        return extras
    sample = packaged("sample-spec.yaml")
    files = {
        "policies/default.yaml": default_policy(),
        "experiments/sample.yaml": sample,
        ".github/workflows/budget-gate.yml": packaged("workflow.yml"),
        ".pre-commit-config.yaml": PRE_COMMIT,
        **policy_fixtures(sample),
    }
    files.update({f"schemas/{name}": render_schema(model) for name, model in SCHEMAS.items()})
    return files


TEAMS_LINE = "teams: []"


def default_policy() -> str:
    """The built-in default policy with ``teams: []`` in force.

    Listed teams make a team without a policy file an error (BG203): in a repository that
    ``init`` set up there is a file to list them in; the built-in default has none.
    """
    text = packaged("default-policy.yaml")
    written = text.replace(f"# {TEAMS_LINE}\n", f"{TEAMS_LINE}\n", 1)
    assert written != text, "the default policy's teams: line changed: update init"
    return written


def policy_fixtures(sample: str) -> dict[str, str]:
    """Two fixtures for ``budget-gate policy test``: the sample passes; without a label it fails.

    So ``policy test`` passes right after ``init``, and shows how a fixture states its verdict.
    """
    body = sample.split("apiVersion:", 1)[1]
    unlabelled = body.replace("environment: research, ", "", 1)
    assert unlabelled != body, "the sample spec's labels changed: update the fixture"
    head = "# yaml-language-server: $schema=../../schemas/experiment.schema.json\n"
    return {
        "policies/tests/sample-passes.yaml": f"{head}# Policy fixture (budget-gate policy "
        "test): the sample spec passes the default policy.\napiVersion:"
        f"{body}expect: {{verdict: pass, rules: []}}\n",
        "policies/tests/missing-label.yaml": f"{head}# Policy fixture: without its environment "
        "label the sample breaks labels.required (BG201).\napiVersion:"
        f"{unlabelled}expect: {{verdict: violation, rules: [BG201]}}\n",
    }


GITIGNORE = ".gitignore"
IGNORED = "/mlflow.db"
"""The ledger's default store (``sqlite:///`` at the repository root): records, not code."""
_IGNORE_BLOCK = f"# budget-gate: the local ledger (MLflow's sqlite store)\n{IGNORED}\n"


def _ignore_ledger(root: Path) -> str:
    """Add ``/mlflow.db`` to the repository's .gitignore (created if missing); say what was done.

    Appending a line to an existing .gitignore is the one edit init makes to a file it did
    not create: a repository almost always has one.
    """
    path = root / GITIGNORE
    try:  # NOTE: patterns are bytes to git: a Latin-1 comment is no error
        current = path.read_bytes().decode("utf-8", "surrogateescape") if path.exists() else None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}", hint="fix or remove it") from None
    if current is not None and any(
        line.strip() in (IGNORED, IGNORED[1:]) for line in current.splitlines()
    ):
        return f"{path} already ignores {IGNORED[1:]}"
    try:
        with path.open("a", encoding="utf-8", errors="surrogateescape", newline="") as handle:
            gap = "" if not current or current.endswith("\n") else "\n"
            handle.write(gap + ("\n" if current else "") + _IGNORE_BLOCK)
    except OSError as exc:
        raise InputError(
            f"cannot write {path}: {exc.strerror}", hint="choose another --dir"
        ) from None
    return f"{'added' if current is not None else 'wrote'} {IGNORED[1:]} to {path}"


def _repository_of(root: Path) -> Path | None:
    """The git work tree ``root`` lies inside, when ``root`` is not its top: else None.

    The default ledger is ``mlflow.db`` at that top, whatever folder holds the policies.
    """
    top = repository_root(Path(os.path.abspath(root)))
    return None if top is None or top == Path(os.path.abspath(root)) else top


def _not_at_the_root(root: Path, top: Path) -> str:
    """What a project set up below its repository's root must move or set for CI to run."""
    below = Path(os.path.relpath(os.path.abspath(root), top)).as_posix()
    return (
        f"note: {root} is not the root of its git repository ({top}): GitHub runs only the "
        f"workflows in {top / '.github/workflows'} and pre-commit reads only "
        f"{top / '.pre-commit-config.yaml'}; move {root / '.github/workflows/budget-gate.yml'} "
        f"and {root / '.pre-commit-config.yaml'} there, with the action's specs: "
        f"{below}/experiments/** and policy-dir: {below}/policies"
    )


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _refuse_links(root: Path, paths: list[str]) -> None:
    """Refuse, before anything is written, a path through a link or a file where a folder is.

    A ``policies`` that links outside the repository took the policies (and a linked
    ``.budget-gate`` the CI key) elsewhere; a file named ``.budget-gate`` left half the files
    written and the key lost.
    """
    for relative in paths:
        at = root
        for part in Path(relative).parts:
            at = at / part
            if at.is_symlink():
                raise InputError(
                    f"{at} is a symbolic link: init writes only into the repository itself",
                    hint="remove the link, or run init where it is not",
                )
            if at != root / relative and at.exists() and not at.is_dir():
                raise InputError(
                    f"{at} is a file where init needs a folder for {root / relative}",
                    hint="move it away, then run init again",
                )


def _taken(path: Path) -> bool:
    """Whether something is at ``path`` (a broken link too); one out of reach is bad input."""
    try:
        return path.is_symlink() or path.exists()
    except OSError as exc:
        raise InputError(
            f"{path}: cannot be reached ({exc.strerror})",
            hint="run init where every path it writes can be created",
        ) from None


def _skip(root: Path, files: dict[str, str], existing: list[str]) -> None:
    """Leave out the files that exist (``--skip-existing``), each said.

    NOTE: the signers file and the CI key are a pair: where either exists, neither is
    written (a new CI key beside an old signers file would sign nothing that counts).
    """
    pair = [path for path in (SIGNERS, CI_KEY, ".budget-gate/.gitignore") if path in files]
    kept = set(existing) | (set(pair) if set(pair) & set(existing) else set())
    for path in sorted(kept):
        files.pop(path)
        why = "it exists" if path in existing else "its signing pair exists"
        print(f"kept {root / path} ({why}; --skip-existing)", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """Write the starting files under ``args.dir``, or none of them if any exists."""
    if not args.dir.strip():
        raise InputError("--dir is empty", hint="name the repository root, e.g. --dir .")
    root = Path(args.dir)
    kueue = bool(getattr(args, "kueue", False))
    files = planned_files(kueue, bool(getattr(args, "report_workflow", False)))
    if "policies/default.yaml" in files:
        files.update(signing_files(root))
    signing = CI_KEY in files
    existing = sorted(path for path in files if _taken(root / path))
    if existing and not getattr(args, "skip_existing", False):
        raise InputError(
            f"{', '.join(str(root / path) for path in existing)} already "
            f"{'exists' if len(existing) == 1 else 'exist'}; init never overwrites",
            hint="pass --skip-existing to write only the files that are missing, or move "
            "these away",
        )
    _skip(root, files, existing)
    _refuse_links(root, [*files, *([GITIGNORE] if "policies/default.yaml" in files else [])])
    for path, text in files.items():
        _create(root / path, text, private=path == CI_KEY)
        print(f"wrote {root / path}", file=sys.stderr)
    if "policies/default.yaml" in files:
        top = _repository_of(root)
        if top is not None:
            _refuse_links(top, [GITIGNORE])
        print(_ignore_ledger(top or root), file=sys.stderr)
        if top is not None:
            print(_not_at_the_root(root, top), file=sys.stderr)
    if kueue:
        print(
            f"next: replace REPLACE_ME in {root / KUEUE_MANIFESTS}, create the ledger secret "
            f"(its header says how), then kubectl apply --server-side -f {root / KUEUE_MANIFESTS}",
            file=sys.stderr,
        )
    if REPORT_WORKFLOW in files:
        print("next: set the MLFLOW_TRACKING_URI secret of the repository", file=sys.stderr)
        return 0
    if "policies/default.yaml" not in files:  # NOTE: --kueue alone writes its manifests only
        return 0
    if CI_KEY in files:
        print(
            f"next: store {root / CI_KEY} as the repository secret BUDGET_GATE_SIGNING_KEY "
            f"(gh secret set BUDGET_GATE_SIGNING_KEY < {root / CI_KEY}), then delete it; "
            "docs/signing.md says how approvers add their keys",
            file=sys.stderr,
        )
    elif not signing:
        print(
            "note: ssh-keygen was not found, so no policies/allowed_signers was written: "
            "ledger records stay unsigned until you add one (docs/signing.md)",
            file=sys.stderr,
        )
    print(
        f"next: edit {root / 'policies/default.yaml'}, then run "
        f"budget-gate check {root / 'experiments'}",
        file=sys.stderr,
    )
    return 0


SIGNERS = "policies/allowed_signers"
CI_KEY = ".budget-gate/ci-signing-key"
SIGNERS_HEADER = """\
# Who may sign budget-gate's ledger records, in the allowed_signers format git uses for SSH
# commit signing: a name, then an SSH public key (docs/signing.md). Read from the base branch.
# - budget-gate-ci: the key CI signs GitHub approvals with (its private half is the
#   repository secret BUDGET_GATE_SIGNING_KEY);
# - an approver who approves at a terminal (budget-gate approve --by NAME) signs as NAME,
#   listed in approval.approvers.users, with their own key;
# - whoever launches (budget-gate verify, gate.open_guard) signs as BUDGET_GATE_SIGNER.
"""


def signing_files(root: Path) -> dict[str, str]:
    """The signers file with a new CI key (and the user's key), and the CI key's private half.

    Nothing when ``ssh-keygen`` is missing: init still works, and says records stay unsigned.
    """
    if shutil.which("ssh-keygen") is None:
        return {}
    with tempfile.TemporaryDirectory() as folder:
        key = Path(folder) / "ci"
        made = subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", CI_PRINCIPAL, "-f", str(key)],
            capture_output=True,
            check=False,
        )
        if made.returncode != 0:
            return {}
        private = key.read_text(encoding="ascii")
        public = " ".join(key.with_suffix(".pub").read_text(encoding="ascii").split()[:2])
    lines = [SIGNERS_HEADER, f"{CI_PRINCIPAL} {public}\n"]
    mine = _own_key()
    if mine is not None:
        name, found = mine
        lines.append(f"{name} {found}\n")
    gitignore = "# budget-gate: the CI signing key init made, until it is a repository secret\n*\n"
    return {SIGNERS: "".join(lines), CI_KEY: private, ".budget-gate/.gitignore": gitignore}


def _own_key() -> tuple[str, str] | None:
    """The user's SSH public key (ssh-agent's first, else ~/.ssh/id_*.pub) and their name."""
    from gate.commands.records import os_user
    from gate.integrations.git.repo import user_email

    name = user_email() or os_user()
    if name and any(char in name for char in " \t*?,!\"'"):
        # NOTE: a pattern in allowed_signers (dev@corp,*) would sign as anyone: said, not kept
        print(
            f"note: your key is not in allowed_signers: {name!r} is a pattern there, not a "
            "name (add your key under your name by hand, docs/signing.md)",
            file=sys.stderr,
        )
        return None
    if not name:
        return None
    listed = subprocess.run(["ssh-add", "-L"], capture_output=True, text=True, check=False)
    candidates = listed.stdout.splitlines() if listed.returncode == 0 else []
    for kind in ("id_ed25519", "id_ecdsa", "id_rsa"):
        path = Path.home() / ".ssh" / f"{kind}.pub"
        if path.is_file():
            candidates.append(path.read_text(encoding="ascii", errors="replace"))
    for line in candidates:
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith(("ssh-", "ecdsa-")):
            return name, f"{parts[0]} {parts[1]}"
    return None


def _create(path: Path, text: str, *, private: bool = False) -> None:
    """Create ``path`` (and its folders); fail rather than replace a file that appeared.

    A ``private`` file (the CI signing key) is its owner's alone from its first byte: made
    0644 and narrowed later, it stayed readable by every user when a later step failed.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = 0o600 if private else 0o644
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, mode)
        with open(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
    except FileExistsError:
        raise InputError(f"{path} appeared while init ran; init never overwrites") from None
    except OSError as exc:
        raise InputError(
            f"cannot write {path}: {exc.strerror}", hint="choose another --dir"
        ) from None
