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
- 16-bit (``float16``, ``bfloat16``) and 8-bit (``int8``, ``uint8``, ``float8_e4m3(fn)``, ``float8_e5m2``)
  operands of equal width, accumulators ``float32`` / ``float16`` / ``int32`` (int32 for integer operands,
  float for float ones), sm_80 and later;
- ``K`` a multiple of the instruction's ``k`` (``256 / bits``), warp tiles of 16 rows and 8 or 16
  columns (``mma.m16n8k{16,32}``, ``n = 16`` issued as two ``n = 8`` instructions);
- ``ldmatrix.x4`` / ``.x2`` (``.trans`` for 16-bit) where the instruction can read the operand, one
  load per register otherwise (8-bit A transposed, 8-bit B not transposed);
- a constant ``clear_accum`` (true: the accumulator is filled with zeros first, through TileLang's
  ``T.clear``, as TileLang's lowering does; a runtime condition is handed over).

The plan is the NVIDIA target's one GEMM plan (:class:`~layoutkit.targets.nv.GemmPlan`, the one the
``mma.sync`` lowering of layoutkit's own programs holds too).  The addresses are the instruction facts of
:mod:`layoutkit.targets.nv` (checked against them in the tests): ``ldmatrix`` lane ``t`` gives the row
address of row ``t % 8`` of matrix ``t // 8`` (:func:`~layoutkit.targets.nv.ldmatrix_layout`), and a
per-register load reads the element the MMA operand fragment puts in that register
(:func:`~layoutkit.targets.nv.make_mma_load_layout`).

>>> plan = mma_plan("float16", "float16", "float32", M=64, N=64, K=32, threads=128, warps=(2, 2),
...                 trans_a=False, trans_b=False)
>>> g = plan.gemm
>>> g.name, g.warp_rows, g.warp_cols, g.local_a, g.local_b, g.local_c
('m16n8k16', 2, 2, 8, 8, 8)
>>> g.a_load, g.b_load, plan.ptx_types
('ldmatrix', 'ldmatrix.trans', ('fp16', 'fp16', 'fp32'))
>>> mma_plan("float32", "float32", "float32", 64, 64, 32, 128, (2, 2), False, False) is None
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..errors import DtypeError, UnsupportedError
from ..scopes import FRAGMENT
from ..targets.nv import WARP_SIZE, GemmPlan, WarpPartitionError, compute_warp_partition, gemm_plan
from ..targets.nv.gemm_plan import LDMATRIX, LDMATRIX_TRANS
from .interpose import Interposer
from .tilelang_walk_ops import WARP_POLICIES

__all__ = ["MMA_IMPL", "MmaPlan", "address_a", "address_b", "both_mma_lowerings", "build", "layoutkit_mma_lowering",
           "lower_mma_gemm", "mma_plan", "plan_of", "register_a", "register_b"]

MMA_IMPL = "cuda.mma"
"""The name of TileLang's GEMM implementation entry this lowering stands in for."""

_TILELANG_PTX = {"f16": "fp16", "f32": "fp32", "s8": "int8", "u8": "uint8", "s32": "int32"}
"""TileLang's ``ptx_mma`` spelling of the PTX types that it spells otherwise (``bf16``, ``e4m3`` ... alike)."""


@dataclass(frozen=True)
class MmaPlan:
    """A ``T.gemm`` this module lowers: the instruction plan of its tile (``gemm``: the warps' grid of
    ``mma.m16n8k{k}`` tiles, the operand loads, the element types) and whether the accumulator is zeroed first
    (``clear``)."""

    gemm: GemmPlan
    clear: bool = False

    @property
    def ptx_types(self) -> tuple[str, str, str]:
        """The PTX types of A, B and the accumulator as TileLang's ``ptx_mma`` names them."""
        a, b, c = (_TILELANG_PTX.get(t, t) for t in self.gemm.ptx_types)
        return a, b, c


def mma_plan(a_dtype: object, b_dtype: object, c_dtype: object, M: int, N: int, K: int, threads: int,
             warps: tuple[int, int], trans_a: bool, trans_b: bool, clear: bool = False,
             arch: str | int = "sm_80") -> MmaPlan | None:
    """The :class:`MmaPlan` of a GEMM this module lowers, or None for one it hands to TileLang (dtypes by
    TileLang's names): no :func:`~layoutkit.targets.nv.gemm_plan` for it, operands other than 16- or 8-bit,
    or an instruction issued as several (sm_75's split k)."""
    try:
        plan = gemm_plan(str(a_dtype), str(b_dtype), str(c_dtype), M, N, K, threads, warps, trans_a=bool(trans_a),
                         trans_b=bool(trans_b), arch=arch)
    except (UnsupportedError, DtypeError):
        return None
    if plan.bits not in (8, 16) or plan.k_split != 1:
        return None
    return MmaPlan(plan, bool(clear))


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
def layoutkit_mma_lowering(enabled: bool = True) -> Iterator[None]:
    """Within the block, TileLang's ``cuda.mma`` GEMM implementation is layoutkit's: a class around
    TileLang's own, which still validates each GEMM, infers its layouts and lowers what no plan
    covers (``enabled=False``: TileLang's own within the block, also inside an outer one).  The block
    holds for the calling thread (context) only; the registry entry (TileLang's extension point for
    backend GEMMs) is patched once while any block is open and TileLang's is back when the last closes
    (see :mod:`.interpose`)."""
    with _MMA.override(_Lowering if enabled else None):
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

    with _MMA.override(Both):
        yield seen


def _patch_mma_entry(current: Callable[[], Callable | None]) -> Callable[[], None]:
    """Make TileLang's ``cuda.mma`` registry entry build ``current()(TileLang's implementation object)`` (its
    own object where ``current()`` is None); returns the undo, which registers TileLang's class again."""
    import tilelang.cuda.op.gemm  # noqa: F401 - registers TileLang's CUDA GEMM implementations
    from tilelang.tileop.gemm import registry

    entry = next(e for e in registry._GEMM_IMPLS if e.name == MMA_IMPL)  # noqa: SLF001 - TileLang's table

    def impl(node):
        wrapper = current()
        theirs = entry.impl_class(node)
        return theirs if wrapper is None else wrapper(theirs)

    registry.register_gemm_impl(MMA_IMPL, entry.inst_name, entry.predicate, impl)
    return lambda: registry.register_gemm_impl(MMA_IMPL, entry.inst_name, entry.predicate, entry.impl_class)


_MMA: Interposer = Interposer("tilelang.gemm.cuda.mma", _patch_mma_entry)
"""TileLang's ``cuda.mma`` GEMM entry, overridden per thread / context by a wrapper class (or None)."""


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
                    bool(node.transA), bool(node.transB), bool(int(clear.value)), arch)


def _whole_fragments(node) -> bool:
    """C and every operand in registers are used whole, from index 0 (TileLang asserts it)."""
    from tilelang import tvm

    regions = [r for r in (node.aRegion, node.bRegion) if r.buffer.scope() == FRAGMENT] + [node.cRegion]
    return all(isinstance(r.min, tvm.tirx.IntImm) and int(r.min) == 0 and tvm.ir.structural_equal(r.extent, extent)
               for region in regions for r, extent in zip(region.region, region.buffer.shape))


# ---- the TIR of one warp-tiled mma.sync GEMM -------------------------------------------------------------
# Built node by node from a plan and a TileLang ``tl.Gemm`` node, then simplified as TileLang simplifies its
# own (lets inlined, then ``Simplify``), so both give the same statement.  For ``ki`` over ``K / k``: load this
# warp's A tiles (``warp_rows``) and B tiles (``warp_cols``) of k-slice ``ki`` from shared memory into registers
# (``A_local`` / ``B_local``; an operand already in a fragment is read in place), then issue
# ``warp_rows x warp_cols`` instruction tiles, each one ``mma.m16n8k{k}`` (two when the tile is 16 columns wide).

def build(plan: MmaPlan, node, thread) -> Any:
    """The simplified ``PrimFunc`` (no parameters, one root block allocating the register tiles)
    TileLang's ``LowerTileOp`` splices in place of ``node``; ``thread`` the thread index relative
    to the GEMM's thread range."""
    from tilelang import language as T
    from tilelang import tvm
    from tilelang.transform.simplify import apply_simplify

    tirx = tvm.tirx
    g = plan.gemm
    if isinstance(thread, tirx.Var) and not (_in_registers(node.a) and _in_registers(node.b)):
        _rename_as_tilelang(thread)
    m_warps = g.warps[0]
    lane = thread % WARP_SIZE
    warp_m = thread // WARP_SIZE % m_warps
    warp_n = thread // (WARP_SIZE * m_warps) % g.warps[1]
    a_local = None if _in_registers(node.a) else _local("A_local", g.warp_rows * g.local_a, g.a_dtype)
    b_local = None if _in_registers(node.b) else _local("B_local", g.warp_cols * g.local_b, g.b_dtype)
    ki = tirx.Var("ki", "int32")
    steps = []
    if a_local is not None:
        steps.append(_load_a(g, node.aRegion, a_local, ki, lane, warp_m))
    if b_local is not None:
        steps.append(_load_b(g, node.bRegion, b_local, ki, lane, warp_n))
    a = node.aRegion.buffer if a_local is None else a_local
    b = node.bRegion.buffer if b_local is None else b_local
    steps.append(_mma(plan, a, b, node.cRegion.buffer, ki))
    body = tirx.For(ki, _i32(0), _i32(g.K // g.k), tirx.ForKind.SERIAL, _seq(steps))
    if plan.clear:  # TileLang's fill tile op, lowered by LowerTileOp after this statement is spliced in
        body = tirx.SeqStmt([tirx.Evaluate(T.clear(node.cRegion.buffer)), body])
    allocs = [buf for buf in (a_local, b_local) if buf is not None]
    if allocs:  # a root block only to allocate the register tiles, as TileLang's builder makes it
        body = tirx.SBlockRealize([], tirx.const(True, "bool"), tirx.SBlock([], [], [], "root", body, None, allocs))
    func = tirx.PrimFunc([], body)
    return apply_simplify(func.with_attr("global_symbol", "_gemm_layoutkit"), inline_let=True)


def _rename_as_tilelang(thread) -> None:
    """Name the kernel's thread variable ``thread_binding``, as TileLang's GEMM lowering does: its
    load macros bind the thread index to their parameter ``thread_binding``, and binding a variable
    renames it (the variable itself, for the rest of the lowering).  Later simplifications order
    terms by variable name, so the CUDA text depends on it (a bounds check of a ``T.im2col`` copy in
    the same kernel keeps or drops a repeated condition); renaming it alike keeps the text equal."""
    from tilelang import tvm

    tvm.script.ir_builder.IRBuilder.name("thread_binding", thread)


def _in_registers(buf) -> bool:
    return buf.scope() == FRAGMENT


def _local(name: str, size: int, dtype: str):
    from tilelang import tvm

    return tvm.tirx.decl_buffer((size,), dtype, name=name, scope="local")


def _i32(value: int):
    from tilelang import tvm

    return tvm.tirx.IntImm("int32", value)


def _seq(stmts: list):
    from tilelang import tvm

    return stmts[0] if len(stmts) == 1 else tvm.tirx.SeqStmt(stmts)


def _region(region) -> tuple[list, Any, Any, Any, Any]:
    """(leading starts, start of the last two dims, extent of the last two dims) of a buffer region."""
    r = region.region
    return [x.min for x in r[:-2]], r[-2].min, r[-1].min, r[-2].extent, r[-1].extent


def _ldmatrix_source(region, rel_row, rel_col):
    """The element of ``region`` at (``rel_row``, ``rel_col``) of its last two dims, the offset wrapped
    row-major inside the region (a lane map may cross the region's end on the last micro tile)."""
    from tilelang import tvm

    other, base0, base1, ext0, ext1 = _region(region)
    lin = tvm.tirx.floormod(rel_row * ext1 + rel_col, ext0 * ext1)
    return region.buffer[tuple(other) + (base0 + lin // ext1, base1 + tvm.tirx.floormod(lin, ext1))]


def _ldmatrix(trans: bool, num: int, source, dest):
    from tilelang import language as T
    from tilelang import tvm

    call = T.ptx_ldmatrix(T.bool(trans), num, T.access_ptr(source, "r", extent=2 * num),
                          T.access_ptr(dest, "w", extent=2 * num))
    return tvm.tirx.Evaluate(call)


def _load_a(plan: GemmPlan, region, local, ki, lane, warp_m):
    """``for i in unroll(warp_rows)``: tile ``i`` of this warp's rows of k-slice ``ki`` into ``local``."""
    from tilelang import tvm

    tirx = tvm.tirx
    i = tirx.Var("i", "int32")
    wi, wk = warp_m * (plan.M // plan.warps[0]) + i * 16, ki * plan.k
    if plan.a_load in (LDMATRIX, LDMATRIX_TRANS):
        row_off, col_off = address_a(lane, plan.bits, plan.trans_a)
        rel = (wk + row_off, wi + col_off) if plan.trans_a else (wi + row_off, wk + col_off)
        body = _ldmatrix(plan.trans_a, 4, _ldmatrix_source(region, *rel), local[i * plan.local_a])
    else:
        body = _per_register(plan.local_a, local, i, region, lambda j: register_a(lane, j), plan.trans_a, wi, wk)
    return tirx.For(i, _i32(0), _i32(plan.warp_rows), tirx.ForKind.UNROLLED, body)


def _load_b(plan: GemmPlan, region, local, ki, lane, warp_n):
    """``for i in unroll(warp_cols)``: tile ``i`` of this warp's columns of k-slice ``ki`` into ``local``."""
    from tilelang import tvm

    tirx = tvm.tirx
    i = tirx.Var("i", "int32")
    wi, wk = warp_n * (plan.N // plan.warps[1]) + i * plan.n_dim, ki * plan.k
    if plan.b_load in (LDMATRIX, LDMATRIX_TRANS):
        num = 4 if plan.n_dim == 16 else 2
        row_off, col_off = address_b(lane, plan.bits, plan.trans_b)
        rel = (wi + row_off, wk + col_off) if plan.trans_b else (wk + row_off, wi + col_off)
        body = _ldmatrix(not plan.trans_b, num, _ldmatrix_source(region, *rel), local[i * plan.local_b])
    else:
        body = _per_register(plan.local_b, local, i, region, lambda j: register_b(lane, j), not plan.trans_b,
                             wi, wk)
    return tirx.For(i, _i32(0), _i32(plan.warp_cols), tirx.ForKind.UNROLLED, body)


def _per_register(size: int, local, i, region, where, k_major: bool, wi, wk):
    """``for j in serial(size)``: register ``j`` of tile ``i`` loaded from its element of ``region``;
    ``where(j)`` its (tile offset, k offset), ``k_major`` whether the region's rows run along k."""
    from tilelang import tvm

    tirx = tvm.tirx
    j = tirx.Var("j", "int32")
    mi, mk = where(j)
    other, base0, base1, _, _ = _region(region)
    index = (base0 + wk + mk, base1 + wi + mi) if k_major else (base0 + wi + mi, base1 + wk + mk)
    load = region.buffer[tuple(other) + index]
    store = tirx.BufferStore(local, load, [i * size + j])
    return tirx.For(j, _i32(0), _i32(size), tirx.ForKind.SERIAL, store)


def _mma(plan: MmaPlan, a, b, c, ki):
    """``for i, j in grid(warp_rows, warp_cols)``: one instruction tile (two ``n8`` MMAs when 16 wide)."""
    from tilelang import language as T
    from tilelang import tvm

    tirx = tvm.tirx
    i, j = tirx.Var("i", "int32"), tirx.Var("j", "int32")
    abbrev, g = plan.ptx_types, plan.gemm
    a_off = (ki * g.warp_rows * g.local_a if _in_registers(a) else 0) + i * g.local_a
    b_off = (ki * g.warp_cols * g.local_b if _in_registers(b) else 0) + j * g.local_b
    c_off = i * g.warp_cols * g.local_c + j * g.local_c

    def mma(b_at, c_at):
        return tirx.Evaluate(T.ptx_mma(g.c_dtype, g.name, "row", "col", *abbrev, a.data, a_off, b.data, b_at,
                                       c.data, c_at, T.bool(False)))

    body = [mma(b_off, c_off)]
    if g.n_dim == 16:
        body.append(mma(b_off + g.local_b // 2, c_off + g.local_c // 2))
    inner = tirx.For(j, _i32(0), _i32(g.warp_cols), tirx.ForKind.SERIAL, _seq(body))
    return tirx.For(i, _i32(0), _i32(g.warp_rows), tirx.ForKind.SERIAL, inner)
