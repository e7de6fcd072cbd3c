"""Importing the package, or inference, loads neither the optional heavy libraries nor the backends of
targets nobody asked for (a module-set check in a fresh interpreter, not a timing)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("sympy", "islpy", "networkx", "matplotlib")


def _modules_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=300)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_import_infer_loads_no_heavy_library() -> None:
    loaded = _modules_after("import layoutkit.infer")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    assert "layoutkit.backends.nv" not in loaded and "layoutkit.targets" not in loaded


def test_inference_on_one_target_loads_only_its_backend() -> None:
    loaded = _modules_after(
        "from layoutkit.infer import infer_layouts, programs\n"
        "assert infer_layouts(programs.gemm()).layout_map['C_local'].thread_extent == 128"
    )
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    assert "layoutkit.backends.nv" in loaded and "layoutkit.backends.ascend" not in loaded


def test_public_names_still_import_from_their_paths() -> None:
    import layoutkit as lk
    from layoutkit import infer

    for name in lk.__all__:
        assert getattr(lk, name) is not None
    for name in infer.__all__:
        assert getattr(infer, name) is not None
    assert lk.tla.Layout is not None and infer.conversions.LayoutConversion is infer.LayoutConversion
    assert {"nv", "ascend"} <= set(lk.backends.backend_names())


def test_parametric_layouts_are_public_and_load_sympy_only_when_read() -> None:
    assert "sympy" not in _modules_after("import layoutkit, layoutkit.tla")
    loaded = _modules_after("import layoutkit as lk\nassert lk.ParametricFragment.__name__ == 'ParametricFragment'\n"
                            "assert lk.tla.ParametricTlaLayout.__module__ == 'layoutkit.tla.parametric'")
    assert "sympy" in loaded and "layoutkit.fragment.parametric" in loaded
    import layoutkit as lk
    from layoutkit.algebra.parametric import ParametricLayout, Symbol

    assert lk.ParametricLayout is ParametricLayout and lk.Symbol is Symbol


def test_import_codegen_loads_no_backend() -> None:
    """The facade dispatches through the backend registry: a backend loads when a program's target needs it."""
    loaded = _modules_after("import layoutkit.codegen")
    backends = sorted(m for m in loaded if m.startswith(("layoutkit.backends.nv", "layoutkit.backends.ascend")))
    assert backends == [], backends
    loaded = _modules_after("from layoutkit import codegen\nfrom layoutkit.infer import infer_layouts, programs\n"
                            "p = programs.elementwise(M=64, N=64, bM=32, bN=32)\n"
                            "assert '__global__' in codegen.emit_cuda(p, infer_layouts(p))")
    assert "layoutkit.backends.nv.cuda" in loaded and "layoutkit.backends.ascend" not in loaded
