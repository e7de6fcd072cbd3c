"""The GEMM layout rule the inference engine calls for ``T.gemm(A, B, C)`` on an NVIDIA target.

1. Pick the instruction family as TileLang's ``Gemm::SelectInst`` does: TCGEN05 (sm_100, C in tensor
   memory), WGMMA (sm_90, ``M >= 64``, whole warp groups, B shared and a supported dtype triple),
   FMA (sm_70 / sm_75 when their MMA cannot take the dtypes or shape), else MMA.
2. Partition the warps (:func:`~layoutkit.targets.nv.partition.compute_warp_partition`).
3. Layouts: A/B in shared memory get swizzles over the whole buffer, so leading (pipeline stage)
   dims pass through (``[S, R, C]`` -> ``swizzle.expand([S])``); C gets the accumulator (store)
   fragment; A/B in registers get the MMA load fragments.  Fragments are bound to the block's
   thread range.  Each instruction reads only some scopes (:mod:`.gemm_scopes`): an MMA / WGMMA of
   ``T.alloc_local`` operands or into a shared accumulator is refused as TileLang's inference refuses it;
   the FMA fallback lays out its fragment operands only.

>>> from layoutkit.targets import nv
>>> r = nv.gemm_layouts(("shared", (2, 32, 32), "float16"), ("shared", (2, 32, 32), "float16"),
...                     ("local.fragment", (32, 32), "float32"), threads=128)
>>> r.instruction, r.warp_partition
('mma', (2, 2))
>>> print(r["A"].forward_index[-1])
_j % 8 * 32 + (_k // 8 ^ _j % 8 // 2) * 8 + _k % 8
>>> r["A"].input_shape, r["A"].swizzle.kind      # the 64B swizzle of [32, 32], stage dim passed through
((2, 32, 32), 'half')
>>> print(r["C"].forward_thread, r["C"].thread_range)
_j // 16 * 64 + _i // 16 * 32 + _i % 8 * 4 + _j % 8 // 2 (0, 128)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ...algebra.layout import Layout
from ...algebra.shapes import check_shape
from ...dtypes import canonical_dtype, element_bits, is_float8
from ...errors import ShapeError, UnsupportedError
from ...fragment.fragment import Fragment
from .copy import FRAGMENT_SCOPES, SHARED_SCOPES, TMEM_SCOPES
from .gemm_scopes import check_operand_scopes
from .hardware import WARP_SIZE, arch_number
from .mma import make_mma_load_layout, make_mma_store_layout
from .partition import compute_warp_partition, normalize_policy
from .swizzle import (
    make_full_bank_swizzled_layout,
    make_half_bank_swizzled_layout,
    make_linear_layout,
    make_quarter_bank_swizzled_layout,
    make_swizzled_layout,
    make_volta_swizzled_layout,
)
from .volta import make_volta_load_layout, make_volta_store_layout
from .wgmma import make_wgmma_load_layout, make_wgmma_store_layout


@dataclass(frozen=True)
class GemmOperand:
    """A GEMM operand buffer: memory ``scope``, full buffer ``shape`` (leading pipeline dims
    included) and element ``dtype``; ``tile`` the (rows, cols) of the region the GEMM reads when
    that is part of a shared buffer (``A_s[:, 32:64]``: M / N / K come from it, the swizzle still
    covers the whole buffer, as in TileLang), None for the whole buffer.

    >>> GemmOperand("shared", (64, 64), "float16", (64, 32)).tile_shape
    (64, 32)
    """

    scope: str
    shape: tuple[int, ...]
    dtype: str
    tile: tuple[int, int] | None = None

    def __post_init__(self):
        object.__setattr__(self, "shape", check_shape(self.shape, "GEMM operand shape"))
        object.__setattr__(self, "dtype", canonical_dtype(self.dtype))
        if len(self.shape) < 2:
            raise ShapeError(f"a GEMM operand needs rank >= 2; found shape {self.shape}")
        if self.tile is not None:
            tile = check_shape(self.tile, "GEMM operand tile")
            if len(tile) != 2 or any(t > n for t, n in zip(tile, self.shape[-2:])):
                raise ShapeError(f"a GEMM operand tile is (rows, cols) inside the buffer's last two dims "
                                 f"{self.shape[-2:]}; found {self.tile}")
            object.__setattr__(self, "tile", None if tile == tuple(self.shape[-2:]) else tile)

    @property
    def tile_shape(self) -> tuple[int, int]:
        """The (rows, cols) the GEMM reads: ``tile``, else the buffer's last two dims."""
        return self.tile or (self.shape[-2], self.shape[-1])

    @property
    def shared(self) -> bool:
        return self.scope in SHARED_SCOPES

    @property
    def fragment(self) -> bool:
        return self.scope in FRAGMENT_SCOPES

    @property
    def tmem(self) -> bool:
        return self.scope in TMEM_SCOPES


def _operand(x, name: str) -> GemmOperand:
    if isinstance(x, GemmOperand):
        return x
    if isinstance(x, (tuple, list)) and len(x) in (3, 4):
        op = GemmOperand(x[0], tuple(x[1]), x[2], None if len(x) == 3 or x[3] is None else tuple(x[3]))
        if op.tile is not None and not (op.shared or op.tmem):  # TileLang lays register operands out over the buffer
            raise UnsupportedError(f"GEMM operand {name} reads {op.tile} of {op.scope} buffer {op.shape}; only "
                                   f"shared operands may be sub-regions")
        return op
    raise ShapeError(f"GEMM operand {name} must be a GemmOperand or (scope, shape, dtype[, tile]); found {x!r}")


@dataclass(frozen=True)
class GemmLayouts:
    """What the rule decided: ``instruction`` (``mma | wgmma | fma | tcgen05``), ``warp_partition``
    ``(m_warps, n_warps)``, ``M, N, K`` and ``layouts`` (``"A" | "B" | "C"`` -> Layout/Fragment; only
    the operands the instruction constrains)."""

    instruction: str
    warp_partition: tuple[int, int]
    M: int
    N: int
    K: int
    layouts: dict[str, Layout] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Layout:
        return self.layouts[name]

    def __contains__(self, name: str) -> bool:
        return name in self.layouts


def gemm_shape(A: GemmOperand, B: GemmOperand, C: GemmOperand, transpose_A: bool, transpose_B: bool,
               two_cta: bool = False):
    """``(M, N, K)`` from the last two dims of the operands (A ``[M, K]`` or ``[K, M]``, B ``[K, N]`` or
    ``[N, K]``, C ``[M, N]``), checking that they agree; ``two_cta``: each CTA holds half of B's N."""
    a0, a1 = A.tile_shape
    b0, b1 = B.tile_shape
    M, Ka = (a1, a0) if transpose_A else (a0, a1)
    Kb, N = (b1, b0) if transpose_B else (b0, b1)
    N *= 2 if two_cta else 1
    if Ka != Kb or tuple(C.shape[-2:]) != (M, N):
        raise ShapeError(
            f"GEMM shapes disagree: A {A.tile_shape} (transpose_A={transpose_A}) gives M={M}, K={Ka}; B {B.tile_shape} "
            f"(transpose_B={transpose_B}) gives K={Kb}, N={N}; C is {C.shape}, expected [..., {M}, {N}]"
        )
    return M, N, Ka


def _wgmma_dtypes_ok(a: str, b: str, c: str, trans_a: bool, trans_b: bool, K: int) -> bool:
    """TileLang's ``CheckWgmma`` dtype table (float32 operands are not tf32: no WGMMA)."""
    k_major_only = (not trans_a) and trans_b
    if c == "float16":
        if a == b == "float16":
            return K % 16 == 0
        return is_float8(a) and is_float8(b) and k_major_only and K % 32 == 0
    if c == "float32":
        if a == b and a in ("float16", "bfloat16"):
            return K % 16 == 0
        if a == b == "tfloat32":
            return k_major_only and K % 8 == 0
        return is_float8(a) and is_float8(b) and k_major_only and K % 32 == 0
    if c == "int32":
        return a in ("int8", "uint8") and b in ("int8", "uint8") and k_major_only and K % 32 == 0
    return False


def _tcgen05_fits(A: GemmOperand, B: GemmOperand, C: GemmOperand, M: int, N: int, K: int) -> bool:
    """Whether some TCGEN05 atom fits (TileLang's ``AllowTcgen5Mma``: the operand dtype is B's when A is in
    tensor memory)."""
    from .tcgen05 import select_tcgen05_atom

    try:
        select_tcgen05_atom(M, N, K, B.dtype if A.tmem else A.dtype, C.dtype, two_cta=True)
    except UnsupportedError:
        return False
    return True


def select_gemm_instruction(
    A, B, C, *, transpose_A: bool = False, transpose_B: bool = False, threads: int = 128, arch: str | int = "sm_80",
    two_cta: bool = False,
) -> str:
    """The instruction family of ``T.gemm`` (TileLang ``Gemm::SelectInst`` without the explicit
    ``T.wgmma_gemm`` / ``T.tcgen05_gemm`` forms).

    >>> select_gemm_instruction(("shared", (64, 32), "float16"), ("shared", (32, 64), "float16"),
    ...                         ("local.fragment", (64, 64), "float32"), arch="sm_90")
    'wgmma'
    >>> select_gemm_instruction(("shared", (64, 32), "bfloat16"), ("shared", (32, 64), "bfloat16"),
    ...                         ("local.fragment", (64, 64), "float32"), arch="sm_70")
    'fma'
    """
    A, B, C = _operand(A, "A"), _operand(B, "B"), _operand(C, "C")
    M, N, K = gemm_shape(A, B, C, transpose_A, transpose_B, two_cta)
    sm = arch_number(arch)
    num_warps = int(threads) // WARP_SIZE
    if 100 <= sm <= 110 and (A.shared or A.tmem) and B.shared and C.tmem and _tcgen05_fits(A, B, C, M, N, K):
        return "tcgen05"
    if (90 <= sm < 100 and M >= 64 and num_warps % 4 == 0 and B.shared
            and _wgmma_dtypes_ok(A.dtype, B.dtype, C.dtype, transpose_A, transpose_B, K)):
        return "wgmma"
    if 70 <= sm < 75:
        volta_ok = ((A.shared or A.fragment) and B.shared and not transpose_A and A.dtype == B.dtype == "float16"
                    and C.dtype in ("float16", "float32") and M % 16 == 0 and N % 16 == 0 and K % 4 == 0)
        return "mma" if volta_ok else "fma"
    if 75 <= sm < 80:
        a = A.dtype
        ok = a == B.dtype and (
            (a == "float16" and C.dtype in ("float16", "float32"))
            or (a in ("int8", "uint8", "int4", "uint4") and C.dtype == "int32")
        )
        return "mma" if ok else "fma"
    return "mma"


def _linear_fragment(shape: tuple[int, ...], threads: int) -> Fragment:
    """TileLang's FMA fallback: row-major flat index ``f`` -> thread ``f % threads``, index ``f // threads``."""
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]

    def fn(*idx):
        flat = sum(i * s for i, s in zip(idx, strides))
        return flat % threads, flat // threads

    return Fragment(list(shape), forward_fn=fn)


def gemm_layouts(
    A,
    B,
    C,
    *,
    transpose_A: bool = False,
    transpose_B: bool = False,
    threads: int = 128,
    arch: str | int = "sm_80",
    policy: object = "square",
    thread_range: tuple[int, int] | None = None,
    instruction: str | None = None,
    two_cta: bool = False,
) -> GemmLayouts:
    """The layouts ``T.gemm(A, B, C)`` imposes (see the module doc).

    Operands are :class:`GemmOperand` or ``(scope, shape, dtype)``; ``threads`` is the block's thread
    count (the extent of ``thread_range`` when given, e.g. ``(128, 128)`` for warp-specialised
    consumers); ``instruction`` overrides the selection; ``two_cta``: a TCGEN05 GEMM that may use the
    two-CTA MMA (TileLang's ``use_2cta`` annotation).
    """
    A, B, C = _operand(A, "A"), _operand(B, "B"), _operand(C, "C")
    if thread_range is not None:
        start, extent = (int(v) for v in thread_range)
        threads = extent
    else:
        start, extent = 0, int(threads)
    if threads % WARP_SIZE:
        raise ShapeError(f"T.gemm needs whole warps; found {threads} threads")
    M, N, K = gemm_shape(A, B, C, transpose_A, transpose_B, two_cta)
    sm = arch_number(arch)
    inst = instruction or select_gemm_instruction(A, B, C, transpose_A=transpose_A, transpose_B=transpose_B,
                                                   threads=threads, arch=arch, two_cta=two_cta)
    pol = normalize_policy(policy)
    m_warp, n_warp = compute_warp_partition(M, N, threads // WARP_SIZE, pol, arch, instruction=inst)
    wrt, wct = M // m_warp, N // n_warp
    out: dict[str, Layout] = {}

    def bind(frag: Fragment) -> Fragment:
        return frag.bind_thread_range(start, extent)

    # the instruction, not the selection, decides which scopes it reads (FMA and TCGEN05 check their own);
    # A / B first, as TileLang's infer_layout lays them out before it asks C for a fragment
    key = "mma_sm70" if inst == "mma" and 70 <= sm < 75 else inst
    check_operand_scopes(key, A.scope, B.scope, None if C.tmem else C.scope, str(arch))
    if C.tmem and inst != "tcgen05":
        raise UnsupportedError(f"T.gemm accumulates into tensor memory only as a TCGEN05 GEMM (sm_100, A shared or "
                               f"in tensor memory, B shared, a TCGEN05 atom for M={M} N={N} K={K} {A.dtype} -> "
                               f"{C.dtype}); this GEMM selects {inst} on {arch}, whose accumulator is a fragment "
                               f"(TileLang's inference stops there too)")
    if inst == "tcgen05":
        return _tcgen05_layouts(A, B, C, transpose_A, transpose_B, (M, N, K), two_cta, (m_warp, n_warp))
    if inst == "fma":
        for name, op in (("A", A), ("B", B), ("C", C)):
            if op.fragment:
                out[name] = bind(_linear_fragment(op.shape, threads))
        return GemmLayouts(inst, (1, threads // WARP_SIZE), M, N, K, out)
    if inst == "wgmma":
        cont_a = K if not transpose_A else 64
        from .wgmma import wgmma_inst_n

        cont_b = K if transpose_B else wgmma_inst_n(wct)

        out["A"] = _shared_swizzle(A, cont_a) if A.shared else bind(
            make_wgmma_load_layout(A.dtype, m_warp, n_warp, wrt, wct, K, transpose_A))
        out["B"] = _shared_swizzle(B, cont_b)
        out["C"] = bind(make_wgmma_store_layout(m_warp, n_warp, wrt, wct, dtype=A.dtype, chunk=K))
        return GemmLayouts(inst, (m_warp, n_warp), M, N, K, out)
    if 70 <= sm < 75:
        out["A"] = (make_volta_swizzled_layout(A.shape, A.dtype, True, not transpose_A) if A.shared else
                    bind(make_volta_load_layout("A", A.dtype, m_warp, n_warp, wrt, wct, K, transpose_A)))
        out["B"] = make_volta_swizzled_layout(B.shape, B.dtype, False, bool(transpose_B))
        out["C"] = bind(make_volta_store_layout(m_warp, n_warp, wrt, wct, dtype=A.dtype, accum_dtype=C.dtype))
        return GemmLayouts(inst, (m_warp, n_warp), M, N, K, out)
    for name, op, trans in (("A", A, transpose_A), ("B", B, transpose_B)):
        if op.shared:
            out[name] = make_swizzled_layout(op.shape, op.dtype)
        else:  # a fragment (check_operand_scopes)
            out[name] = bind(make_mma_load_layout(name, op.dtype, m_warp, n_warp, wrt, wct, K, trans, arch=arch))
    out["C"] = bind(make_mma_store_layout(m_warp, n_warp, wrt, wct, dtype=A.dtype, accum_dtype=C.dtype,
                                             arch=arch, chunk=K))
    return GemmLayouts(inst, (m_warp, n_warp), M, N, K, out)


def _shared_swizzle(op: GemmOperand, continuity: int) -> Layout:
    """The bank swizzle of a shared operand whose contiguous run is ``continuity`` elements (the widest
    whose rows it fills: 128, 64, 32 bytes), else linear (TileLang's WGMMA and TCGEN05 rule)."""
    vec = 128 // element_bits(op.dtype)
    for per, make in ((8, make_full_bank_swizzled_layout), (4, make_half_bank_swizzled_layout),
                      (2, make_quarter_bank_swizzled_layout)):
        if continuity % (vec * per) == 0:
            return make(op.shape, op.dtype)
    return make_linear_layout(op.shape, op.dtype)


def _tcgen05_layouts(A: GemmOperand, B: GemmOperand, C: GemmOperand, transpose_A: bool, transpose_B: bool,
                     mnk: tuple[int, int, int], two_cta: bool, partition: tuple[int, int]) -> GemmLayouts:
    """TileLang's ``GemmTCGEN5.infer_layout``: SS (A, B shared) swizzles A and B by their contiguous runs
    (K for a K-major operand, else M / B's last dim; sub-byte K-major: the buffer's last dim) and lays C
    out as the atom's accumulator; TS (A in tensor memory, K-major) lays A out as the atom's A operand
    and C non-interleaved."""
    from .tcgen05 import make_tmem_accumulator_layout, make_tmem_operand_a_layout, select_tcgen05_atom

    M, N, K = mnk
    if not (B.shared and C.tmem and (A.shared or A.tmem)):
        raise UnsupportedError(f"TCGEN05 needs A in shared or tensor memory, B shared and C in tensor memory; "
                               f"found A {A.scope}, B {B.scope}, C {C.scope}")
    atom = select_tcgen05_atom(M, N, K, A.dtype, C.dtype, two_cta=two_cta)

    def run(op: GemmOperand, k_major: bool, mn: int) -> int:
        if element_bits(op.dtype) < 8:
            return op.shape[-1] if k_major else mn
        return K if k_major else mn

    out: dict[str, Layout] = {"B": _shared_swizzle(B, run(B, transpose_B, B.shape[-1]))}
    if A.shared:
        out["A"] = _shared_swizzle(A, run(A, not transpose_A, M))
        out["C"] = make_tmem_accumulator_layout(C.shape, C.dtype, atom)
    else:
        if transpose_A:
            raise UnsupportedError("TCGEN05 TS (A in tensor memory) needs a K-major A (transpose_A=False)")
        out["A"] = make_tmem_operand_a_layout(A.shape, A.dtype, atom)
        out["C"] = make_tmem_accumulator_layout(C.shape, C.dtype, atom, a_in_tmem=True)
    return GemmLayouts("tcgen05", partition, M, N, K, out)


def pipelined_shape(shape: Sequence[int], num_stages: int) -> tuple[int, ...]:
    """The shape a shared buffer takes inside ``T.Pipelined(num_stages=S)``: ``[S, *shape]``.

    >>> pipelined_shape((32, 32), 2)
    (2, 32, 32)
    """
    dims = check_shape(shape)
    if num_stages is None or int(num_stages) <= 1:
        return dims
    return (int(num_stages),) + dims
