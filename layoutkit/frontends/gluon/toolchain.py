"""Triton's compiler around :func:`~layoutkit.frontends.gluon.resolve`: GLIR text to a compiled kernel for a
target, without a GPU (Triton 3.9 compiles GLIR to TTGIR, PTX and cubin on a CPU), and a ``@gluon.jit``
kernel's GLIR.  triton is imported only inside these functions (the ``gluon`` extra)."""

from __future__ import annotations

import re
import subprocess
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


def _tool(name: str) -> str:
    triton, _ = _triton()
    return str(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name)


_GLOBAL_ACCESS = re.compile(r"\b(ld|st)\.global(?:\.[a-z_]+)*?(?:\.v(\d))?\.(?:b|f|u|s)(\d+)")


def kernel_metrics(kernel: Any) -> dict[str, int]:
    """What the Gluon comparisons measure of a compiled kernel: ``converts`` (``ttg.convert_layout`` ops in its
    TTGIR), ``load_bits`` / ``store_bits`` (the narrowest global access in its PTX, 0 for none), ``sass``
    (instructions in its cubin), ``regs`` and ``spill_bytes`` (``cuobjdump -res-usage``; -1 when not reported)."""
    ttgir, ptx = kernel.asm["ttgir"], kernel.asm["ptx"]
    widths: dict[str, list[int]] = {"load": [], "store": []}
    for m in _GLOBAL_ACCESS.finditer(ptx):
        widths["load" if m.group(1) == "ld" else "store"].append(int(m.group(2) or 1) * int(m.group(3)))
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(kernel.asm["cubin"])
        f.flush()
        sass = subprocess.run([_tool("cuobjdump"), "-sass", f.name], capture_output=True, text=True).stdout
        res = subprocess.run([_tool("cuobjdump"), "-res-usage", f.name], capture_output=True, text=True).stdout
    regs = re.search(r"REG:(\d+)", res)
    local = re.search(r"LOCAL:(\d+)", res)
    return {
        "converts": ttgir.count("ttg.convert_layout"),
        "load_bits": min(widths["load"], default=0),
        "store_bits": min(widths["store"], default=0),
        "sass": len(re.findall(r"/\*[0-9a-f]{4}\*/\s+\S", sass)),
        "regs": int(regs.group(1)) if regs else -1,
        "spill_bytes": int(local.group(1)) if local else -1,
    }


def regressions(ours: dict[str, int], author: dict[str, int]) -> list[str]:
    """The comparison bars one kernel misses against its author's version: more conversions, a narrower global
    load or store, spills where the author has none (the SASS ratio is judged over a whole list)."""
    out = []
    if ours["converts"] > author["converts"]:
        out.append("more converts")
    if ours["load_bits"] < author["load_bits"] or ours["store_bits"] < author["store_bits"]:
        out.append("narrower vectors")
    if ours["spill_bytes"] > 0 and author["spill_bytes"] == 0:
        out.append("new spills")
    return out
