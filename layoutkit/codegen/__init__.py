"""Code generation from solved programs, for any registered backend (:mod:`layoutkit.backends`): ``lower``
to the backend's IR, ``emit`` / ``emit_cuda`` / ``emit_ascend_c`` its source, ``execute`` it with numpy to check
the numbers on a CPU.  The facade dispatches on the program's target through
:func:`layoutkit.backends.get_backend`, so importing it loads no backend: the first program of a target loads
that target's.  The NVIDIA backend has a per-thread IR (:mod:`layoutkit.backends.nv.ir`), a CUDA C++ printer
(:mod:`layoutkit.backends.nv.cuda`) and an executor (:mod:`layoutkit.backends.nv.execute`), the Ascend one
:mod:`layoutkit.backends.ascend.ir`, :mod:`layoutkit.backends.ascend.ascend_c` and
:mod:`layoutkit.backends.ascend.execute`.

Lowered for NVIDIA (sm_80+ with ``mma.sync``; sm_75 float16 as two ``m16n8k8`` per k16 step, synchronous
copies; for ``target="sm_90"`` or ``"sm_90a"`` a GEMM whose pipelined copies are TMA loads - the copy
selection that gives the inference its producer + consumer thread range - prints as a warp-specialised kernel
(compiled with ``-arch=sm_90a``, as TileLang compiles sm_90): TMA tile loads into the inferred swizzled tiles,
an mbarrier pipeline, ``wgmma.mma_async`` from shared-memory descriptors (fp16 / bf16, and fp8 e4m3 / e5m2
with a K-major B), ``setmaxnreg``, see :mod:`layoutkit.backends.nv.hopper`; :func:`lower` then gives its
:class:`~layoutkit.backends.nv.hopper.HopperGemm` and :func:`execute` runs that same plan with numpy
(:mod:`layoutkit.backends.nv.hopper_execute`: the TMA loads into the swizzled tiles, wgmma through the printed
descriptors, the epilogue the plan chose); the lowering option ``gemm_instruction="mma"`` keeps such a GEMM on
``mma.sync`` atoms, for :func:`lower`, :func:`emit_cuda` and :func:`execute` alike, computing the
wgmma-shaped accumulator the inference picks):

* the GEMM of :func:`layoutkit.infer.programs.gemm`: fp16 / bf16 ``m16n8k16``, int8 / uint8 ``m16n8k32`` and
  fp32 operands as tf32 ``m16n8k8``, ``B`` either way (``ldmatrix``, ``.trans`` for 16-bit; 32- / 128-bit
  word reads, int8 ones transposed with ``prmt``, for an 8- or 32-bit ``B`` stored ``[K, N]``), any stage count
  as a ``cp.async`` pipeline; the accumulator stored through shared memory in 16-byte row runs;
* after the GEMM, or alone, fragment ops (:mod:`layoutkit.backends.nv.lower_frag`): global <-> fragment copies
  (1-D replicated fragments too), parallel loops whose ``compute`` is one of
  :data:`layoutkit.backends.nv.ir.COMPUTE_FNS` (``bias[j]`` style reads resolved through the fragments' thread
  maps), and ``reduce`` (sum / max / min, dim 0 or 1, clear or not:
  per-thread fold, ``__shfl_xor_sync`` butterflies, a shared-memory step across warps) - so
  :func:`~layoutkit.infer.programs.gemm_rowmax_bias` and :func:`~layoutkit.infer.programs.elementwise`;
* layout conversions free mode inserts (``result.conversions``): staged through shared memory in the tile the
  cost model priced, with a barrier (:func:`layoutkit.backends.nv.lower_frag.lower_conversion`).  The Ascend
  lowering refuses them.

Every entry point first checks its arguments (:mod:`layoutkit.backends.checks`): a result that does not solve
the program (missing layouts, another program's shapes or thread count, a Layout where a Fragment belongs),
missing or unknown arrays, wrong shapes or dtypes raise :class:`~layoutkit.errors.CodegenInputError` /
:class:`~layoutkit.errors.DtypeError` naming the buffer.  Anything else raises
:class:`~layoutkit.errors.UnsupportedError` naming the op (e.g. ``wgmma`` / TMA
kernels other than the sm_90a GEMM, sm_75 operands other than float16, sm_70 and older, ops other than copy / fill
/ parallel / reduce after the GEMM).

>>> import numpy as np
>>> from layoutkit.infer import infer_layouts, programs
>>> p = programs.gemm(M=48, N=40, K=40, bM=32, bN=32, bK=32)
>>> r = infer_layouts(p)
>>> a = np.ones((48, 40), np.float16); b = np.ones((40, 40), np.float16)
>>> float(execute(p, r, {"A": a, "B": b})["C"][47, 39])
40.0
>>> "mma.sync.aligned.m16n8k16" in emit_cuda(p, r)
True
"""

from __future__ import annotations

from pathlib import Path

from ..backends import checks, get_backend
from ..errors import CodegenInputError, UnsupportedError

__all__ = ["CodegenInputError", "emit", "emit_ascend_c", "emit_cuda", "execute", "lower"]


def lower(program, result, **options):
    """The IR kernel of ``program`` solved by ``result`` (its :func:`~layoutkit.infer.infer_layouts`; Ascend
    programs lower to :mod:`layoutkit.backends.ascend.ir` and may pass ``None`` to use their annotations).  A result
    that does not solve ``program`` raises :class:`~layoutkit.errors.CodegenInputError` naming the buffer; an op the
    lowering does not support, :class:`~layoutkit.errors.UnsupportedError` naming the op. ``options``: the backend's
    lowering options (NVIDIA: ``gemm_instruction="mma"`` keeps an sm_90 GEMM on ``mma.sync``, ``"wgmma"`` insists on
    the warp-specialised kernel; the default follows the copy selection; ``tma_store=False`` keeps that kernel's
    accumulator stores in registers, ``True`` insists on the store through shared memory and TMA); another raises
    :class:`~layoutkit.errors.CodegenInputError`.

    >>> from layoutkit.infer import infer_layouts, programs
    >>> p = programs.elementwise(M=64, N=64, bM=32, bN=32)
    >>> lower(p, infer_layouts(p)).grid
    (2, 2)
    >>> q = programs.gemm(M=256, N=256, K=256, bM=128, bN=128, bK=64, threads=256, target="sm_90")
    >>> r = infer_layouts(q)
    >>> type(lower(q, r)).__name__, type(lower(q, r, gemm_instruction="mma")).__name__
    ('HopperGemm', 'Kernel')
    """
    backend = _checked(program, result, "lower", options=options)
    return backend.lower(program, result, **options)


def _checked(program, result, where: str, arrays: dict | None = None, options: dict | None = None):
    """The program's backend, after the checks every entry point makes (in this order)."""
    checks.check_program(program, where)
    backend = get_backend(program.target)
    unknown = sorted(set(options or ()) - backend.lowering_options)
    if unknown:
        raise CodegenInputError(f"{where}: lowering options {unknown} are not the {backend.name} backend's; expected "
                                f"some of {sorted(backend.lowering_options)}")
    backend.check_target(program, **(options or {}))  # before the layouts: inference may leave some out
    checks.check_result(program, result, where, backend.requires_layouts)
    if arrays is not None:
        checks.check_arrays(program, arrays, backend.storage_dtype)
    backend.check_lowerable(result, where)
    return backend


def _language(program, language: str, where: str, message: str) -> None:
    checks.check_program(program, where)
    if get_backend(program.target).language != language:
        raise UnsupportedError(message.format(target=program.target))


def emit_cuda(program, result, **options) -> str:
    """CUDA C++ source (one translation unit, ``extern "C" __global__`` kernel) of a solved NVIDIA program
    (``options``: the lowering options of :func:`lower`).

    >>> from layoutkit.infer import infer_layouts, programs
    >>> p = programs.elementwise(M=64, N=64, bM=32, bN=32)
    >>> "__global__" in emit_cuda(p, infer_layouts(p))
    True
    """
    _language(program, "cuda", "emit_cuda",
              "emit_cuda: expected an NVIDIA program; found target {target!r} (use emit_ascend_c)")
    return get_backend(program.target).print_source(lower(program, result, **options))


def emit_ascend_c(program, result) -> str:
    """Ascend C source (one translation unit) of a solved Ascend program (``result`` may be ``None``, see
    :func:`lower`); an NVIDIA program raises :class:`~layoutkit.errors.UnsupportedError`.

    >>> from layoutkit.infer import infer_layouts, programs
    >>> p = programs.elementwise(M=64, N=64, bM=32, bN=32)
    >>> emit_ascend_c(p, infer_layouts(p))
    Traceback (most recent call last):
    ...
    layoutkit.errors.UnsupportedError: emit_ascend_c: expected a program with target='ascend'; found 'sm_80'
    """
    _language(program, "ascend_c", "emit_ascend_c",
              "emit_ascend_c: expected a program with target='ascend'; found {target!r}")
    backend = _checked(program, result, "emit_ascend_c")
    return backend.print_source(backend.lower(program, result))


def execute(program, result, arrays: dict, **options) -> dict:
    """Run the lowered kernel with numpy on ``arrays`` (global tensor name -> array, shaped as declared) and
    return every global tensor, shaped as declared: the kernel :func:`lower` gives for the same ``options``
    (the lowering options), which :func:`emit_cuda` prints.  Every input (a global tensor no op writes) needs an
    array; outputs not given start at zero.  NVIDIA arrays must have the storage dtype exactly
    (:func:`layoutkit.backends.nv.execute.np_dtype`: ``bfloat16`` as ``uint16`` bit patterns, see
    :func:`layoutkit.backends.nv.execute.to_bf16`; fp8 operands of the sm_90 wgmma GEMM as ``uint8`` codes);
    Ascend arrays hold floating values (``bfloat16`` outputs come back as float32 values).  Anything else
    raises :class:`~layoutkit.errors.CodegenInputError` / :class:`~layoutkit.errors.DtypeError` naming the array.

    >>> import numpy as np
    >>> from layoutkit.infer import infer_layouts, programs
    >>> p = programs.elementwise(M=64, N=64, bM=32, bN=32)
    >>> a = np.full((64, 64), -2, np.float16)
    >>> float(execute(p, infer_layouts(p), {"A": a})["B"][63, 63])
    -2.0
    """
    backend = _checked(program, result, "execute", arrays, options)
    return backend.execute(program, result, arrays, **options)


def emit(program, result, directory, **options) -> list[Path]:
    """Write the kernel source into ``directory`` (created): ``<kernel name>.cu`` for NVIDIA,
    ``<kernel name>.cpp`` for Ascend; returns the paths written.

    >>> import tempfile
    >>> from layoutkit.infer import infer_layouts, programs
    >>> p = programs.elementwise(M=64, N=64, bM=32, bN=32)
    >>> [f.suffix for f in emit(p, infer_layouts(p), tempfile.mkdtemp())]
    ['.cu']
    """
    kernel = lower(program, result, **options)
    backend = get_backend(program.target)
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{kernel.name}{backend.suffix}"
    path.write_text(backend.print_source(kernel))
    return [path]
