"""Triton's compiler around :func:`~layoutkit.frontends.gluon.resolve`: GLIR text to a compiled kernel for a
target, without a GPU (Triton 3.9 compiles GLIR to TTGIR, PTX and cubin on a CPU), and a ``@gluon.jit``
kernel's GLIR.  triton is imported only inside these functions (the ``gluon`` extra)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from ...errors import UnsupportedError
from .resolver import sm_number


def _triton() -> Any:
    try:
        import triton
        from triton.backends.compiler import GPUTarget
    except ImportError as err:
        raise UnsupportedError(f"compiling GLIR needs triton 3.9 (the 'gluon' extra): {err}") from None
    return triton, GPUTarget


def compile_glir(glir_text: str, target: str, **options: Any) -> Any:
    """``triton.compile`` of GLIR text for ``target`` (``"sm_80"``, ``"sm_90"``): the CompiledKernel."""
    triton, GPUTarget = _triton()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.glir"
        path.write_text(glir_text)
        return triton.compile(str(path), target=GPUTarget("cuda", sm_number(target), 32), options=options or None)


def kernel_glir(kernel: Any, signature: dict, target: str, constexprs: dict | None = None,
                attrs: dict | None = None, num_warps: int = 4) -> str:
    """The GLIR of a ``@gluon.jit`` kernel as Gluon writes it (before layout resolution)."""
    _, GPUTarget = _triton()
    from triton._C.libtriton import ir
    from triton.compiler.compiler import make_backend
    from triton.experimental.gluon._runtime import GluonASTSource

    # Gluon's own front half only (make_ir): the GLIR exists even where Gluon cannot resolve its layouts
    src = GluonASTSource(kernel, signature, constexprs=constexprs, attrs=attrs)
    context_target = GPUTarget("cuda", sm_number(target), 32)
    backend = make_backend(context_target)
    options = backend.parse_options({"num_warps": num_warps})
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    codegen_fns = backend.get_codegen_implementation(options)
    module_map = backend.get_module_map()
    module = src.make_ir(context_target, options, codegen_fns, module_map, context)
    return str(module)
