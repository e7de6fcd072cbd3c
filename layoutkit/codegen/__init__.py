"""Code generation from solved programs: lowering to a per-thread IR (:mod:`.ir`), a CUDA C++ printer
(:mod:`.cuda`) and a numpy executor (:mod:`.execute`) that checks the numbers on a CPU.

Lowered so far (NVIDIA, sm_80+): the GEMM of :func:`layoutkit.infer.kernels.gemm` (fp16 m16n8k16 with ``B``
either way; int8 m16n8k32 with ``transpose_B=True``; any stage count, as a ``cp.async`` pipeline) and fragment
programs such as :func:`~layoutkit.infer.kernels.elementwise` (global <-> fragment copies, parallel loops whose
``compute`` is ``copy`` or ``relu``).  Anything else raises :class:`~layoutkit.errors.UnsupportedError`
naming the op: GEMM + bias + row max (parallel with two reads, reduce), wgmma accumulators, tf32/bf16, Ascend.

>>> import numpy as np
>>> from layoutkit.infer import infer_layouts, kernels
>>> p = kernels.gemm(M=48, N=40, K=40, bM=32, bN=32, bK=32)
>>> r = infer_layouts(p)
>>> a = np.ones((48, 40), np.float16); b = np.ones((40, 40), np.float16)
>>> float(execute(p, r, {"A": a, "B": b})["C"][47, 39])
40.0
>>> "mma.sync.aligned.m16n8k16" in emit_cuda(p, r)
True
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import UnsupportedError
from . import cuda, ir, lower_nv
from .execute import np_dtype, run

__all__ = ["emit", "emit_cuda", "execute", "lower", "ir"]


def lower(program, result) -> ir.Kernel:
    """The IR kernel of a solved program (NVIDIA targets only)."""
    if program.is_ascend:
        raise UnsupportedError("codegen: Ascend C lowering is not implemented")
    return lower_nv.lower(program, result)


def emit_cuda(program, result) -> str:
    """CUDA C++ source (one translation unit) of a solved program."""
    return cuda.print_module([lower(program, result)])


def execute(program, result, arrays: dict) -> dict:
    """Run the lowered kernel with numpy on ``arrays`` (global tensor name -> array; missing outputs start at
    zero); returns every global tensor, shaped as declared."""
    kernel = lower(program, result)
    full = {}
    for b in kernel.scoped("global"):
        shape = program.buffers[b.name].shape
        full[b.name] = arrays[b.name] if b.name in arrays else np.zeros(shape, np_dtype(b.dtype))
    out = run(kernel, full)
    return {name: a.reshape(program.buffers[name].shape) for name, a in out.items()}


def emit(program, result, directory) -> list[Path]:
    """Write ``<kernel name>.cu`` into ``directory`` (created); returns the paths written."""
    kernel = lower(program, result)
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{kernel.name}.cu"
    path.write_text(cuda.print_module([kernel]))
    return [path]
