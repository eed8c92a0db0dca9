"""``budget-gate init``: start a repository with a policy, the schemas, a spec and the checks.

Writes ``policies/default.yaml`` (the built-in default policy), ``schemas/``, a sample spec in
``experiments/``, the pull-request workflow and a pre-commit entry, and, where ``ssh-keygen``
is installed, the ledger's signers: ``policies/allowed_signers`` listing a new CI key (its
private half in ``.budget-gate/ci-signing-key``, git-ignored, for the repository secret) and
the user's own SSH key when one is found. It never overwrites: when any of those files
exists, nothing is written and the command says which ones. ``--kueue`` writes only the
manifests of the Kueue AdmissionCheck (``deploy/budget-gate-kueue.yaml``).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

from gate.commands.schema import SCHEMAS, render_schema
from gate.errors import InputError
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
        files: ^experiments/.*\\.ya?ml$
"""


def packaged(name: str) -> str:
    """A text file shipped in ``gate/data``."""
    return resources.files("gate").joinpath("data").joinpath(name).read_text(encoding="utf-8")


KUEUE_MANIFESTS = "deploy/budget-gate-kueue.yaml"
REPORT_WORKFLOW = ".github/workflows/budget-gate-report.yml"


def planned_files(kueue: bool = False, report_workflow: bool = False) -> dict[str, str]:
    """Every file ``init`` writes, by path relative to the repository, with its contents.

    With ``kueue``, only the Kueue AdmissionCheck's manifests (docs/kueue.md); with
    ``report_workflow``, only the scheduled workflow that posts the monthly report.
    """
    if kueue:
        return {KUEUE_MANIFESTS: packaged("kueue.yaml")}
    if report_workflow:
        return {REPORT_WORKFLOW: packaged("report-workflow.yml")}
    files = {
        "policies/default.yaml": packaged("default-policy.yaml"),
        "experiments/sample.yaml": packaged("sample-spec.yaml"),
        ".github/workflows/budget-gate.yml": packaged("workflow.yml"),
        ".pre-commit-config.yaml": PRE_COMMIT,
    }
    files.update({f"schemas/{name}": render_schema(model) for name, model in SCHEMAS.items()})
    return files


def run(args: argparse.Namespace) -> int:
    """Write the starting files under ``args.dir``, or none of them if any exists."""
    root = Path(args.dir)
    kueue = bool(getattr(args, "kueue", False))
    files = planned_files(kueue, bool(getattr(args, "report_workflow", False)))
    if "policies/default.yaml" in files:
        files.update(signing_files(root))
    existing = sorted(path for path in files if (root / path).exists())
    if existing:
        raise InputError(
            f"{', '.join(str(root / path) for path in existing)} already "
            f"{'exists' if len(existing) == 1 else 'exist'}; init never overwrites",
            hint="move them away, or add what you need by hand (docs/getting-started.md "
            "lists what init writes)",
        )
    for path, text in files.items():
        _create(root / path, text)
        print(f"wrote {root / path}", file=sys.stderr)
    if kueue:
        print(
            f"next: replace REPLACE_ME in {root / KUEUE_MANIFESTS}, create the ledger secret "
            f"(its header says how), then kubectl apply --server-side -f {root / KUEUE_MANIFESTS}",
            file=sys.stderr,
        )
    if REPORT_WORKFLOW in files:
        print("next: set the MLFLOW_TRACKING_URI secret of the repository", file=sys.stderr)
        return 0
    if CI_KEY in files:
        (root / CI_KEY).chmod(0o600)
        print(
            f"next: store {root / CI_KEY} as the repository secret BUDGET_GATE_SIGNING_KEY "
            f"(gh secret set BUDGET_GATE_SIGNING_KEY < {root / CI_KEY}), then delete it; "
            "docs/signing.md says how approvers add their keys",
            file=sys.stderr,
        )
    else:
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
    if not name or " " in name:
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


def _create(path: Path, text: str) -> None:
    """Create ``path`` (and its folders); fail rather than replace a file that appeared."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("x", encoding="utf-8", newline="") as handle:
            handle.write(text)
    except FileExistsError:
        raise InputError(f"{path} appeared while init ran; init never overwrites") from None
    except OSError as exc:
        raise InputError(
            f"cannot write {path}: {exc.strerror}", hint="choose another --dir"
        ) from None
