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
  :func:`~layoutkit.infer.kernels.gemm_rowmax_bias` and :func:`~layoutkit.infer.kernels.elementwise`;
* layout conversions free mode inserts (``result.conversions``): staged through shared memory in the tile the
  cost model priced, with a barrier (:func:`.lower_frag.lower_conversion`).  The Ascend lowering refuses them.

Every entry point first checks its arguments (:mod:`.checks`): a result that does not solve the program
(missing layouts, another program's shapes or thread count, a Layout where a Fragment belongs), missing or
unknown arrays, wrong shapes or dtypes raise :class:`~layoutkit.errors.CodegenInputError` /
:class:`~layoutkit.errors.DtypeError` naming the buffer.  Anything else raises
:class:`~layoutkit.errors.UnsupportedError` naming the op (e.g. ``wgmma`` / TMA
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

from ..errors import CodegenInputError, UnsupportedError
from . import ascend_c, ascend_ir, checks, cuda, execute_ascend, ir, lower_ascend, lower_nv
from .execute import np_dtype, run

__all__ = ["CodegenInputError", "emit", "emit_ascend_c", "emit_cuda", "execute", "lower", "ir"]


def lower(program, result) -> ir.Kernel | ascend_ir.Kernel:
    """The IR kernel of ``program`` solved by ``result`` (its :func:`~layoutkit.infer.infer_layouts`; Ascend
    programs lower to :mod:`.ascend_ir` and may pass ``None`` to use their annotations).  A result that does not
    solve ``program`` raises :class:`~layoutkit.errors.CodegenInputError` naming the buffer; an op the lowering does not
    support, :class:`~layoutkit.errors.UnsupportedError` naming the op.

    >>> from layoutkit.infer import infer_layouts, kernels
    >>> p = kernels.elementwise(M=64, N=64, bM=32, bN=32)
    >>> lower(p, infer_layouts(p)).grid
    (2, 2)
    """
    checks.check_program(program, "lower")
    if not program.is_ascend:
        lower_nv.check_target(program)  # before the layouts: inference may leave some out for such a target
    checks.check_result(program, result, "lower")
    if program.is_ascend:
        _refuse_conversions(result, "lower")
        return lower_ascend.lower(program, result)
    return lower_nv.lower(program, result)


def _refuse_conversions(result, where: str) -> None:
    """Ascend lowers no layout conversion (NVIDIA stages them through shared memory, :mod:`.lower_frag`)."""
    for conv in getattr(result, "conversions", ()):
        raise UnsupportedError(f"{where}: {conv.op} reads fragment {conv.buffer} through a layout conversion "
                               f"({conv.src.describe()} -> {conv.dst.describe()}); the Ascend lowering does not "
                               "convert layouts: solve with a cost model that does not convert")


def emit_cuda(program, result) -> str:
    """CUDA C++ source (one translation unit, ``extern "C" __global__`` kernel) of a solved NVIDIA program.

    >>> from layoutkit.infer import infer_layouts, kernels
    >>> p = kernels.elementwise(M=64, N=64, bM=32, bN=32)
    >>> "__global__" in emit_cuda(p, infer_layouts(p))
    True
    """
    checks.check_program(program, "emit_cuda")
    if program.is_ascend:
        raise UnsupportedError(f"emit_cuda: expected an NVIDIA program; found target {program.target!r} (use "
                               "emit_ascend_c)")
    return cuda.print_module([lower(program, result)])


def emit_ascend_c(program, result) -> str:
    """Ascend C source (one translation unit) of a solved Ascend program (``result`` may be ``None``, see
    :func:`lower`); an NVIDIA program raises :class:`~layoutkit.errors.UnsupportedError`.

    >>> from layoutkit.infer import infer_layouts, kernels
    >>> p = kernels.elementwise(M=64, N=64, bM=32, bN=32)
    >>> emit_ascend_c(p, infer_layouts(p))
    Traceback (most recent call last):
    ...
    layoutkit.errors.UnsupportedError: emit_ascend_c: expected a program with target='ascend'; found 'sm_80'
    """
    checks.check_program(program, "emit_ascend_c")
    if not program.is_ascend:
        raise UnsupportedError(f"emit_ascend_c: expected a program with target='ascend'; found {program.target!r}")
    checks.check_result(program, result, "emit_ascend_c")
    _refuse_conversions(result, "emit_ascend_c")
    return ascend_c.print_kernel(lower_ascend.lower(program, result))


def execute(program, result, arrays: dict) -> dict:
    """Run the lowered kernel with numpy on ``arrays`` (global tensor name -> array, shaped as declared) and
    return every global tensor, shaped as declared.  Every input (a global tensor no op writes) needs an
    array; outputs not given start at zero.  NVIDIA arrays must have the storage dtype exactly
    (:func:`.execute.np_dtype`: ``bfloat16`` as ``uint16`` bit patterns, see :func:`.execute.to_bf16`);
    Ascend arrays hold floating values (``bfloat16`` outputs come back as float32 values).  Anything else
    raises :class:`~layoutkit.errors.CodegenInputError` / :class:`~layoutkit.errors.DtypeError` naming the array.

    >>> import numpy as np
    >>> from layoutkit.infer import infer_layouts, kernels
    >>> p = kernels.elementwise(M=64, N=64, bM=32, bN=32)
    >>> a = np.full((64, 64), -2, np.float16)
    >>> float(execute(p, infer_layouts(p), {"A": a})["B"][63, 63])
    -2.0
    """
    checks.check_program(program, "execute")
    if not program.is_ascend:
        lower_nv.check_target(program)
    checks.check_result(program, result, "execute")
    if program.is_ascend:
        checks.check_arrays(program, arrays, lambda dtype: None)
        _refuse_conversions(result, "execute")
        return execute_ascend.run(lower_ascend.lower(program, result), arrays)
    checks.check_arrays(program, arrays, np_dtype)
    kernel = lower_nv.lower(program, result)
    full = {}
    for b in kernel.scoped("global"):
        shape = program.buffers[b.name].shape
        full[b.name] = arrays[b.name] if b.name in arrays else np.zeros(shape, np_dtype(b.dtype))
    out = run(kernel, full)
    return {name: a.reshape(program.buffers[name].shape) for name, a in out.items()}


def emit(program, result, directory) -> list[Path]:
    """Write the kernel source into ``directory`` (created): ``<kernel name>.cu`` for NVIDIA,
    ``<kernel name>.cpp`` for Ascend; returns the paths written.

    >>> import tempfile
    >>> from layoutkit.infer import infer_layouts, kernels
    >>> p = kernels.elementwise(M=64, N=64, bM=32, bN=32)
    >>> [f.suffix for f in emit(p, infer_layouts(p), tempfile.mkdtemp())]
    ['.cu']
    """
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
