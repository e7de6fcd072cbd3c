"""Code generation from solved programs: lowering to a per-thread IR (:mod:`.ir`), a CUDA C++ printer
(:mod:`.cuda`) and a numpy executor (:mod:`.execute`) that checks the numbers on a CPU.

Lowered for NVIDIA (sm_80+ with ``mma.sync``; sm_75 float16 as two ``m16n8k8`` per k16 step, synchronous
copies; for sm_90 the wgmma-shaped accumulator the inference picks is computed with ``mma.sync`` atoms):

* the GEMM of :func:`layoutkit.infer.kernels.gemm`: fp16 / bf16 ``m16n8k16``, int8 / uint8 ``m16n8k32`` and
  fp32 operands as tf32 ``m16n8k8``, ``B`` either way (``ldmatrix``, ``.trans`` for 16-bit; per-lane shared
  reads for an 8- or 32-bit ``B`` stored ``[K, N]``), any stage count as a ``cp.async`` pipeline;
* after the GEMM, or alone, fragment ops (:mod:`.lower_frag`): global <-> fragment copies (1-D replicated
  fragments too), parallel loops whose ``compute`` is one of :data:`.ir.COMPUTE_FNS` (``bias[j]`` style reads
  resolved through the fragments' thread maps), and ``reduce`` (sum / max / min, dim 0 or 1, clear or not:
  per-thread fold, ``__shfl_xor_sync`` butterflies, a shared-memory step across warps) - so
  :func:`~layoutkit.infer.kernels.gemm_rowmax_bias` and :func:`~layoutkit.infer.kernels.elementwise`.

Anything else raises :class:`~layoutkit.errors.UnsupportedError` naming the op (e.g. ``wgmma`` / TMA
instructions are not emitted, sm_75 operands other than float16, sm_70 and older, ops other than copy / fill
/ parallel / reduce after the GEMM).

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

from . import ascend_c, ascend_ir, cuda, execute_ascend, ir, lower_ascend, lower_nv
from .execute import np_dtype, run

__all__ = ["emit", "emit_ascend_c", "emit_cuda", "execute", "lower", "ir"]


def lower(program, result) -> ir.Kernel | ascend_ir.Kernel:
    """The IR kernel of a solved program (Ascend programs lower to :mod:`.ascend_ir`)."""
    if program.is_ascend:
        return lower_ascend.lower(program, result)
    return lower_nv.lower(program, result)


def emit_cuda(program, result) -> str:
    """CUDA C++ source (one translation unit) of a solved program."""
    return cuda.print_module([lower(program, result)])


def emit_ascend_c(program, result) -> str:
    """Ascend C source (one translation unit) of a solved Ascend program."""
    return ascend_c.print_kernel(lower_ascend.lower(program, result))


def execute(program, result, arrays: dict) -> dict:
    """Run the lowered kernel with numpy on ``arrays`` (global tensor name -> array; missing outputs start at
    zero); returns every global tensor, shaped as declared."""
    if program.is_ascend:
        return execute_ascend.run(lower_ascend.lower(program, result), arrays)
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
    if program.is_ascend:
        path = d / f"{kernel.name}.cpp"
        path.write_text(ascend_c.print_kernel(kernel))
        return [path]
    path = d / f"{kernel.name}.cu"
    path.write_text(cuda.print_module([kernel]))
    return [path]
