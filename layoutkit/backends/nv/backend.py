"""The NVIDIA backend (``target="sm_*"``): the GEMM and copy rules, swizzle merging and the thread range of
sm_90 warp specialisation (the hooks of :class:`layoutkit.infer.target.Target`), and code generation: lowering
to :mod:`.ir`, the CUDA printer :mod:`.cuda` and the numpy executor :mod:`.execute`.

>>> from layoutkit.infer import programs
>>> t = NvBackend()
>>> t.thread_range(programs.gemm(threads=256, target="sm_90")), t.thread_range(programs.gemm(threads=256))
((128, 256), (0, 256))
"""

from __future__ import annotations

import numpy as np

from ...errors import TargetError, UnsupportedError
from ...infer import validate
from ...scopes import FRAGMENT, GLOBAL, LOCAL, SCOPES, SHARED, SHARED_DYN, TMEM
from ...targets import nv
from ...targets.nv.copy import CopyOperand, CopySelectionError, select_copy_instruction
from ...targets.nv.hardware import arch_number
from ..registry import Backend
from . import rules
from .smem_cost import SharedMemoryAwareModel

PRODUCER_THREADS = 128
"""Threads of the producer warp group TileLang's warp specialisation adds in front of the consumers
when every pipelined copy is a TMA load (one warp group issues them)."""


class NvBackend(Backend):
    family = "sm_*"
    name = "nv"
    language = "cuda"
    suffix = ".cu"

    targets = f"sm_{nv.ARCH_RANGE[0]} .. sm_{nv.ARCH_RANGE[1]} (an a or f suffix too)"

    def target_name(self, text: str) -> str:
        """``sm_<n>`` with its suffix, for an SM number the NVIDIA rules cover
        (:data:`layoutkit.targets.nv.ARCH_RANGE`).

        >>> NvBackend().target_name("sm90a")
        'sm_90a'
        """
        number, suffix = nv.parse_arch(text)
        lo, hi = nv.ARCH_RANGE
        if not lo <= number <= hi:
            raise TargetError(f"the NVIDIA rules cover sm_{lo} .. sm_{hi}; found {text!r}")
        return f"sm_{number}{suffix}"

    scopes = (*SCOPES, TMEM)
    """The NVIDIA scopes and Blackwell tensor memory (``shared.tmem``, sm_100 and later only)."""

    def rules(self):
        return rules.RULES

    def max_vector_bits(self, target: str, global_only: bool) -> int:
        """256 bits on sm_100 and later for a loop touching global and no shared memory (Blackwell's 256-bit
        global loads and stores, as TileLang's ``MaxVectorLoadBits``), else 128.

        >>> NvBackend().max_vector_bits("sm_100a", True), NvBackend().max_vector_bits("sm_90", True)
        (256, 128)
        """
        return 256 if global_only and arch_number(target) >= 100 else 128

    def check_gemm(self, A, B, C, args: dict, what: str) -> None:
        """The generic GEMM check; C may be any on-chip buffer: a fragment, tensor memory (a TCGEN05
        accumulator), or a per-thread ``local`` / shared buffer, which TileLang's ``T.gemm`` takes too; the
        instruction the rule selects decides whether it can accumulate there
        (:mod:`layoutkit.targets.nv.gemm_scopes`: the FMA fallback can, MMA and WGMMA refuse it at inference
        time, as TileLang's do)."""
        validate.gemm(A, B, C, args, what, accumulators=(FRAGMENT, TMEM, LOCAL, SHARED, SHARED_DYN))

    def local_rules(self):
        """The copy and atomic-add rules read only their own buffers' layouts (the instruction is a function
        of the program)."""
        return frozenset({"copy", "atomic_add"})

    def cost_models(self):
        return {"smem-aware": SharedMemoryAwareModel}

    def merge(self, old, new, dtype):
        """Two bank swizzles keep the smaller granularity (:func:`layoutkit.targets.nv.merge_swizzles`)."""
        return nv.merge_swizzles(old, new, dtype)

    def thread_range(self, program) -> tuple[int, int]:
        """``(0, threads)``, or for sm_90+ warp specialisation (pipelined global -> shared copies feeding a
        GEMM or a sparse GEMM, at least one a TMA load) ``(128, threads)``: TileLang puts one 128-thread
        producer warp group first and the ``threads`` consumers after it; when some producer copy cannot be a
        TMA load it runs as SIMT code on a producer partition as wide as the consumers: ``(threads, threads)``."""
        t = program.threads
        arch = program.target
        if arch_number(arch) >= 90:
            staged = [op for op in program.ops if op.kind == "copy" and op.args["dst"] in program.stages
                      and program.buffers[op.args["src"]].scope == GLOBAL]
            if staged and any(op.kind in ("gemm", "gemm_sp") for op in program.ops):
                tma = [tma_capable(program, op) for op in staged]
                if all(tma):
                    return (PRODUCER_THREADS, t)
                if any(tma):  # a SIMT producer copy keeps the producer partition at the full block
                    return (t, t)
        return (0, t)

    # ---- code generation (its modules load on first use: import layoutkit needs only the rules) ------
    lowering_options = frozenset({"gemm_instruction", "tma_store"})

    def check_target(self, program, *, gemm_instruction: str | None = None, tma_store: bool | None = None) -> None:
        """The ``mma.sync`` lowering's operand / arch check, or for the wgmma kernel its own (fp8 is wgmma
        only)."""
        from . import hopper, lower

        if hopper.uses_hopper(program, gemm_instruction):
            hopper.check_operands(program)
        else:
            if tma_store:
                raise UnsupportedError("tma_store=True: the TMA-store epilogue is the sm_90 wgmma kernel's; this "
                                       f"program lowers to mma.sync (target {program.target!r})")
            lower.check_target(program)  # before the layouts: inference may leave some out for such a target

    def lower(self, program, result, *, gemm_instruction: str | None = None, tma_store: bool | None = None):
        """The IR kernel, or for an sm_90 / sm_90a warp-specialised GEMM its :class:`.hopper.HopperGemm`
        (:func:`.hopper.uses_hopper`: the kernel the copy selection and thread range imply;
        ``gemm_instruction="mma"`` gives the ``mma.sync`` kernel instead; ``tma_store``: its epilogue's store
        through shared memory and TMA, :func:`.hopper.plan`)."""
        from . import hopper, lower

        if not hopper.uses_hopper(program, gemm_instruction):
            return lower.lower(program, result)
        try:
            return hopper.plan(program, result, tma_store=tma_store)
        except UnsupportedError as e:
            if gemm_instruction is not None:
                raise
            raise UnsupportedError(f"{e} (the lowering option gemm_instruction='mma' gives the mma.sync kernel, "
                                   "without the producer warp group the inference placed)") from e

    def print_source(self, kernel) -> str:
        from . import cuda, hopper

        if isinstance(kernel, hopper.HopperGemm):
            from . import hopper_cuda

            return hopper_cuda.print_module(kernel)
        return cuda.print_module([kernel])

    def storage_dtype(self, dtype: str):
        from .execute import np_dtype

        return np_dtype(dtype)

    def execute(self, program, result, arrays: dict) -> dict:
        """Global tensors not given start at zero; arrays come back shaped as declared.  An sm_90a GEMM runs
        its IR lowering (``mma.sync`` atoms, the same products); its printed wgmma kernel runs on the CPU
        harness of :mod:`layoutkit.testing.cuda_cpu`."""
        from . import lower
        from .execute import np_dtype, run

        kernel = lower.lower(program, result)
        full = {}
        for b in kernel.scoped(GLOBAL):
            shape = program.buffers[b.name].shape
            full[b.name] = arrays[b.name] if b.name in arrays else np.zeros(shape, np_dtype(b.dtype))
        out = run(kernel, full)
        return {name: a.reshape(program.buffers[name].shape) for name, a in out.items()}


def tma_capable(program, op) -> bool:
    """Whether a global -> shared copy can be a TMA load (16-byte rows and global strides)."""
    sides = []
    for name, (starts, extents) in ((op.args["src"], op.args["src_region"]), (op.args["dst"], op.args["dst_region"])):
        buf = program.buffers[name]
        sides.append(CopyOperand(buf.scope, buf.dtype, buf.shape, tuple(zip(starts, extents))))
    try:
        select_copy_instruction(*sides, program.target, prefer_instruction="tma")
    except CopySelectionError:
        return False
    return True
