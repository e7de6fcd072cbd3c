"""layoutkit's lowering of ``T.gemm`` on NVIDIA's ``mma.sync`` path, as TileLang 0.1.15's
``LowerTileOp`` asks for it: the warp-level loop of ``ldmatrix`` (or per-register) loads into
registers and ``ptx_mma`` instructions, built directly as TIR from layoutkit's MMA facts.

Why: TileLang builds this loop by parsing Python macros (``T.macro`` / ``T.prim_func`` over its
MMA emitter) on every GEMM of every lowering; that parse is about 70 ms per GEMM, 40% of
``tilelang.lower`` of a plain GEMM kernel, more than its LayoutInference.  This module builds the
same statement from a :class:`MmaPlan` in a few milliseconds and hands it to the same
simplification TileLang applies, so the lowered kernel is the same text.

What it covers (everything else is handed to TileLang's own ``cuda.mma`` implementation,
unchanged, so the switch never narrows what lowers):

- operands in shared memory or fragments (``ss``, ``sr``, ``rs``, ``rr``), any transposition;
- 16-bit (``float16``, ``bfloat16``) and 8-bit (``int8``, ``uint8``, ``float8_e4m3``, ``float8_e5m2``)
  operands of equal width, accumulators ``float32`` / ``float16`` / ``int32``;
- ``K`` a multiple of the instruction's ``k`` (``256 / bits``), warp tiles of 16 rows and 8 or 16
  columns (``mma.m16n8k{16,32}``, ``n = 16`` issued as two ``n = 8`` instructions);
- ``ldmatrix.x4`` / ``.x2`` (``.trans`` for 16-bit) where the instruction can read the operand, one
  load per register otherwise (8-bit A transposed, 8-bit B not transposed);
- a constant ``clear_accum`` (true: the accumulator is filled with zeros first, through TileLang's
  ``T.clear``, as TileLang's lowering does; a runtime condition is handed over).

The addresses are the instruction facts of :mod:`layoutkit.targets.nv` (checked against them in the
tests): ``ldmatrix`` lane ``t`` gives the row address of row ``t % 8`` of matrix ``t // 8``
(:func:`~layoutkit.targets.nv.ldmatrix_layout`), and a per-register load reads the element the MMA
operand fragment puts in that register (:func:`~layoutkit.targets.nv.make_mma_load_layout`).

>>> plan = mma_plan("float16", "float16", "float32", M=64, N=64, K=32, threads=128, warps=(2, 2),
...                 trans_a=False, trans_b=False)
>>> plan.prefix, plan.warp_rows, plan.warp_cols, plan.local_a, plan.local_b, plan.local_c
('m16n8k16', 2, 2, 8, 8, 8)
>>> plan.ldmatrix_a, plan.ldmatrix_b
(True, True)
>>> mma_plan("float32", "float32", "float32", 64, 64, 32, 128, (2, 2), False, False) is None
True
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..scopes import FRAGMENT
from ..targets.nv import WARP_SIZE, WarpPartitionError, compute_warp_partition, element_bits
from .tilelang_walk_ops import WARP_POLICIES

__all__ = ["MMA_IMPL", "MmaPlan", "address_a", "address_b", "both_mma_lowerings", "layoutkit_mma_lowering",
           "lower_mma_gemm", "mma_plan", "plan_of", "register_a", "register_b"]

MMA_IMPL = "cuda.mma"
"""The name of TileLang's GEMM implementation entry this lowering stands in for."""

_M = 16
_OPERANDS = {"float16": "fp16", "bfloat16": "bf16", "int8": "int8", "uint8": "uint8", "float8_e4m3": "e4m3",
             "float8_e4m3fn": "e4m3", "float8_e4m3fnuz": "e4m3", "float8_e5m2": "e5m2", "float8_e5m2fnuz": "e5m2"}
"""Operand dtypes (TileLang's names) and their PTX type in ``mma.sync``."""
_ACCUMULATORS = {"float32": "fp32", "float16": "fp16", "int32": "int32"}


@dataclass(frozen=True)
class MmaPlan:
    """The instruction-level shape of one warp-tiled GEMM: ``mma.m16n8k{k}`` tiles, ``warps`` =
    ``(m_warps, n_warps)``, each warp ``warp_rows x warp_cols`` instruction tiles of ``16 x n_dim``;
    ``local_*`` registers per lane of one A / B / C tile; whether ``ldmatrix`` reads A / B; ``clear``
    whether the accumulator is zeroed first."""

    a_dtype: str
    b_dtype: str
    c_dtype: str
    M: int
    N: int
    K: int
    warps: tuple[int, int]
    trans_a: bool
    trans_b: bool
    k: int
    n_dim: int
    clear: bool = False

    @property
    def bits(self) -> int:
        return element_bits(self.a_dtype)

    @property
    def prefix(self) -> str:
        return f"m16n8k{self.k}"

    @property
    def warp_rows(self) -> int:
        return self.M // self.warps[0] // _M

    @property
    def warp_cols(self) -> int:
        return self.N // self.warps[1] // self.n_dim

    @property
    def local_a(self) -> int:
        return _M * self.k // WARP_SIZE

    @property
    def local_b(self) -> int:
        return self.n_dim * self.k // WARP_SIZE

    @property
    def local_c(self) -> int:
        return _M * self.n_dim // WARP_SIZE

    @property
    def ptx_types(self) -> tuple[str, str, str]:
        """The PTX types of A, B and the accumulator, as ``mma.sync`` names them."""
        return _OPERANDS[self.a_dtype], _OPERANDS[self.b_dtype], _ACCUMULATORS[self.c_dtype]

    @property
    def ldmatrix_a(self) -> bool:
        """``ldmatrix`` reads A unless it is 8-bit and transposed (``.trans`` moves 16-bit elements only)."""
        return self.bits == 16 or not self.trans_a

    @property
    def ldmatrix_b(self) -> bool:
        """``ldmatrix`` reads B unless it is 8-bit and not transposed (K-major rows are needed)."""
        return self.bits == 16 or self.trans_b


def mma_plan(a_dtype: object, b_dtype: object, c_dtype: object, M: int, N: int, K: int, threads: int,
             warps: tuple[int, int], trans_a: bool, trans_b: bool, clear: bool = False) -> MmaPlan | None:
    """The :class:`MmaPlan` of a GEMM this module lowers, or None for one it hands to TileLang
    (dtypes by TileLang's names)."""
    a, b, c = (str(d) for d in (a_dtype, b_dtype, c_dtype))
    if a not in _OPERANDS or b not in _OPERANDS or c not in _ACCUMULATORS or element_bits(a) != element_bits(b):
        return None
    k = 256 // element_bits(a)
    m_warps, n_warps = warps
    if threads != WARP_SIZE * m_warps * n_warps or K % k or M % (m_warps * _M) or N % (n_warps * 8):
        return None
    n_dim = 16 if (N // n_warps) % 16 == 0 else 8
    return MmaPlan(a, b, c, M, N, K, (m_warps, n_warps), bool(trans_a), bool(trans_b), k, n_dim, bool(clear))


# ---- addresses: expressions over the lane id, in TileLang's form ----------------------------------------

def address_a(lane, bits: int, trans: bool) -> tuple[Any, Any]:
    """(row, col) offset of the ``ldmatrix`` row address lane ``lane`` supplies for an A tile
    (``16 x k``, or ``k x 16`` transposed: the same lane map, read with ``.trans``).

    >>> [address_a(t, 16, False) for t in (0, 15, 16, 31)]
    [(0, 0), (15, 0), (0, 8), (15, 8)]
    """
    if bits == 16:
        return _address_16(lane, trans)
    return lane % 16, lane // 16 * 16


def address_b(lane, bits: int, trans: bool) -> tuple[Any, Any]:
    """(row, col) offset of the ``ldmatrix`` row address of lane ``lane`` for a B tile (``k x n``;
    ``n x k`` when ``trans``, which is read without ``.trans``).

    >>> [address_b(t, 16, True) for t in (0, 8, 16, 31)]
    [(0, 0), (0, 8), (8, 0), (15, 8)]
    """
    if bits == 16:
        return _address_16(lane, trans)
    return lane // 16 * 8 + lane % 8, 16 * (lane % 16 // 8)


def _address_16(lane, trans: bool) -> tuple[Any, Any]:
    """16-bit operands: A and B tiles share the lane map (matrices down the rows, then across), or,
    stored transposed, its transpose (matrices across the columns first)."""
    if trans:
        return 8 * (lane // 16) + lane % 8, 8 * (lane % 16 // 8)
    return lane % 16, 8 * (lane // 16)


def register_a(lane, reg) -> tuple[Any, Any]:
    """(row, k) in the ``16 x 32`` tile of an 8-bit A operand of register ``reg`` of lane ``lane``
    (the MMA operand fragment): the per-register load of an operand ``ldmatrix`` cannot read.

    >>> register_a(5, 3), register_a(5, 9)
    ((1, 7), (1, 21))
    """
    return 8 * (reg % 8 // 4) + lane // 4, 16 * (reg // 8) + lane % 4 * 4 + reg % 4


def register_b(lane, reg) -> tuple[Any, Any]:
    """(n, k) in the ``16 x 32`` (n x k) tile of an 8-bit B operand of register ``reg`` of lane
    ``lane`` (the MMA operand fragment), for the per-register load.

    >>> register_b(5, 3), register_b(5, 9)
    ((1, 7), (9, 5))
    """
    return 8 * (reg // 8) + lane // 4, 16 * (reg % 8 // 4) + lane % 4 * 4 + reg % 4


# ---- the registry switch ---------------------------------------------------------------------------------

@contextmanager
def layoutkit_mma_lowering() -> Iterator[None]:
    """Within the block, TileLang's ``cuda.mma`` GEMM implementation is layoutkit's: a class around
    TileLang's own, which still validates each GEMM, infers its layouts and lowers what no plan
    covers.  The entry is swapped in TileLang's GEMM implementation registry (its extension point
    for backend GEMMs) and restored on exit."""
    with _swapped(_Lowering):
        yield


@contextmanager
def both_mma_lowerings() -> Iterator[list]:
    """Within the block TileLang lowers every ``cuda.mma`` GEMM itself, and layoutkit lowers each one
    beside it (from the same node, thread range and thread variable) without using its statement; the
    list collects ``(TileLang's PrimFunc, layoutkit's PrimFunc or None)`` per GEMM, to check that the
    two agree on kernels whose whole CUDA text cannot be compared."""
    seen: list = []

    class Both(_Lowering):
        def lower(self, layout_map, target, thread_bounds, thread_index, mbar_phase_expr=None):
            ours = lower_mma_gemm(self.theirs.gemm_node, target, thread_bounds, thread_index)
            theirs = self.theirs.lower(layout_map, target, thread_bounds, thread_index, mbar_phase_expr)
            seen.append((theirs, ours))
            return theirs

    with _swapped(Both):
        yield seen


@contextmanager
def _swapped(wrapper) -> Iterator[None]:
    """TileLang's ``cuda.mma`` registry entry made ``wrapper(TileLang's implementation object)``."""
    import tilelang.cuda.op.gemm  # noqa: F401 - registers TileLang's CUDA GEMM implementations
    from tilelang.tileop.gemm import registry

    entry = next(e for e in registry._GEMM_IMPLS if e.name == MMA_IMPL)  # noqa: SLF001 - TileLang's table

    def impl(node):
        return wrapper(entry.impl_class(node))

    registry.register_gemm_impl(MMA_IMPL, entry.inst_name, entry.predicate, impl)
    try:
        yield
    finally:
        registry.register_gemm_impl(MMA_IMPL, entry.inst_name, entry.predicate, entry.impl_class)


class _Lowering:
    """One GEMM: TileLang's implementation object ``theirs`` (built, so TileLang's operand checks
    ran), lowered by layoutkit when :func:`plan_of` finds a plan."""

    def __init__(self, theirs):
        self.theirs = theirs

    def infer_layout(self, target, thread_nums):
        return self.theirs.infer_layout(target, thread_nums)

    def lower(self, layout_map, target, thread_bounds, thread_index, mbar_phase_expr=None):
        ours = lower_mma_gemm(self.theirs.gemm_node, target, thread_bounds, thread_index)
        if ours is None:
            return self.theirs.lower(layout_map, target, thread_bounds, thread_index, mbar_phase_expr)
        return ours


def lower_mma_gemm(node, target, thread_bounds, thread_index):
    """The lowered ``PrimFunc`` of TileLang ``tl.Gemm`` node ``node`` on the ``mma.sync`` path, as
    TileLang's ``cuda.mma`` implementation's ``lower`` returns it (``thread_bounds`` the GEMM's
    thread range, ``thread_index`` the thread variable), or None where this module hands the GEMM
    to TileLang (see the module doc)."""
    plan = plan_of(node, thread_bounds.extent, target)
    if plan is None:
        return None
    from .tilelang_gemm_tir import build

    return build(plan, node, thread_index - thread_bounds.min)


def plan_of(node, thread_extent, target) -> MmaPlan | None:
    """The plan of a TileLang ``tl.Gemm`` node over ``thread_extent`` threads, or None: a policy, a
    runtime accumulator clear, thread count or region this module does not lower, or no warp partition."""
    from tilelang import tvm

    tirx = tvm.tirx
    clear = node.clearAccum
    policy = WARP_POLICIES.get(int(node.policy.policy_type))
    if policy is None or not isinstance(thread_extent, tirx.IntImm) or int(thread_extent) % WARP_SIZE:
        return None
    if not isinstance(clear, tirx.IntImm) or not _whole_fragments(node):
        return None
    arch = str(target.attrs["arch"]) if "arch" in target.attrs else "sm_80"
    threads = int(thread_extent)
    try:
        warps = compute_warp_partition(int(node.m), int(node.n), threads // WARP_SIZE, policy, arch, instruction="mma")
    except WarpPartitionError:
        return None
    return mma_plan(node.a.dtype, node.b.dtype, node.c.dtype, int(node.m), int(node.n), int(node.k), threads, warps,
                    bool(node.transA), bool(node.transB), bool(int(clear.value)))


def _whole_fragments(node) -> bool:
    """C and every operand in registers are used whole, from index 0 (TileLang asserts it)."""
    from tilelang import tvm

    regions = [r for r in (node.aRegion, node.bRegion) if r.buffer.scope() == FRAGMENT] + [node.cRegion]
    return all(isinstance(r.min, tvm.tirx.IntImm) and int(r.min) == 0 and tvm.ir.structural_equal(r.extent, extent)
               for region in regions for r, extent in zip(region.region, region.buffer.shape))
