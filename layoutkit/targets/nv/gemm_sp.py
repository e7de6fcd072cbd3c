"""The layout rule of ``T.gemm_sp(A, E, B, C)`` (2:4 structured-sparse GEMM) on an NVIDIA target, as
TileLang 0.1.15's ``GemmSP`` decides it.

1. The instruction: ``wgmma.sp`` where the dense GEMM's WGMMA conditions hold for the sparse dtype table
   (sm_90, ``M >= 64``, whole warp groups, B shared; 16-bit ``K % 32``, tf32 / 8-bit K-major only), else
   ``mma.sp``; there is none before sm_80.
2. The warp partition (:func:`~layoutkit.targets.nv.mma_sp.compute_sparse_warp_partition`).
3. Layouts, ``mma.sp``: shared A (compressed ``[M, K/2]``) and B get TileLang's ``make_swizzled_layout``
   over the whole buffer, unless the buffer already has a layout when the op is first inferred (TileLang
   keeps it); A / B in registers get the ``mma.sp`` load fragments; C the accumulator.  The metadata E is
   laid out by nobody: it keeps the kernel's annotation, or none.  ``wgmma.sp``: as the dense WGMMA
   (bank swizzles by contiguous run, the compressed A's run being ``K/2``; register A and C the WGMMA
   fragments).

>>> r = gemm_sp_layouts(("shared", (64, 16), "float16"), ("shared", (64, 2), "int16"),
...                     ("shared", (32, 64), "float16"), ("local.fragment", (64, 64), "float32"), threads=128)
>>> r.instruction, r.warp_partition, (r.M, r.N, r.K), sorted(r.layouts)
('mma.sp', (2, 2), (64, 64, 32), ['A', 'B', 'C'])
"""

from __future__ import annotations

from ...algebra.layout import Layout
from ...dtypes import canonical_dtype, element_bits, is_float8
from ...errors import ShapeError, UnsupportedError
from ...fragment.fragment import Fragment
from .gemm import GemmLayouts, GemmOperand
from .hardware import WARP_SIZE, arch_number
from .mma_sp import (
    SPARSE_FACTOR,
    compute_sparse_warp_partition,
    make_mma_sp_load_layout,
    make_mma_sp_store_layout,
    metadata_factor,
)
from .swizzle import (
    make_full_bank_swizzled_layout,
    make_half_bank_swizzled_layout,
    make_linear_layout,
    make_quarter_bank_swizzled_layout,
    make_swizzled_layout,
)
from .wgmma import make_wgmma_load_layout, make_wgmma_store_layout, wgmma_inst_n


def _operand(x, name: str) -> GemmOperand:
    if isinstance(x, GemmOperand):
        return x
    if isinstance(x, (tuple, list)) and len(x) in (3, 4):
        return GemmOperand(x[0], tuple(x[1]), x[2], None if len(x) == 3 or x[3] is None else tuple(x[3]))
    raise ShapeError(f"T.gemm_sp operand {name} must be a GemmOperand or (scope, shape, dtype[, tile]); found {x!r}")


def gemm_sp_shape(A: GemmOperand, E: GemmOperand, B: GemmOperand, C: GemmOperand, transpose_A: bool,
                  transpose_B: bool, transpose_E: bool) -> tuple[int, int, int]:
    """``(M, N, K)`` of a sparse GEMM (K logical: A holds ``K/2`` columns), checking the operands agree
    and that E is ``[M, K/factor]`` (transposed ``[K/factor, M]``, :func:`.mma_sp.metadata_factor`)."""
    a0, a1 = A.tile_shape
    M, Ka = (a1, a0) if transpose_A else (a0, a1)
    b0, b1 = B.tile_shape
    Kb, N = (b1, b0) if transpose_B else (b0, b1)
    K = Ka * SPARSE_FACTOR
    if K != Kb or tuple(C.shape[-2:]) != (M, N):
        raise ShapeError(f"T.gemm_sp shapes disagree: compressed A {A.tile_shape} (transpose_A={transpose_A}) gives "
                         f"M={M}, K={K}; B {B.tile_shape} (transpose_B={transpose_B}) gives K={Kb}, N={N}; C is "
                         f"{C.shape}, expected [..., {M}, {N}]")
    factor = metadata_factor(A.dtype, E.dtype)
    want = (K // factor, M) if transpose_E else (M, K // factor)
    if K % factor or tuple(E.tile_shape) != want:
        raise ShapeError(f"T.gemm_sp metadata E {E.tile_shape} ({E.dtype}, one element per {factor} columns of "
                         f"{A.dtype}): expected {list(want)} for M={M}, K={K} (transpose_E={transpose_E})")
    return M, N, K


def select_gemm_sp_instruction(A, E, B, C, *, transpose_A: bool = False, transpose_B: bool = False,
                               transpose_E: bool = False, threads: int = 128, arch: str | int = "sm_80") -> str:
    """``"wgmma.sp"`` or ``"mma.sp"`` (TileLang 0.1.15's ``GemmSP`` selection).

    >>> ops = (("shared", (64, 16), "float16"), ("shared", (64, 2), "int16"), ("shared", (32, 64), "float16"),
    ...        ("local.fragment", (64, 64), "float32"))
    >>> select_gemm_sp_instruction(*ops, arch="sm_90"), select_gemm_sp_instruction(*ops, arch="sm_80")
    ('wgmma.sp', 'mma.sp')
    """
    A, E, B, C = (_operand(x, n) for x, n in ((A, "A"), (E, "E"), (B, "B"), (C, "C")))
    M, N, K = gemm_sp_shape(A, E, B, C, transpose_A, transpose_B, transpose_E)
    sm = arch_number(arch)
    if sm < 80:
        raise UnsupportedError(f"T.gemm_sp needs mma.sp (sm_80+); found sm_{sm}, for which TileLang 0.1.15 has no "
                               f"sparse GEMM either")
    if 90 <= sm < 100 and M >= 64 and (int(threads) // WARP_SIZE) % 4 == 0 and B.shared \
            and _wgmma_sp_dtypes_ok(A.dtype, B.dtype, C.dtype, transpose_A, transpose_B, K):
        return "wgmma.sp"
    return "mma.sp"


def _wgmma_sp_dtypes_ok(a: str, b: str, c: str, trans_a: bool, trans_b: bool, K: int) -> bool:
    k_major = (not trans_a) and trans_b
    if c in ("float16", "float32"):
        if a == b and a in ("float16", "bfloat16"):
            return K % 32 == 0
        if a == b == "float32":
            return k_major and K % 16 == 0
        return is_float8(a) and is_float8(b) and k_major and K % 64 == 0
    if c == "int32":
        return a in ("int8", "uint8") and b in ("int8", "uint8") and k_major and K % 64 == 0
    return False


def gemm_sp_layouts(A, E, B, C, *, transpose_A: bool = False, transpose_B: bool = False, transpose_E: bool = False,
                    threads: int = 128, arch: str | int = "sm_80", policy: object = "square",
                    thread_range: tuple[int, int] | None = None, laid_out: frozenset[str] = frozenset(),
                    instruction: str | None = None) -> GemmLayouts:
    """The layouts ``T.gemm_sp(A, E, B, C)`` imposes (see the module doc).  ``laid_out`` names the operands
    (``"A"`` / ``"B"``) whose shared buffer already has a layout when the op is inferred: ``mma.sp``
    proposes none for them."""
    A, E, B, C = (_operand(x, n) for x, n in ((A, "A"), (E, "E"), (B, "B"), (C, "C")))
    start, extent = (0, int(threads)) if thread_range is None else (int(thread_range[0]), int(thread_range[1]))
    if extent % WARP_SIZE:
        raise ShapeError(f"T.gemm_sp needs whole warps; found {extent} threads")
    M, N, K = gemm_sp_shape(A, E, B, C, transpose_A, transpose_B, transpose_E)
    if A.dtype != B.dtype:
        raise UnsupportedError(f"T.gemm_sp takes A and B of one dtype (TileLang 0.1.15 asserts it); found "
                               f"{A.dtype} and {B.dtype}")
    if element_bits(A.dtype) not in (8, 16, 32) or canonical_dtype(C.dtype) not in ("float16", "float32", "int32"):
        raise UnsupportedError(f"T.gemm_sp takes 8/16/32-bit operands into a float16 / float32 / int32 "
                               f"accumulator; found {A.dtype} x {B.dtype} -> {C.dtype}")
    inst = instruction or select_gemm_sp_instruction(A, E, B, C, transpose_A=transpose_A, transpose_B=transpose_B,
                                                     transpose_E=transpose_E, threads=extent, arch=arch)
    if not C.fragment:
        raise ShapeError(f"T.gemm_sp accumulates into a fragment (local.fragment); C is in {C.scope!r}")
    m_warp, n_warp = compute_sparse_warp_partition(M, N, extent // WARP_SIZE, policy, arch, inst)
    wrt, wct = M // m_warp, N // n_warp
    if inst == "wgmma.sp":
        out = _wgmma_sp_layouts(A, B, K, transpose_A, transpose_B, (m_warp, n_warp, wrt, wct))
    else:
        out = _mma_sp_operands(A, B, K, transpose_A, transpose_B, laid_out, (m_warp, n_warp, wrt, wct))
        out["C"] = make_mma_sp_store_layout(m_warp, n_warp, wrt, wct, A.dtype, K)
    out = {k: _bind(v, start, extent) if isinstance(v, Fragment) else v for k, v in out.items()}
    return GemmLayouts(inst, (m_warp, n_warp), M, N, K, out)


def _mma_sp_operands(A: GemmOperand, B: GemmOperand, K: int, transpose_A: bool, transpose_B: bool,
                     laid_out: frozenset[str], warps: tuple[int, int, int, int]) -> dict[str, Layout]:
    out: dict[str, Layout] = {}
    for name, op, trans in (("A", A, transpose_A), ("B", B, transpose_B)):
        if op.shared:
            if name not in laid_out:
                out[name] = make_swizzled_layout(op.shape, op.dtype)
        elif op.fragment:
            out[name] = make_mma_sp_load_layout(name, op.dtype, *warps, K, trans)
        else:
            raise UnsupportedError(f"mma.sp takes {name} from shared memory or registers; found {op.scope!r}")
    return out


def _wgmma_sp_layouts(A: GemmOperand, B: GemmOperand, K: int, transpose_A: bool, transpose_B: bool,
                      warps: tuple[int, int, int, int]) -> dict[str, Layout]:
    """``wgmma.sp``: shared operands get the widest bank swizzle their contiguous run allows (A: ``K/2``
    K-major, else the 64-row instruction; B: ``K`` K-major, else the instruction's N), never padding; a
    register A the WGMMA A fragment of the compressed ``K/2`` (the sparse instruction's A registers are
    the dense one's over the stored columns); C the WGMMA accumulator.  Shared layouts are proposed even
    where the buffer has one (TileLang keeps existing ones only for ``mma.sp``)."""
    m_warp, n_warp, wrt, wct = warps
    if not B.shared or not (A.shared or A.fragment):
        raise UnsupportedError(f"wgmma.sp needs B in shared memory and A in shared memory or registers; found "
                               f"A {A.scope}, B {B.scope}")
    vec = 128 // element_bits(A.dtype)

    def shared(op: GemmOperand, continuity: int) -> Layout:
        for per, make in ((8, make_full_bank_swizzled_layout), (4, make_half_bank_swizzled_layout),
                          (2, make_quarter_bank_swizzled_layout)):
            if continuity % (vec * per) == 0:
                return make(op.shape, op.dtype)
        return make_linear_layout(op.shape, op.dtype)

    out: dict[str, Layout] = {}
    out["A"] = (shared(A, K // SPARSE_FACTOR if not transpose_A else 64) if A.shared else
                make_wgmma_load_layout(A.dtype, m_warp, n_warp, wrt, wct, K // SPARSE_FACTOR, transpose_A))
    out["B"] = shared(B, K if transpose_B else wgmma_inst_n(wct))
    out["C"] = make_wgmma_store_layout(m_warp, n_warp, wrt, wct, dtype=A.dtype, chunk=K)
    return out


def _bind(frag: Fragment, start: int, extent: int) -> Fragment:
    return frag.bind_thread_range(start, extent)
