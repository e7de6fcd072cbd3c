"""The layering of docs/design.md#layers, beyond what the import-linter contract checks: no private name is imported
across packages, and inference and the cost models name no target (function-level imports included)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "layoutkit"
TARGET_AWARE = ("targets", "backends", "codegen", "plot", "frontends", "cli", "demo")


def _modules():
    for path in sorted(ROOT.rglob("*.py")):
        yield path, ast.parse(path.read_text(), str(path))


def _package(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(rel[:-1]) if path.name == "__init__.py" else ".".join(rel[:-1])


def _resolve(path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = _package(path).split(".")
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(path, tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            yield _resolve(path, node), [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, []


def _subpackage(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else parts[0]


def test_no_private_name_imported_across_packages():
    found = []
    for path, tree in _modules():
        here = _package(path)
        for module, names in _imports(path, tree):
            if not module.startswith("layoutkit"):
                continue
            for name in names:
                if name.startswith("_") and not name.startswith("__") and not module.startswith(here):
                    found.append(f"{path.relative_to(ROOT.parent)}: {name} from {module}")
    assert not found, found


@pytest.mark.parametrize("layer", ["infer", "cost"])
def test_inference_and_cost_name_no_target(layer):
    found = []
    for path, tree in _modules():
        if path.relative_to(ROOT).parts[0] != layer:
            continue
        for module, _names in _imports(path, tree):
            if _subpackage(module) in {f"layoutkit.{p}" for p in TARGET_AWARE}:
                found.append(f"{path.relative_to(ROOT.parent)} imports {module}")
    assert not found, found


def test_the_check_sees_a_violation(tmp_path):
    """The private-name check is able to fail: a module importing ``_x`` from another package is caught."""
    tree = ast.parse("from ..algebra.layout import _arity\n")
    path = ROOT / "infer" / "engine.py"
    names = [(m, n) for m, n in _imports(path, tree)]
    assert names == [("layoutkit.algebra.layout", ["_arity"])]
    assert not "layoutkit.algebra.layout".startswith(_package(path))


def test_readme_folder_table_names_every_package():
    """README's "What is where" table lists every package of layoutkit (two levels deep) and nothing else."""
    text = (ROOT.parent / "README.md").read_text()
    table = text.split("## What is where", 1)[1].split("\n## ", 1)[0]
    listed = {line.split("`")[1].rstrip("/") for line in table.splitlines() if line.startswith("| `")}
    packages = {str(p.parent.relative_to(ROOT)) for p in ROOT.glob("*/__init__.py")}
    packages |= {str(p.parent.relative_to(ROOT)) for p in ROOT.glob("*/*/__init__.py")}
    # a package with listed sub-packages need not be listed itself
    required = {p for p in packages if not any(q.startswith(p + "/") for q in packages)}
    assert required <= listed, sorted(required - listed)
    assert listed <= packages, sorted(listed - packages)
