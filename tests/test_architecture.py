"""The layering of docs/design.md#layers, beyond what the import-linter contract checks: no import cycle between
files, no private name imported or read across modules, and inference and the cost models name no target
(function-level imports included)."""

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


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(rel[:-1] if path.name == "__init__.py" else rel)


def _import_graph() -> dict[str, set[str]]:
    """Module -> the layoutkit modules it imports anywhere (module level, functions, ``TYPE_CHECKING``); a name
    imported from a package resolves to its submodule when there is one."""
    trees = dict(_modules())
    names = {_module_name(p) for p in trees}
    graph: dict[str, set[str]] = {}
    for path, tree in trees.items():
        me = _module_name(path)
        out = graph.setdefault(me, set())
        for module, imported in _imports(path, tree):
            if not module.startswith("layoutkit"):
                continue
            for target in [f"{module}.{n}" for n in imported if f"{module}.{n}" in names] or [module]:
                while target and target not in names:
                    target = target.rpartition(".")[0]
                if target and target != me:
                    out.add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_no_import_cycle_between_files():
    """docs/design.md#layers: no two files import each other, directly or around a ring, counting imports inside
    functions and under ``TYPE_CHECKING`` (a late import that dodges a cycle is still one)."""
    assert _cycles(_import_graph()) == []


def test_the_cycle_check_sees_a_ring():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _private_reads(path: Path, tree: ast.AST) -> list[str]:
    """``_name`` imported from, or read as an attribute of, another layoutkit module."""
    me = _module_name(path)
    modules = {_module_name(p) for p in ROOT.rglob("*.py")}
    aliases: dict[str, str] = {}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = _resolve(path, node)
            for a in node.names:
                if module.startswith("layoutkit") and a.name.startswith("_") and not a.name.startswith("__") \
                        and module != me:
                    found.append(f"{me}: imports {module}.{a.name}")
                if f"{module}.{a.name}" in modules:
                    aliases[a.asname or a.name] = f"{module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("layoutkit") and a.asname:
                    aliases[a.asname] = a.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                and node.attr.startswith("_") and not node.attr.startswith("__"):
            found.append(f"{me}: reads {aliases[node.value.id]}.{node.attr}")
    return found


def test_no_private_name_read_across_modules():
    found = [hit for path, tree in _modules() for hit in _private_reads(path, tree)]
    assert found == []


def test_the_private_name_check_sees_an_import_and_a_read():
    tree = ast.parse("from ..algebra.layout import _arity\nfrom . import cuda\nclass P(cuda._Printer): pass\n")
    hits = _private_reads(ROOT / "backends" / "nv" / "hopper_cuda.py", tree)
    assert hits == ["layoutkit.backends.nv.hopper_cuda: imports layoutkit.backends.algebra.layout._arity",
                    "layoutkit.backends.nv.hopper_cuda: reads layoutkit.backends.nv.cuda._Printer"]
