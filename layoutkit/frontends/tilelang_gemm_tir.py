"""The TIR of one warp-tiled ``mma.sync`` GEMM (see :mod:`.tilelang_gemm`): built node by node
from an :class:`~.tilelang_gemm.MmaPlan` and a TileLang ``tl.Gemm`` node, then simplified as
TileLang simplifies its own (lets inlined, then ``Simplify``), so both give the same statement.

The statement, for ``ki`` over ``K / k``: load this warp's A tiles (``warp_rows``) and B tiles
(``warp_cols``) of k-slice ``ki`` from shared memory into registers (``A_local`` / ``B_local``;
an operand already in a fragment is read in place), then issue ``warp_rows x warp_cols``
instruction tiles, each one ``mma.m16n8k{k}`` (two when the tile is 16 columns wide).

Needs TileLang (the ``tilelang`` extra); imported only by :mod:`.tilelang_gemm` when it lowers.
"""

from __future__ import annotations

from typing import Any

from ..scopes import FRAGMENT
from ..targets.nv import WARP_SIZE
from .tilelang_gemm import MmaPlan, address_a, address_b, register_a, register_b


def build(plan: MmaPlan, node, thread) -> Any:
    """The simplified ``PrimFunc`` (no parameters, one root block allocating the register tiles)
    TileLang's ``LowerTileOp`` splices in place of ``node``; ``thread`` the thread index relative
    to the GEMM's thread range."""
    from tilelang import language as T
    from tilelang import tvm
    from tilelang.transform.simplify import apply_simplify

    tirx = tvm.tirx
    if isinstance(thread, tirx.Var) and not (_in_registers(node.a) and _in_registers(node.b)):
        _rename_as_tilelang(thread)
    m_warps = plan.warps[0]
    lane = thread % WARP_SIZE
    warp_m = thread // WARP_SIZE % m_warps
    warp_n = thread // (WARP_SIZE * m_warps) % plan.warps[1]
    a_local = None if _in_registers(node.a) else _local("A_local", plan.warp_rows * plan.local_a, plan.a_dtype)
    b_local = None if _in_registers(node.b) else _local("B_local", plan.warp_cols * plan.local_b, plan.b_dtype)
    ki = tirx.Var("ki", "int32")
    steps = []
    if a_local is not None:
        steps.append(_load_a(plan, node.aRegion, a_local, ki, lane, warp_m))
    if b_local is not None:
        steps.append(_load_b(plan, node.bRegion, b_local, ki, lane, warp_n))
    a = node.aRegion.buffer if a_local is None else a_local
    b = node.bRegion.buffer if b_local is None else b_local
    steps.append(_mma(plan, a, b, node.cRegion.buffer, ki))
    body = tirx.For(ki, _i32(0), _i32(plan.K // plan.k), tirx.ForKind.SERIAL, _seq(steps))
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


def _load_a(plan: MmaPlan, region, local, ki, lane, warp_m):
    """``for i in unroll(warp_rows)``: tile ``i`` of this warp's rows of k-slice ``ki`` into ``local``."""
    from tilelang import tvm

    tirx = tvm.tirx
    i = tirx.Var("i", "int32")
    wi, wk = warp_m * (plan.M // plan.warps[0]) + i * 16, ki * plan.k
    if plan.ldmatrix_a:
        row_off, col_off = address_a(lane, plan.bits, plan.trans_a)
        rel = (wk + row_off, wi + col_off) if plan.trans_a else (wi + row_off, wk + col_off)
        body = _ldmatrix(plan.trans_a, 4, _ldmatrix_source(region, *rel), local[i * plan.local_a])
    else:
        body = _per_register(plan.local_a, local, i, region, lambda j: register_a(lane, j), plan.trans_a, wi, wk)
    return tirx.For(i, _i32(0), _i32(plan.warp_rows), tirx.ForKind.UNROLLED, body)


def _load_b(plan: MmaPlan, region, local, ki, lane, warp_n):
    """``for i in unroll(warp_cols)``: tile ``i`` of this warp's columns of k-slice ``ki`` into ``local``."""
    from tilelang import tvm

    tirx = tvm.tirx
    i = tirx.Var("i", "int32")
    wi, wk = warp_n * (plan.N // plan.warps[1]) + i * plan.n_dim, ki * plan.k
    if plan.ldmatrix_b:
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
    a_off = (ki * plan.warp_rows * plan.local_a if _in_registers(a) else 0) + i * plan.local_a
    b_off = (ki * plan.warp_cols * plan.local_b if _in_registers(b) else 0) + j * plan.local_b
    c_off = i * plan.warp_cols * plan.local_c + j * plan.local_c
    abbrev = plan.ptx_types

    def mma(b_at, c_at):
        return tirx.Evaluate(T.ptx_mma(plan.c_dtype, plan.prefix, "row", "col", *abbrev, a.data, a_off, b.data, b_at,
                                       c.data, c_at, T.bool(False)))

    body = [mma(b_off, c_off)]
    if plan.n_dim == 16:
        body.append(mma(b_off + plan.local_b // 2, c_off + plan.local_c // 2))
    inner = tirx.For(j, _i32(0), _i32(plan.warp_cols), tirx.ForKind.SERIAL, _seq(body))
    return tirx.For(i, _i32(0), _i32(plan.warp_rows), tirx.ForKind.SERIAL, inner)
