"""``budget-gate init``: start a repository with a policy, the schemas, a spec and the checks.

Writes ``policies/default.yaml`` (the built-in default policy), ``schemas/``, a sample spec in
``experiments/``, the pull-request workflow and a pre-commit entry. It never overwrites: when
any of those files exists, nothing is written and the command says which ones. ``--kueue``
writes only the manifests of the Kueue AdmissionCheck (``deploy/budget-gate-kueue.yaml``).
"""

from __future__ import annotations

import argparse
import sys
from importlib import resources
from pathlib import Path

from gate.commands.schema import SCHEMAS, render_schema
from gate.errors import InputError

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
    existing = sorted(path for path in files if (root / path).exists())
    if existing:
        raise InputError(
            f"{', '.join(str(root / path) for path in existing)} already "
            f"{'exists' if len(existing) == 1 else 'exist'}; init never overwrites",
            hint="move them away, or add what you need by hand (see the README's "
            "'Use it in your repository')",
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
    print(
        f"next: edit {root / 'policies/default.yaml'}, then run "
        f"budget-gate check {root / 'experiments'}",
        file=sys.stderr,
    )
    return 0


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
