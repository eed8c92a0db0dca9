"""The Kubernetes client stays behind ``serve kueue-admission``."""

from __future__ import annotations

import ast

from tests.conftest import ROOT


def test_only_the_kueue_api_module_imports_the_kubernetes_client():
    importers = set()
    for path in sorted((ROOT / "gate").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            if any(n.split(".")[0] in {"kubernetes", "urllib3", "kopf"} for n in names):
                importers.add(path.relative_to(ROOT).as_posix())
    assert importers == {"gate/integrations/kubernetes/api.py"}


def test_the_decisions_import_no_kubernetes_and_no_network():
    for path in sorted((ROOT / "gate" / "admission").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        modules = {
            (n.module or "") if isinstance(n, ast.ImportFrom) else a.name
            for n in ast.walk(tree)
            if isinstance(n, ast.Import | ast.ImportFrom)
            for a in (n.names if isinstance(n, ast.Import) else [n])
        }
        assert not {m for m in modules if m.startswith(("gate.integrations", "kubernetes"))}, path
