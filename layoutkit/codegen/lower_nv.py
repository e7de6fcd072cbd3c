"""Lowering of a solved NVIDIA GEMM program (:func:`layoutkit.infer.kernels.gemm`) to the :mod:`.ir`.

The shared addresses are the inferred (swizzled) layouts of ``A_shared`` / ``B_shared`` with the stage dim
leading; register offsets and the thread -> element map of the accumulator come from the inferred
``C_local`` fragment, checked against the ``mma.sync`` atoms before use.  With ``stages > 1`` the k loop is a
multistage ``cp.async`` pipeline: a prologue issues tiles ``0 .. stages-2``; iteration ``ko`` waits for tile
``ko`` (``wait_group stages-2``), synchronises, issues tile ``ko + stages - 1`` into the stage computed in the
previous iteration, then runs ``ldmatrix`` + ``mma.sync`` on stage ``ko % stages``.  One block computes the
``bM x bN`` tile ``(blockIdx.y, blockIdx.x)``; tails are guarded (zero-filled loads, skipped stores).

>>> from layoutkit.infer import infer_layouts, kernels
>>> p = kernels.gemm(M=64, N=64, K=64, bM=32, bN=32, bK=32)
>>> k = lower(p, infer_layouts(p))
>>> k.grid, k.threads, [b.name for b in k.scoped("global")]
((2, 2), 128, ['A', 'B', 'C'])
"""

from __future__ import annotations

import math

import numpy as np

from ..algebra.nodes import Const, Expr, Var
from ..algebra.simplify import substitute
from ..errors import UnsupportedError
from ..targets.nv.dtype import element_bits
from ..targets.nv.mma import _arch_number, mma_atom
from . import ir

WARP = 32


def _sub(layout, values) -> Expr:
    """The linearized address of ``layout`` at the coordinate expressions ``values`` (``(stage, row, col)``;
    the stage is dropped for a layout without a stage dim)."""
    if len(values) == len(layout.input_shape) + 1:
        values = values[1:]
    lin = layout.linearized()
    mapping = {v: (x if isinstance(x, Expr) else Const(int(x))) for v, x in zip(lin.forward_vars, values)}
    return substitute(lin.forward_index[0], mapping)


def _vector_ok(layout, vec: int) -> bool:
    """Whether runs of ``vec`` elements along the last dim are contiguous and aligned in ``layout``."""
    t = np.asarray(layout.linearized().table())[..., 0]
    t = t.reshape((1,) * (3 - t.ndim) + t.shape)
    if t.shape[-1] % vec:
        return False
    runs = t.reshape(t.shape[:-1] + (t.shape[-1] // vec, vec))
    return bool(np.all(runs == runs[..., :1] + np.arange(vec)) and np.all(runs[..., 0] % vec == 0))


def _gemm_ops(program) -> dict:
    """The global tensors and ops of a ``fill, copy, copy, gemm, copy`` program, checked to be the GEMM."""
    fill, ca, cb, gemm, st = program.ops
    g = gemm.args
    loads = {ca.args["dst"]: ca, cb.args["dst"]: cb}
    if set(loads) != {g["A"], g["B"]} or fill.args["dst"] != g["C"] or st.args["src"] != g["C"]:
        raise UnsupportedError(f"gemm lowering: ops {[op.name for op in program.ops]} are not fill C, copy A, copy B, "
                               "gemm, copy C out")
    for op in (ca, cb, st):
        region = op.args["src_region"] if op is not st else op.args["dst_region"]
        if any(region[0]):
            raise UnsupportedError(f"gemm lowering: {op.name} starts at {region[0]}; tiles start at the block origin")
    return {"A": loads[g["A"]].args["src"], "B": loads[g["B"]].args["src"], "C": st.args["dst"], "gemm": gemm,
            "fill": float(fill.args["value"])}


def _tile_copy(dst, layout, src, src_rows, src_cols, row0, col0, stage, threads, bits, name, live=None):
    """Stmts copying the tile ``layout`` (shape ``(stages, R, Cc)``) of ``dst`` from global ``src``."""
    R, Cc = layout.input_shape[-2:]
    vec = 128 // bits
    while vec > 1 and (Cc % vec or src_cols % vec or not _vector_ok(layout, vec)):
        vec //= 2
    per_row = Cc // vec
    total = R * per_row
    iters = -(-total // threads)
    it = Var(f"{name}_it", iters)
    lin = it * threads + ir.TID
    r, c = lin // per_row, lin % per_row * vec
    guard = ((row0 + r, src_rows), (col0 + c, src_cols))
    if live is not None:
        guard = (live,) + guard
    mask = ((lin, total),) if total % threads else ()  # threads past the tile copy nothing
    async_ = vec * bits // 8 in (4, 8, 16)
    stmt = ir.Copy(dst, _sub(layout, (stage, r, c)), src, (row0 + r) * src_cols + col0 + c, vec, guard, async_,
                   mask)
    return ir.For(it, iters, (stmt,), unroll=True)


def _warp_grid(C, threads):
    """``(brw, bcw, wrt, wct)`` of the accumulator fragment, and a check of its atom structure."""
    M, N = C.input_shape
    tt = np.asarray(C.thread_table())[0]
    warp = tt // WARP
    rows, cols = np.nonzero(warp == 0)
    wrt, wct = rows.max() + 1, cols.max() + 1
    brw, bcw = M // wrt, N // wct
    i, j = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    lane = 4 * (i % 8) + (j % 8) // 2
    want = (j // wct) * (WARP * brw) + (i // wrt) * WARP + lane
    if brw * bcw * WARP != threads or not np.array_equal(tt, want) or wrt % 16 or wct % 8:
        raise UnsupportedError(f"gemm lowering: the accumulator {C.describe()} is not an mma.sync m16n8 fragment "
                               "(a wgmma or other instruction's layout is not lowered)")
    idx = np.asarray(C.index_table())
    base = idx[(i // 16) * 16, (j // 8) * 8]
    if not np.array_equal(idx, base + 2 * ((i % 16) // 8) + j % 2):
        raise UnsupportedError("gemm lowering: C_local registers are not grouped by m16n8 atom")
    return int(brw), int(bcw), int(wrt), int(wct), idx


GEMM_OPS = ["fill", "copy", "copy", "gemm", "copy"]


def lower(program, result) -> ir.Kernel:
    """The IR kernel of a solved program: the GEMM (fill, copy, copy, gemm, copy) or a fragment program
    (copies global <-> fragment and parallel loops over fragments).  Other ops raise
    :class:`~layoutkit.errors.UnsupportedError` naming the op."""
    kinds = [op.kind for op in program.ops]
    if kinds == GEMM_OPS:
        return lower_gemm(program, result)
    if "gemm" in kinds:
        tail = program.ops[len(GEMM_OPS) - 1:]
        extra = [op.name for op in tail if op.kind != "copy"] or [op.name for op in tail]
        raise UnsupportedError(f"NVIDIA lowering: a gemm is lowered only as {GEMM_OPS}; ops {extra} of "
                               f"{[op.name for op in program.ops]} are not lowered")
    for op in program.ops:
        if op.kind not in ("copy", "parallel"):
            raise UnsupportedError(f"NVIDIA lowering: op {op.name} ({op.kind}) is not lowered in program {kinds}")
    return lower_fragment_program(program, result)


def lower_gemm(program, result) -> ir.Kernel:
    """The IR kernel of a solved GEMM program (fp16 m16n8k16; int8 m16n8k32 with ``transpose_B``)."""
    ops = _gemm_ops(program)
    g = ops["gemm"].args
    if g["transpose_A"]:
        raise UnsupportedError("gemm lowering: transpose_A is not lowered")
    tb = bool(g["transpose_B"])
    sm = _arch_number(program.target)
    if sm < 80:
        raise UnsupportedError(f"gemm lowering: {ops['gemm'].name} on sm_{sm}: mma.sync m16n8k16 / m16n8k32 "
                               "need sm_80+")
    bufs = program.buffers
    A, B, C = bufs[ops["A"]], bufs[ops["B"]], bufs[ops["C"]]
    As, Bs, Cl = (result.layout_map[g[k]] for k in ("A", "B", "C"))
    dtype = bufs[g["A"]].dtype
    bits = element_bits(dtype)
    atom = mma_atom(dtype)
    if bits == 32 or (bits == 8 and not tb):
        raise UnsupportedError(f"gemm lowering: {dtype} operands (transpose_B={tb}) are not lowered")
    M, K = A.shape
    N = B.shape[0] if tb else B.shape[1]
    stages = As.input_shape[0] if len(As.input_shape) == 3 else 1
    bM, bK = As.input_shape[-2:]
    bN = Bs.input_shape[-2] if tb else Bs.input_shape[-1]
    threads = program.threads
    if bK % atom.k:
        raise UnsupportedError(f"gemm lowering: bK = {bK} is not a multiple of the atom k = {atom.k}")
    brw, bcw, wrt, wct, cidx = _warp_grid(Cl, threads)
    kt = -(-K // bK)
    ko = Var("ko", kt)
    stage = ko % stages
    m0, n0 = ir.BY * bM, ir.BX * bN
    acc = bufs[g["C"]].dtype
    E = 128 // bits  # elements per 16-byte ldmatrix row

    def loads(t: Expr) -> tuple:
        """Copies of k tile ``t`` into stage ``t % stages`` (zeros past the last tile)."""
        st = t % stages
        a = _tile_copy("A_s", As, A.name, M, K, m0, t * bK, st, threads, bits, "a", (t, kt))
        if tb:
            b = _tile_copy("B_s", Bs, B.name, N, K, n0, t * bK, st, threads, bits, "b", (t, kt))
        else:
            b = _tile_copy("B_s", Bs, B.name, K, N, t * bK, n0, st, threads, bits, "b", (t, kt))
        return a, b
    lane, warp = ir.TID % WARP, ir.TID // WARP
    wi, wj = warp % brw, warp // brw
    mt, nt, kk_n = wrt // 16, wct // 8, bK // atom.k
    mat, row = lane // 8, lane % 8
    kk, mi, nj = Var("kk", kk_n), Var("mi", mt), Var("nj", nt)
    a_addr = _sub(As, (stage, wi * wrt + mi * 16 + (mat % 2) * 8 + row, kk * atom.k + (mat // 2) * E))
    a_size = 16 * atom.k // WARP  # elements per lane of one m16 x k A operand
    b_per = 8 * atom.k // WARP  # elements per lane of one k x n8 B operand
    a_load = ir.For(mi, mt, (ir.Ldmatrix("a_frag", mi * a_size, "A_s", a_addr, 4, False),), unroll=True)
    nb = Var("nb", nt // 2) if nt % 2 == 0 else Var("nb", nt)
    if nt % 2 == 0:  # x4 covers two n8 blocks
        if tb:
            b_addr = _sub(Bs, (stage, wj * wct + nb * 16 + (mat // 2) * 8 + row, kk * atom.k + (mat % 2) * E))
        else:
            b_addr = _sub(Bs, (stage, kk * atom.k + (mat % 2) * 8 + row, wj * wct + nb * 16 + (mat // 2) * 8))
        b_ld = ir.Ldmatrix("b_frag", nb * (2 * b_per), "B_s", b_addr, 4, not tb)
    else:  # x2: one n8 block, two k halves
        m2, r16 = (lane % 16) // 8, lane % 8
        if tb:
            b_addr = _sub(Bs, (stage, wj * wct + nb * 8 + r16, kk * atom.k + m2 * E))
        else:
            b_addr = _sub(Bs, (stage, kk * atom.k + m2 * 8 + r16, wj * wct + nb * 8))
        b_ld = ir.Ldmatrix("b_frag", nb * b_per, "B_s", b_addr, 2, not tb)
    b_load = ir.For(nb, nb.extent, (b_ld,), unroll=True)
    c_base = cidx[:wrt:16, :wct:8]
    # C register offset of atom (mi, nj), affine in mi and nj (checked)
    s_mi = int(c_base[1, 0] - c_base[0, 0]) if mt > 1 else 0
    s_nj = int(c_base[0, 1] - c_base[0, 0]) if nt > 1 else 0
    if not np.array_equal(c_base, c_base[0, 0] + s_mi * np.arange(mt)[:, None] + s_nj * np.arange(nt)[None, :]):
        raise UnsupportedError("gemm lowering: C_local register offsets are not affine in the atom indices")
    c_off = mi * s_mi + nj * s_nj + int(c_base[0, 0])
    mma = ir.For(mi, mt, (ir.For(nj, nt, (ir.Mma(atom.name, ("a_frag", mi * a_size), ("b_frag", nj * b_per),
                                                  ("C_local", c_off)),), unroll=True),), unroll=True)
    compute = ir.For(kk, kk_n, (a_load, b_load, mma), unroll=True)
    if stages > 1:  # multistage cp.async pipeline: tiles ko+1 .. ko+stages-1 in flight during compute of ko
        s0 = Var("s0", stages - 1)
        prologue: tuple = (ir.For(s0, stages - 1, loads(s0) + (ir.CommitGroup(),)),)
        main = ir.For(ko, kt, (ir.WaitGroup(stages - 2), ir.Barrier()) + loads(ko + (stages - 1))
                      + (ir.CommitGroup(), compute))
    else:
        prologue = ()
        main = ir.For(ko, kt, loads(ko) + (ir.CommitGroup(), ir.WaitGroup(0), ir.Barrier(), compute, ir.Barrier()))
    store = _store(Cl, "C_local", m0, n0, M, N, dst=C.name)
    buffers = (ir.Buffer(A.name, dtype, M * K, "global"), ir.Buffer(B.name, B.dtype, math.prod(B.shape), "global"),
               ir.Buffer(C.name, C.dtype, M * N, "global"),
               ir.Buffer("A_s", dtype, As.size, "shared"), ir.Buffer("B_s", dtype, Bs.size, "shared"),
               ir.Buffer("a_frag", dtype, mt * a_size, "reg"), ir.Buffer("b_frag", dtype, nt * b_per, "reg"),
               ir.Buffer("C_local", acc, Cl.local_size, "reg"))
    grid = (-(-N // bN), -(-M // bM))
    body = (ir.Fill("C_local", ops["fill"]),) + prologue + (main, ir.WaitGroup(0), store)
    name = f"gemm_{dtype}_{M}x{N}x{K}_{bM}x{bN}x{bK}_s{stages}{'_tb' if tb else ''}"
    return ir.Kernel(name, threads, grid, buffers, body)


def _fragment_vec(frag, cols: int, max_vec: int) -> int:
    """The widest ``vec <= max_vec`` such that registers ``k .. k+vec`` of a thread hold ``(i, j .. j+vec)``."""
    idx, thr = np.asarray(frag.index_table()), np.asarray(frag.thread_table())[0]
    vec = max_vec
    while vec > 1:
        ok = cols % vec == 0 and idx.shape[1] % vec == 0 and frag.local_size % vec == 0
        if ok:
            runs, trs = idx.reshape(idx.shape[0], -1, vec), thr.reshape(thr.shape[0], -1, vec)
            ok = (np.array_equal(runs, runs[..., :1] + np.arange(vec)) and np.all(runs[..., 0] % vec == 0)
                  and np.array_equal(trs, np.broadcast_to(trs[..., :1], trs.shape)))
        if ok:
            return vec
        vec //= 2
    return 1


def _store(frag, src, m0, n0, M, N, dst, load=False, max_vec=2) -> ir.For:
    """Register fragment <-> global ``dst`` (``[M, N]``, tile origin ``(m0, n0)``), ``vec`` registers
    (``j .. j+vec``) per vector access; ``load`` reads the global tile into the registers."""
    if len(frag.input_shape) != 2 or frag.replicate_size != 1:
        raise UnsupportedError(f"lowering: fragment copies need a 2-D unreplicated fragment; found {frag}")
    inv = frag.inverse()
    loc, thr = inv.forward_vars
    size = frag.local_size
    vec = _fragment_vec(frag, N, max_vec)
    p = Var("p", size // vec)
    ij = [substitute(e, {loc: p * vec, thr: ir.TID}) for e in inv.forward_index[:2]]
    i, j = m0 + ij[0], n0 + ij[1]
    guard = ((i, M), (j, N))
    if load:
        st = ir.Load(src, p * vec, dst, i * N + j, vec, guard)
    else:
        st = ir.Store(dst, i * N + j, src, p * vec, vec, guard)
    return ir.For(p, size // vec, (st,), unroll=True)


def lower_fragment_program(program, result) -> ir.Kernel:
    """Copies global -> fragment, parallel loops over fragments with identical layouts (a register move from
    the single read to the write through the loop's ``compute``: ``copy`` or ``relu``) and fragment -> global
    copies."""
    tiles, body, gshape = set(), [], None
    regs: dict[str, object] = {}
    for op in program.ops:
        if op.kind == "copy":
            a = op.args
            src, dst = program.buffers[a["src"]], program.buffers[a["dst"]]
            g, f = (src, dst) if dst.is_fragment else (dst, src)
            if not f.is_fragment or g.scope != "global" or len(g.shape) != 2:
                raise UnsupportedError(f"lowering: {op.name} copies {src.scope} -> {dst.scope}; only 2-D "
                                       "global <-> fragment copies are lowered")
            region = a["src_region"] if g is src else a["dst_region"]
            if any(region[0]):
                raise UnsupportedError(f"lowering: {op.name} starts at {region[0]}; tiles start at the block origin")
            frag = result.layout_map[f.name]
            tiles.add(tuple(frag.input_shape))
            gshape = gshape or g.shape
            if g.shape != gshape:
                raise UnsupportedError(f"lowering: {op.name}: global tensors of different shapes")
            regs[f.name] = frag
            M, N = g.shape
            bM, bN = frag.input_shape
            body.append(_store(frag, f.name, ir.BY * bM, ir.BX * bN, M, N, g.name, load=g is src,
                               max_vec=128 // element_bits(g.dtype)))
        else:
            writes = [x for x in op.accesses if x.is_write]
            reads = [x for x in op.accesses if not x.is_write]
            if len(writes) != 1 or len(reads) != 1:
                raise UnsupportedError(f"lowering: {op.name} needs one read and one write; found {len(reads)}, "
                                       f"{len(writes)}")
            w, rd = result.layout_map[writes[0].buffer], result.layout_map[reads[0].buffer]
            wi, ri = writes[0].indices, reads[0].indices
            ident = wi == ri and all(isinstance(v, Var) for v in wi) and len(set(wi)) == len(wi)
            if not ident or not w.is_equal(rd):
                raise UnsupportedError(f"lowering: {op.name} is not an identity map between equal fragments")
            regs[writes[0].buffer], regs[reads[0].buffer] = w, rd
            fn = op.args.get("compute", "copy")
            if fn not in ir.MOVE_FNS:
                raise UnsupportedError(f"lowering: {op.name} computes {fn!r}; expected one of {ir.MOVE_FNS}")
            body.append(ir.Move(writes[0].buffer, Const(0), reads[0].buffer, Const(0), w.local_size, fn))
    if len(tiles) != 1:
        raise UnsupportedError(f"lowering: fragment programs need one tile shape; found {sorted(tiles)}")
    (bM, bN), (M, N) = tiles.pop(), gshape
    bufs = [ir.Buffer(b.name, b.dtype, math.prod(b.shape), "global") for b in program.buffers.values()
            if b.scope == "global"]
    bufs += [ir.Buffer(name, program.buffers[name].dtype, f.local_size, "reg") for name, f in regs.items()]
    grid = (-(-N // bN), -(-M // bM))
    fns = "".join(sorted({f"_{st.fn}" for st in body if isinstance(st, ir.Move) and st.fn != "copy"}))
    return ir.Kernel(f"elementwise{fns}_{M}x{N}_{bM}x{bN}", program.threads, grid, tuple(bufs), tuple(body))
