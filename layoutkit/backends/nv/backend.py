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

from ...dtypes import FP8_FORMATS, storage_dtype
from ...errors import TargetError, UnsupportedError
from ...infer import validate
from ...infer.library import gemm_args
from ...scopes import FRAGMENT, GLOBAL, LOCAL, SCOPES, SHARED, SHARED_DYN, TMEM
from ...targets import nv
from ...targets.nv.hardware import arch_number
from ..registry import Backend
from . import rules
from .smem_cost import SharedMemoryAwareModel
from .warp_specialize import PRODUCER_THREADS, staged_copies, tma_capable


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

    def scopes_of(self, target: str) -> tuple[str, ...]:
        """Tensor memory from sm_100 on only (TileLang's ``T.alloc_tmem`` needs a TCGEN05 target).

        >>> "shared.tmem" in NvBackend().scopes_of("sm_90a"), "shared.tmem" in NvBackend().scopes_of("sm_100a")
        (False, True)
        """
        return self.scopes if arch_number(target) >= 100 else SCOPES

    def rules(self):
        return rules.RULES

    def builders(self):
        """TileLang's forms of the GEMM that force an instruction: ``p.wgmma_gemm(...)`` (``T.wgmma_gemm``, a GEMM
        that must be a WGMMA: the rule refuses it where ``T.gemm`` would select none) and ``p.tcgen05_gemm(...,
        use_2cta=False)`` (``T.tcgen05_gemm``; ``use_2cta``: it may use the two-CTA TCGEN05 MMA)."""
        return {"wgmma_gemm": wgmma_gemm, "tcgen05_gemm": tcgen05_gemm}

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
            staged = staged_copies(program)
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

    def register_lowering(self, kind: str, fn) -> None:
        """``fn(op, lowering)`` appends the IR of an op of ``kind`` to ``lowering``
        (:class:`.lower_frag.FragmentLowering`), in a fragment program or a GEMM's epilogue."""
        from .lower_frag import LOWERINGS

        LOWERINGS.register(kind)(fn)

    def unregister_lowering(self, kind: str) -> None:
        from .lower_frag import LOWERINGS

        LOWERINGS.unregister(kind)

    def print_source(self, kernel) -> str:
        from . import cuda, hopper

        if isinstance(kernel, hopper.HopperGemm):
            from . import hopper_cuda

            return hopper_cuda.print_module(kernel)
        return cuda.print_module([kernel])

    def storage_dtype(self, dtype: str):
        """The IR executor's storage types, and fp8 codes as ``uint8`` (the wgmma kernel's operands)."""
        from .execute import NV_DTYPES

        return storage_dtype(dtype, (*NV_DTYPES, *FP8_FORMATS))

    def execute(self, program, result, arrays: dict, *, gemm_instruction: str | None = None,
                tma_store: bool | None = None) -> dict:
        """Run the kernel :meth:`lower` gives (the same plan :meth:`print_source` prints): the IR kernel with
        :func:`.execute.run`, an sm_90 / sm_90a warp-specialised GEMM's :class:`~.hopper.HopperGemm` with
        :func:`.hopper_execute.run` (TMA loads, wgmma through the printed descriptors, its epilogue);
        ``gemm_instruction="mma"`` runs the ``mma.sync`` IR instead.  Global tensors not given start at zero;
        arrays come back shaped as declared."""
        from . import execute, hopper, hopper_execute

        kernel = self.lower(program, result, gemm_instruction=gemm_instruction, tma_store=tma_store)
        full = {}
        for name, b in program.buffers.items():
            if b.scope == GLOBAL:
                full[name] = arrays[name] if name in arrays else np.zeros(b.shape, self.storage_dtype(b.dtype))
        if isinstance(kernel, hopper.HopperGemm):
            out = hopper_execute.run(kernel, full)
        else:
            out = execute.run(kernel, {b.name: full[b.name] for b in kernel.scoped(GLOBAL)})
        return {name: a.reshape(program.buffers[name].shape) for name, a in out.items()}


def wgmma_gemm(p, A, B, C, transpose_A: bool = False, transpose_B: bool = False, policy: str = "square",
               clear_accum: bool = False):
    """``T.wgmma_gemm``: a GEMM op recording ``args["wgmma"]`` (see :meth:`NvBackend.builders`).

    >>> from layoutkit.infer import Program
    >>> p = Program(threads=128, target="sm_90")
    >>> A = p.alloc_shared("A", (64, 32), "float16"); B = p.alloc_shared("B", (32, 64), "float16")
    >>> C = p.alloc_fragment("C", (64, 64), "float32")
    >>> p.wgmma_gemm(A, B, C).args["wgmma"]
    True
    """
    return p.emit("gemm", gemm_args(p, A, B, C, transpose_A, transpose_B, policy, clear_accum, {"wgmma": True}))


def tcgen05_gemm(p, A, B, C, transpose_A: bool = False, transpose_B: bool = False, policy: str = "square",
                 clear_accum: bool = False, use_2cta: bool = False):
    """``T.tcgen05_gemm``: a GEMM op recording ``args["tcgen05"]`` (and ``args["use_2cta"]`` when asked)."""
    return p.emit("gemm", gemm_args(p, A, B, C, transpose_A, transpose_B, policy, clear_accum,
                                    {"tcgen05": True, "use_2cta": use_2cta}))

