"""Every module outside a package ``__init__`` holds code of its own: one that only imports names (and lists
them in ``__all__``) is a re-export left behind by a move, and its callers belong at the real path."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "layoutkit"


def _is_reexport_only(tree: ast.Module) -> bool:
    """Whether ``tree`` holds nothing but a docstring, imports and an ``__all__`` (or no statement at all)."""

    def passive(node: ast.stmt) -> bool:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return True
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return True
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign)) else []
        return bool(targets) and all(isinstance(t, ast.Name) and t.id == "__all__" for t in targets)

    return all(passive(node) for node in tree.body)


def test_no_module_only_re_exports():
    found = [str(path.relative_to(ROOT.parent)) for path in sorted(ROOT.rglob("*.py"))
             if path.name != "__init__.py" and _is_reexport_only(ast.parse(path.read_text(), str(path)))]
    assert found == [], f"modules that only re-export names (import from the real module instead): {found}"


def test_the_check_sees_a_re_export():
    shim = ast.parse('"""Old name."""\nfrom .real import *  # noqa\n__all__ = ["f"]\n')
    assert _is_reexport_only(shim)
    assert not _is_reexport_only(ast.parse('from .real import f\n\nCONSTANT = f(1)\n'))
