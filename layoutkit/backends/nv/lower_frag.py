"""Lowering of fragment ops (NVIDIA) to the :mod:`.ir`: global <-> fragment copies, parallel loops and
reductions, with every register offset, shuffle partner and shared slot read off the inferred fragments.

A block owns one tile: axis 0 (rows) starts at ``blockIdx.y * tile_rows``, axis 1 (columns) at
``blockIdx.x * tile_cols``.  2-D fragments span both axes; a 1-D fragment takes the axis it is used on (the
loop var of a parallel read such as ``bias[j]``, or the axis a ``reduce`` keeps).

``reduce`` (``sum`` / ``max`` / ``min``, ``dim`` 0 or 1, ``clear`` either way) lowers in three steps:

1. every thread folds its own registers of each output element (registers outside the global tensor, in
   a tail tile, are skipped);
2. ``__shfl_xor_sync`` butterflies over the lanes that hold the same output element (the lane part of the
   xor group the source fragment's thread map gives those threads);
3. when the element is spread over warps, each warp writes its partial to shared memory (slot
   ``element * warps + warp``) and, after a barrier, every holder folds the partials of its warp group in
   warp order, so all replicas of the output hold the same value.

When the threads sharing an output element are no xor group (ragged rows), the reduce goes through a
shared copy of the source tile instead (:func:`reduce_through_shared`), and the output -- whose threads then leave
registers unused -- is stored by the owner of its replica 0.

A fragment ``x`` that a parallel loop reads through a layout conversion (free mode's
:class:`~layoutkit.infer.conversions.LayoutConversion`) is staged through shared memory before the loop
(:func:`lower_conversion`): every thread stores its ``x`` registers into the staging tile the cost model
priced (row-major or padded, :func:`layoutkit.backends.nv.smem_cost.staging_layout`), ``__syncthreads()``, and
loads the registers of the converted layout into ``x__conv``, which the loop reads.

Not lowered (:class:`~layoutkit.errors.UnsupportedError` naming the op): ``reduce`` kinds ``abssum`` /
``absmax`` and reductions of a replicated or non-2-D source; parallel loops writing more than one buffer or
whose ``compute`` is not in :data:`.ir.COMPUTE_FNS` with its arity; reads whose register sits in another
thread without a conversion; copies between fragments and tensors of different rank.

>>> from layoutkit.infer import infer_layouts, programs
>>> p = programs.gemm_rowmax_bias(M=64, N=64, K=64, bM=32, bN=32, bK=32)
>>> axes = fragment_axes(p)
>>> axes["bias_frag"], axes["row_max"], axes["C_local"]
((1,), (0,), (0, 1))
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...algebra import compile_numpy, free_vars
from ...algebra.nodes import Const, Expr, Var, substitute
from ...algebra.shapes import placeholder
from ...cost.access import shared_access
from ...dtypes import element_bits
from ...errors import UnsupportedError
from ...scopes import GLOBAL, SHARED
from ...targets.nv.hardware import WARP_SIZE
from ..dispatch import OpTable
from . import ir
from .ir import REG
from .smem_cost import staging_layout


@dataclass(frozen=True)
class Tile:
    """The block's tile: per axis its origin (an expression of the block index), tile size and the
    extent of the global tensors along it (tails are guarded against it)."""

    origin: tuple[Expr, Expr]
    size: tuple[int, int]
    extent: tuple[int, int]
    axes: dict

    def tail(self, axis: int) -> bool:
        return self.extent[axis] % self.size[axis] != 0


def fragment_axes(program) -> dict[str, tuple[int, ...]]:
    """The tile axes of every fragment: ``(0, 1)`` for 2-D ones; a 1-D fragment takes the axis of the loop
    var it is read or written with in a parallel loop, or the axis a reduce into it keeps.

    >>> from layoutkit.infer import programs
    >>> fragment_axes(programs.column_bias()), fragment_axes(programs.tile_reduce())
    ({'x': (0, 1), 'b': (1,)}, {'x': (0, 1), 'r': (0,)})
    """
    axes = {name: (0, 1) for name, b in program.buffers.items() if b.is_fragment and len(b.shape) == 2}
    for _ in range(len(program.ops) + 1):
        changed = False
        for op in program.ops:
            if op.kind == "parallel":
                var_axis = {}
                for acc in op.accesses:
                    if acc.buffer in axes and all(isinstance(v, Var) for v in acc.indices):
                        var_axis.update(zip((v.name for v in acc.indices), axes[acc.buffer]))
                for acc in op.accesses:
                    names = [v.name for v in acc.indices if isinstance(v, Var)]
                    if acc.buffer not in axes and len(names) == len(acc.indices) and all(n in var_axis for n in names):
                        axes[acc.buffer] = tuple(var_axis[n] for n in names)
                        changed = True
            elif op.kind == "reduce":
                src, dst, dim = op.args["src"], op.args["dst"], op.args["dim"]
                if src in axes and dst not in axes:
                    axes[dst] = tuple(a for d, a in enumerate(axes[src]) if d != dim)
                    changed = True
        if not changed:
            break
    return axes


def _eval(exprs, env: dict) -> list[np.ndarray]:
    """Integer values of ``exprs`` with the variables named in ``env`` bound to arrays."""
    out = []
    for e in exprs:
        vs = tuple(free_vars(e)) if isinstance(e, Expr) else ()
        if not vs:
            out.append(np.asarray(int(e.value) if isinstance(e, Const) else int(e)))
            continue
        (val,) = compile_numpy((e,), vs)(*(env[v.name] for v in vs))
        out.append(np.asarray(val))
    return out


def _inverse_at(frag, k: int | Expr, thread: Expr = ir.TID) -> tuple[Expr, ...]:
    """``(coords..., rep)`` of register ``k`` of ``thread`` in ``frag``."""
    inv = frag.inverse()
    loc, thr = inv.forward_vars
    k = k if isinstance(k, Expr) else Const(int(k))
    return tuple(substitute(e, {loc: k, thr: thread}) for e in inv.forward_index)


def _fragment_vec(frag, cols: int, max_vec: int) -> int:
    """The widest ``vec <= max_vec`` such that registers ``k .. k+vec`` of a thread hold consecutive
    elements of the last dim (every replica alike)."""
    idx, thr = np.asarray(frag.index_table()), np.asarray(frag.thread_table())
    vec = max_vec
    while vec > 1:
        ok = cols % vec == 0 and idx.shape[-1] % vec == 0 and frag.local_size % vec == 0
        if ok:
            runs, trs = idx.reshape(-1, vec), thr.reshape(-1, vec)
            ok = (np.array_equal(runs, runs[:, :1] + np.arange(vec)) and np.all(runs[:, 0] % vec == 0)
                  and np.array_equal(trs, np.broadcast_to(trs[:, :1], trs.shape)))
        if ok:
            return vec
        vec //= 2
    return 1


def fragment_copy(frag, reg: str, gname: str, gshape, axes, tile: Tile, load: bool, max_vec: int) -> ir.For:
    """Registers ``reg`` (fragment ``frag`` over tile ``axes``) <-> global ``gname`` (``gshape``, row-major).
    Every replica loads; only replica 0 stores; elements outside ``gshape`` load zeros and are not stored."""
    if len(gshape) != len(frag.input_shape) or len(axes) != len(gshape):
        raise UnsupportedError(f"lowering: copy {gname} <-> {reg}: the global tensor has rank {len(gshape)}, the "
                               f"fragment {frag.input_shape} on tile axes {axes}")
    if not load and frag.replicate_size > 1 and np.any(_slots(frag, int(frag.thread_range[1])) < 0):

        return store_sparse_fragment(frag, reg, gname, gshape, axes, tile)
    vec = _fragment_vec(frag, gshape[-1], max_vec)
    p = Var("p", frag.local_size // vec)
    *coords, rep = _inverse_at(frag, p * vec)
    g = [tile.origin[a] + c for a, c in zip(axes, coords)]
    strides = [math.prod(gshape[d + 1:]) for d in range(len(gshape))]
    addr = sum((x * s for x, s in zip(g[1:], strides[1:])), g[0] * strides[0])
    guard = tuple((x, n) for x, n in zip(g, gshape))
    if load:
        st = ir.Load(reg, p * vec, gname, addr, vec, guard)
    else:
        if frag.replicate_size > 1:
            guard = ((rep, 1),) + guard  # one replica writes
        st = ir.Store(gname, addr, reg, p * vec, vec, guard)
    return ir.For(p, frag.local_size // vec, (st,), unroll=True)


def _slots(frag, threads: int) -> np.ndarray:
    """``[threads, local_size]`` flat coordinate held by each register of each thread (-1 where none)."""
    out = np.full((threads, frag.local_size), -1, np.int64)
    thr = np.asarray(frag.thread_table()).reshape(frag.replicate_size, -1)
    idx = np.asarray(frag.index_table()).reshape(-1)
    if thr.max() >= threads:
        raise UnsupportedError(f"lowering: fragment {frag.describe()} uses thread {int(thr.max())} of {threads}")
    out[thr, np.broadcast_to(idx, thr.shape)] = np.arange(idx.size)
    return out


def lower_parallel(op, program, layouts: dict, views: dict | None = None) -> list:
    """A parallel loop: a :class:`~.ir.Move` when it maps one fragment onto an equal one elementwise, else one
    :class:`~.ir.Compute` per register of the written fragment, the read registers found through the
    fragments' maps (each must sit in the writing thread, at the same register offset in every thread).
    ``views`` maps a read fragment to ``(register buffer, layout)``: a converted view (:func:`lower_conversion`)
    the loop reads instead."""
    views = views or {}
    writes = [x for x in op.accesses if x.is_write]
    reads = [x for x in op.accesses if not x.is_write]
    fn = op.args.get("compute", "copy")
    if len(writes) != 1 or fn not in ir.COMPUTE_FNS or ir.COMPUTE_FNS[fn].arity != len(reads):
        raise UnsupportedError(f"lowering: {op.name} writes {len(writes)} buffers and reads {len(reads)} with compute "
                               f"{fn!r}; expected one write and the operands of one of "
                               f"{ {k: f.arity for k, f in ir.COMPUTE_FNS.items()} } "
                               "(set compute= on the parallel loop)")
    w = writes[0]
    W = layouts[w.buffer]
    loop_vars = tuple(placeholder(d, e) for d, e in enumerate(op.loop))
    if tuple(w.indices) != loop_vars or tuple(W.input_shape) != tuple(op.loop):
        raise UnsupportedError(f"lowering: {op.name} writes {w.buffer} at {[str(e) for e in w.indices]}; only the "
                               "identity write over the whole fragment is lowered")
    def view(buffer: str):
        return views.get(buffer, (buffer, layouts[buffer]))
    if (len(reads) == 1 and fn in ir.MOVE_FNS and tuple(reads[0].indices) == loop_vars
            and W.is_equal(view(reads[0].buffer)[1])):
        return [ir.Move(w.buffer, Const(0), view(reads[0].buffer)[0], Const(0), W.local_size, fn)]
    threads = program.threads
    slots = _slots(W, threads)
    env = dict(zip((v.name for v in loop_vars), np.meshgrid(*(np.arange(e) for e in op.loop), indexing="ij")))
    srcs = []  # per read: [local_size] register offsets
    for rd in reads:
        reg, R = view(rd.buffer)
        shape = tuple(R.input_shape)
        coords = [np.broadcast_to(c, op.loop).reshape(-1) for c in _eval(rd.indices, env)]
        flat = np.ravel_multi_index(coords, shape)  # read coordinate per loop point
        rthr = np.asarray(R.thread_table()).reshape(R.replicate_size, -1)
        ridx = np.asarray(R.index_table()).reshape(-1)
        t, k = np.nonzero(slots >= 0)
        rc = flat[slots[t, k]]
        held = np.any(rthr[:, rc] == t, axis=0)
        if not held.all():
            bad = int(np.argmin(held))
            coord = tuple(int(c) for c in np.unravel_index(rc[bad], shape))
            raise UnsupportedError(f"lowering: {op.name}: thread {t[bad]} writes {w.buffer} register {k[bad]} but "
                                   f"does not hold {rd.buffer}{coord} in its registers")
        offs = np.full((threads, W.local_size), -1, np.int64)
        offs[t, k] = ridx[rc]
        col = offs.max(axis=0)
        if np.any((offs != col) & (offs >= 0)):
            raise UnsupportedError(f"lowering: {op.name}: the register of {rd.buffer} read with a {w.buffer} register "
                                   "differs between threads; registers must be addressed by constants")
        srcs.append((reg, col))
    return [ir.Compute(w.buffer, k, fn, tuple((b, int(col[k])) for b, col in srcs)) for k in range(W.local_size)]


def _address(layout, coords) -> Expr:
    """The linear address of ``layout`` at the coordinate expressions ``coords``."""
    lin = layout.linearized()
    return substitute(lin.forward_index[0], dict(zip(lin.forward_vars, coords)))


def _stage_moves(frag, reg: str, stage: str, smem, dtype: str, threads: int, store: bool, what: str) -> ir.For:
    """Every register of ``frag`` (register buffer ``reg``) <-> its element in shared ``stage`` laid out as
    ``smem``, ``vec`` registers at a time with the vector width the cost model prices
    (:func:`~layoutkit.cost.access.shared_access`), so one IR statement is one modelled warp instruction.
    Threads past the fragment's threads move nothing; every replica moves (a replicated store writes equal
    values, as the model charges it)."""
    slots = _slots(frag, threads)
    used = np.any(slots >= 0, axis=1)
    n_used = int(used.sum())
    if not (np.all(used[:n_used]) and np.all(slots[:n_used] >= 0)):
        raise UnsupportedError(f"lowering: {what}: {frag.describe()} leaves registers of its threads unused; a "
                               "conversion moves whole register arrays")
    idx = tuple(placeholder(d, e) for d, e in enumerate(frag.input_shape))
    _, vec = shared_access(frag, idx, smem, dtype)
    p = Var("p", frag.local_size // vec)
    *coords, _rep = _inverse_at(frag, p * vec)
    addr = _address(smem, coords)
    guard = ((ir.TID, n_used),) if n_used < threads else ()
    st = (ir.Store(stage, addr, reg, p * vec, vec, guard) if store
          else ir.Load(reg, p * vec, stage, addr, vec, guard))
    return ir.For(p, frag.local_size // vec, (st,), unroll=True)


def lower_conversion(conv, program, reg: str) -> tuple[list, list]:
    """Statements and buffers converting fragment ``conv.buffer`` (laid out ``conv.src``) into the register
    array ``reg`` laid out ``conv.dst`` (a :class:`~layoutkit.infer.conversions.LayoutConversion`): every thread
    stores its registers into a shared staging tile, ``__syncthreads()``, then loads the ``dst`` registers.
    The staging tile is the one the cost model priced (``conv.detail.staging``, row-major when the model
    records none) and gets its own shared buffer, so it never overlaps another.

    >>> from layoutkit.infer import Program, infer_layouts
    >>> p = Program(threads=128)
    >>> G = p.tensor("G", (64, 64), "float32")
    >>> x = p.alloc_fragment("x", (64, 64), "float32"); y = p.alloc_fragment("y", (64, 64), "float32")
    >>> _ = p.copy(G[0:64, 0:64], x)
    >>> _ = p.parallel((64, 64), writes=[(y, lambda i, j: (i, j))], reads=[(x, lambda i, j: (j, i))])
    >>> _ = p.copy(y, G[0:64, 0:64])
    >>> (conv,) = infer_layouts(p, cost_model="smem-aware").conversions
    >>> body, bufs = lower_conversion(conv, p, "x__conv")
    >>> [type(s).__name__ for s in body], [(b.name, b.size, b.scope) for b in bufs]
    (['For', 'Barrier', 'For'], [('x__stage1', 4348, 'shared'), ('x__conv', 32, 'reg')])
    """
    src, dst = conv.src, conv.dst
    dtype = program.buffers[conv.buffer].dtype
    staging = getattr(conv.detail, "staging", "row-major")
    smem = staging_layout(src.input_shape, dtype, staging)
    uid = conv.op.rsplit("#", 1)[-1]
    stage = f"{conv.buffer}__stage{uid}"
    size = int(np.asarray(smem.linear_table()).max()) + 1
    what = f"{conv.op} reading {conv.buffer} through a conversion"
    body = [_stage_moves(src, conv.buffer, stage, smem, dtype, program.threads, True, what), ir.Barrier(),
            _stage_moves(dst, reg, stage, smem, dtype, program.threads, False, what)]
    return body, [ir.Buffer(stage, dtype, size, SHARED), ir.Buffer(reg, dtype, dst.local_size, REG)]


def conversion_registers(conversions) -> dict[tuple[str, str], str]:
    """``(op, fragment) -> register array`` of every conversion: ``x__conv``, or ``x__conv<op uid>`` when
    ``x`` is converted for more than one op.

    >>> from types import SimpleNamespace as C
    >>> conversion_registers([C(op="parallel#1", buffer="x"), C(op="parallel#2", buffer="s"),
    ...                       C(op="parallel#3", buffer="s")])
    {('parallel#1', 'x'): 'x__conv', ('parallel#2', 's'): 's__conv2', ('parallel#3', 's'): 's__conv3'}
    """
    count: dict[str, int] = {}
    for c in conversions:
        count[c.buffer] = count.get(c.buffer, 0) + 1
    return {(c.op, c.buffer): f"{c.buffer}__conv" + (c.op.rsplit("#", 1)[-1] if count[c.buffer] > 1 else "")
            for c in conversions}


_IDENTITY = {"max": -math.inf, "min": math.inf, "sum": 0.0}
_INT_BOUNDS = {"int8": (-128, 127), "uint8": (0, 255), "int32": (-2**31, 2**31 - 1)}


def _identity(kind: str, dtype: str) -> float:
    if dtype in _INT_BOUNDS and kind != "sum":
        lo, hi = _INT_BOUNDS[dtype]
        return float(lo if kind == "max" else hi)
    return _IDENTITY[kind]


def _xor_span(basis) -> set[int]:
    span = {0}
    for b in basis:
        span |= {s ^ b for s in span}
    return span


def _reduce_groups(S, D, keep: int, threads: int, name: str):
    """``(slots, kept, regs, group)``: each source register's kept coordinate (``[threads, local]``), the output
    register of every source register (the same in all threads) and the xor group of threads sharing an
    output element, checked to be the output fragment's holders."""
    slots = _slots(S, threads)
    if np.any(slots < 0):
        raise UnsupportedError(f"lowering: {name}: the source fragment {S.describe()} leaves registers unused")
    kept = np.stack(np.unravel_index(slots, S.input_shape))[keep]  # [threads, local]
    cdim = S.input_shape[keep]
    regs_t = np.asarray(D.index_table()).reshape(-1)[kept]
    regs = regs_t[0]
    if not np.array_equal(regs_t, np.broadcast_to(regs, regs_t.shape)):
        raise _NoButterfly(f"lowering: {name}: the output register of a source register differs between threads")
    member = np.zeros((cdim, threads), bool)
    member[kept, np.arange(threads)[:, None]] = True
    holders = np.zeros((cdim, threads), bool)
    dthr = np.asarray(D.thread_table())  # [rep, cdim]
    holders[np.broadcast_to(np.arange(cdim), dthr.shape), dthr] = True
    if not np.array_equal(member, holders):
        c = int(np.argmax(np.any(member != holders, axis=1)))
        raise _NoButterfly(f"lowering: {name}: element {c} of the output lives on threads "
                               f"{np.flatnonzero(holders[c]).tolist()[:16]}; the source row on "
                               f"{np.flatnonzero(member[c]).tolist()[:16]} (the output must be replicated exactly "
                               "over the threads that reduce it)")
    group = sorted(int(t) for t in np.flatnonzero(member[kept[0, 0]]))  # xor offsets from thread 0
    gset = set(group)
    closed = all((a ^ b) in gset for a in group for b in group)
    want = np.arange(threads)[:, None] ^ np.asarray(group)[None, :]  # [threads, group]
    if not closed or want.max() >= threads or not np.all(member[kept[:, :, None], want[:, None, :]]):
        raise _NoButterfly(f"lowering: {name}: the threads sharing an output element {group[:16]} are not an xor "
                               "group of thread indices (a butterfly over lanes and warps cannot reduce them)")
    if np.any(member.sum(axis=1)[np.unique(kept)] != len(group)):
        raise _NoButterfly(f"lowering: {name}: output elements are shared by different numbers of threads")
    return kept, regs, group


def lower_reduce(op, program, layouts: dict, tile: Tile) -> tuple[list, list]:
    """Statements and extra buffers of a ``reduce`` (see the module docstring)."""
    a = op.args
    kind = a["kind"]
    if kind not in ir.REDUCE_FNS:
        raise UnsupportedError(f"lowering: {op.name} reduces with {kind!r}; expected one of {sorted(ir.REDUCE_FNS)}")
    S, D = layouts[a["src"]], layouts[a["dst"]]
    if len(S.input_shape) != 2 or S.replicate_size != 1 or len(D.input_shape) != 1:
        raise UnsupportedError(f"lowering: {op.name} reduces {S.describe()} into {D.describe()}; a 2-D unreplicated "
                               "source into a 1-D fragment is lowered")
    try:
        return _reduce_butterfly(op, program, S, D, tile)
    except _NoButterfly as why:

        return reduce_through_shared(op, program, S, D, tile, str(why))


class _NoButterfly(UnsupportedError):
    """The threads sharing an output element are no xor group a butterfly can reduce."""


def _reduce_butterfly(op, program, S, D, tile: Tile) -> tuple[list, list]:
    """A reduce whose threads sharing an output form an xor group: each thread folds its registers, shuffles
    fold the lanes, shared memory folds the warps."""
    a = op.args
    kind, dim, clear = a["kind"], int(a["dim"]), bool(a["clear"])
    fn = ir.REDUCE_FNS[kind]
    threads, keep = program.threads, 1 - dim
    kept, regs, group = _reduce_groups(S, D, keep, threads, op.name)
    lanes = [g for g in group if g < WARP_SIZE]
    warps = [g // WARP_SIZE for g in group if g % WARP_SIZE == 0]
    if len(lanes) * len(warps) != len(group):
        raise _NoButterfly(f"lowering: {op.name}: the thread group {group[:16]} mixes lane and warp offsets")
    dst, dt = a["dst"], program.buffers[a["dst"]].dtype
    acc = dst if clear else f"{dst}_part{op.uid}"
    bufs = [] if clear else [ir.Buffer(acc, dt, D.local_size, REG)]
    body: list = [ir.Fill(acc, _identity(kind, dt))]
    src_axis = tile.axes[a["src"]][dim]
    for k in range(S.local_size):  # 1: this thread's registers, tail elements skipped
        guard = ()
        if tile.tail(src_axis):
            guard = ((tile.origin[src_axis] + _inverse_at(S, k)[dim], tile.extent[src_axis]),)
        body.append(ir.Compute(acc, int(regs[k]), fn, ((acc, int(regs[k])), (a["src"], k)), guard))
    basis: list[int] = []
    for v in lanes:  # 2: butterflies over a basis of the lane group
        if v not in _xor_span(basis):
            basis.append(v)
    body += [ir.ShflXor(acc, r, m, fn) for m in basis for r in range(D.local_size)]
    if len(warps) > 1:  # 3: the warps' partials through shared memory
        bits = [w for w in warps if w & (w - 1) == 0 and w]
        if _xor_span(bits) != set(warps):
            raise _NoButterfly(f"lowering: {op.name}: the warp group {warps} is not spanned by warp index bits")
        nw, cdim = threads // WARP_SIZE, S.input_shape[keep]
        red = f"{dst}_red{op.uid}"
        tmp = f"{dst}_tmp{op.uid}"
        bufs += [ir.Buffer(red, dt, cdim * nw, SHARED), ir.Buffer(tmp, dt, 1, REG)]
        warp = ir.TID // WARP_SIZE
        base = warp - sum((warp // b % 2 * b for b in bits[1:]), warp // bits[0] % 2 * bits[0])
        first = {int(r): k for k, r in reversed(list(enumerate(regs)))}
        rows = {r: _inverse_at(S, k)[keep] for r, k in first.items()}
        body += [ir.Store(red, rows[r] * nw + warp, acc, Const(r), 1) for r in sorted(rows)]
        body.append(ir.Barrier())
        for r in sorted(rows):
            for q, w in enumerate(sorted(warps)):
                addr = rows[r] * nw + base + w
                if q == 0:
                    body.append(ir.Load(acc, Const(r), red, addr, 1))
                else:
                    body += [ir.Load(tmp, Const(0), red, addr, 1), ir.Compute(acc, r, fn, ((acc, r), (tmp, 0)))]
    if not clear:
        body += [ir.Compute(dst, r, fn, ((dst, r), (acc, r))) for r in range(D.local_size)]
    return body, bufs


def lower_ops(ops, program, layouts: dict, tile: Tile, conversions=()) -> tuple[list, list]:
    """Statements and extra buffers of fragment ops (``copy`` global <-> fragment, ``parallel``, ``reduce``,
    ``fill`` of a fragment); ``layouts`` maps buffer names to the solved layouts; ``conversions`` (the result's
    :class:`~layoutkit.infer.conversions.LayoutConversion` s) are lowered before the parallel loop that reads
    through them (:func:`lower_conversion`), into register arrays ``<fragment>__conv``.

    >>> from layoutkit.infer import infer_layouts, programs
    >>> p = programs.tile_reduce(M=64, N=128, bM=64, bN=128)
    >>> tile = Tile((ir.BY * 64, ir.BX * 128), (64, 128), (64, 128), fragment_axes(p))
    >>> body, extra = lower_ops(p.ops, p, dict(infer_layouts(p).layout_map), tile)
    >>> [type(s).__name__ for s in body][:2], extra
    (['For', 'Fill'], [])
    """
    conv_names = conversion_registers(conversions)
    unknown = sorted({c.op for c in conversions} - {op.name for op in ops if op.kind == "parallel"})
    if unknown:
        raise UnsupportedError(f"lowering: conversions for ops {unknown}; expected them on parallel loops of "
                               f"{[op.name for op in ops]}")
    out = FragmentLowering(program, layouts, tile, tuple(conversions), conv_names)
    for op in ops:
        LOWERINGS.lookup(op.kind, _not_lowered)(op, out)
    return out.body, out.bufs


@dataclass
class FragmentLowering:
    """What an op's lowering reads (the program, its solved ``layouts`` by buffer name, the block's ``tile``, the
    result's ``conversions``) and appends to: ``body`` (IR statements, run by every thread of the block) and
    ``bufs`` (extra IR buffers it declares).  Register arrays of the program's fragments are declared by the
    kernel, named as the fragments, ``layouts[name].local_size`` elements each."""

    program: object
    layouts: dict
    tile: Tile
    conversions: tuple
    conv_names: dict
    body: list = field(default_factory=list)
    bufs: list = field(default_factory=list)


LOWERINGS = OpTable("NVIDIA op lowering")
"""Op kind -> ``fn(op, lowering: FragmentLowering)`` appending the op's statements: the ops of a fragment
program and of a GEMM's epilogue (a GEMM and its main loop are :mod:`.lower`'s).  Ops without an entry are
refused naming the op; :meth:`~layoutkit.backends.nv.backend.NvBackend.register_lowering` adds one."""


def _not_lowered(op, out: FragmentLowering) -> None:
    raise UnsupportedError(f"lowering: op {op.name} ({op.kind}) is not lowered after the main loop")


@LOWERINGS.register("copy")
def _lower_copy(op, out: FragmentLowering) -> None:
    a, program, tile = op.args, out.program, out.tile
    src, dst = program.buffers[a["src"]], program.buffers[a["dst"]]
    g, f = (src, dst) if dst.is_fragment else (dst, src)
    if not f.is_fragment or g.scope != GLOBAL:
        raise UnsupportedError(f"lowering: {op.name} copies {src.scope} -> {dst.scope}; only global <-> "
                               "fragment copies are lowered here")
    region = a["src_region"] if g is src else a["dst_region"]
    if any(region[0]):
        raise UnsupportedError(f"lowering: {op.name} starts at {region[0]}; tiles start at the block origin")
    if f.name not in tile.axes:
        raise UnsupportedError(f"lowering: {op.name}: no tile axis is known for fragment {f.name} (use it in a "
                               "parallel loop or as a reduce output)")
    out.body.append(fragment_copy(out.layouts[f.name], f.name, g.name, g.shape, tile.axes[f.name], tile,
                                  load=g is src, max_vec=128 // element_bits(g.dtype)))


@LOWERINGS.register("parallel")
def _lower_parallel_op(op, out: FragmentLowering) -> None:
    views = {}
    for conv in out.conversions:
        if conv.op == op.name:
            reg = out.conv_names[(conv.op, conv.buffer)]
            stmts, extra = lower_conversion(conv, out.program, reg)
            out.body += stmts
            out.bufs += extra
            views[conv.buffer] = (reg, conv.dst)
    out.body += lower_parallel(op, out.program, out.layouts, views)


@LOWERINGS.register("reduce")
def _lower_reduce_op(op, out: FragmentLowering) -> None:
    stmts, extra = lower_reduce(op, out.program, out.layouts, out.tile)
    out.body += stmts
    out.bufs += extra


@LOWERINGS.register("fill")
def _lower_fill(op, out: FragmentLowering) -> None:
    if not out.program.buffers[op.args["dst"]].is_fragment:
        _not_lowered(op, out)
    out.body.append(ir.Fill(op.args["dst"], float(op.args["value"])))


# ---- the shared-memory reduce ------------------------------------------------------------------
# The shared-memory reduce: the lowering of a ``reduce`` whose threads sharing an output element form no
# xor group (ragged rows: an ``8 x 12`` tile on 32 threads puts row 0 on threads 0-11 and row 1 on 12-23),
# which shuffle butterflies cannot fold.
#
# Every thread stores its source registers into a row-major copy of the source tile in shared memory;
# after a barrier every thread folds, for each output register, the row that register holds -- in column
# order, the same on every thread, so all replicas of an output hold the same value.  The output's
# register ``r`` must hold one row on every thread that holds it (the row is then a constant of the
# kernel); the source fragment must use every register of every thread.

def _output_rows(D, threads: int, name: str, why: str) -> list[int]:
    """The row of every register of the output fragment ``D``, the same on every thread holding it."""
    slots = _slots(D, threads)
    rows = []
    for r in range(D.local_size):
        held = slots[:, r][slots[:, r] >= 0]
        if held.size == 0 or np.any(held != held[0]):
            raise UnsupportedError(f"{why}; and register {r} of the output {D.describe()} holds different elements "
                                   f"on different threads, which the shared-memory reduce of {name} needs the same")
        rows.append(int(held[0]))
    return rows


def reduce_through_shared(op, program, S, D, tile: Tile, why: str) -> tuple[list, list]:
    """Statements and extra buffers of ``op`` (a reduce of the 2-D fragment ``S`` into the 1-D ``D``) through a
    shared copy of the source tile; ``why`` says why the butterfly could not lower it (kept in the error when
    this fails too).

    >>> from layoutkit.infer import infer_layouts, programs
    >>> p = programs.tile_reduce(M=16, N=24, bM=8, bN=12, threads=32)
    >>> tile = Tile((ir.BY * 8, ir.BX * 12), (8, 12), (16, 24), fragment_axes(p))
    >>> body, extra = lower_ops(p.ops, p, dict(infer_layouts(p).layout_map), tile)
    >>> [b.name for b in extra], sum(isinstance(s, ir.Barrier) for s in body)
    (['r_stage1', 'r_tmp1'], 2)
    """
    a = op.args
    kind, dim, clear = a["kind"], int(a["dim"]), bool(a["clear"])
    fn = ir.REDUCE_FNS[kind]
    if np.any(_slots(S, program.threads) < 0):
        raise UnsupportedError(f"{why}; and the source fragment {S.describe()} leaves registers unused")
    rows = _output_rows(D, program.threads, op.name, why)
    src, dst = a["src"], a["dst"]
    shape = tuple(S.input_shape)
    cols, n = shape[1], shape[dim]
    dt = program.buffers[dst].dtype
    stage, tmp = f"{dst}_stage{op.uid}", f"{dst}_tmp{op.uid}"
    acc = dst if clear else f"{dst}_part{op.uid}"
    bufs = [ir.Buffer(stage, program.buffers[src].dtype, math.prod(shape), SHARED), ir.Buffer(tmp, dt, 1, REG)]
    if not clear:
        bufs.append(ir.Buffer(acc, dt, D.local_size, REG))
    body: list = [ir.Barrier()]  # a previous iteration's readers are done with the staging tile
    for k in range(S.local_size):
        i, j = _inverse_at(S, k)[:2]
        body.append(ir.Store(stage, i * cols + j, src, Const(k), 1))
    body += [ir.Barrier(), ir.Fill(acc, _identity(kind, dt))]
    axis = tile.axes[src][dim]
    x = Var(f"{dst}_x{op.uid}", n)
    for r, row in enumerate(rows):
        addr = row * cols + x if dim == 1 else x * cols + row
        guard = ((tile.origin[axis] + x, tile.extent[axis]),) if tile.tail(axis) else ()
        body.append(ir.For(x, n, (ir.Load(tmp, Const(0), stage, addr, 1),
                                  ir.Compute(acc, r, fn, ((acc, r), (tmp, 0)), guard))))
    if not clear:
        body += [ir.Compute(dst, r, fn, ((dst, r), (acc, r))) for r in range(D.local_size)]
    return body, bufs


def store_sparse_fragment(frag, reg: str, gname: str, gshape, axes, tile: Tile) -> ir.For:
    """Store a replicated fragment whose threads leave registers unused (a shared-memory reduce's output):
    register ``r`` holds one element on every thread holding it, and the thread holding replica 0 of that
    element stores it."""
    threads = int(frag.thread_range[1])
    coords = np.unravel_index(np.arange(frag.size), frag.input_shape)
    elements = _output_rows(frag, threads, f"the store of {reg}", f"lowering: store {reg} -> {gname}")
    owner = np.asarray(frag.thread_table()).reshape(frag.replicate_size, -1)[0]
    strides = [math.prod(gshape[d + 1:]) for d in range(len(gshape))]
    stores = []
    for r, c in enumerate(elements):
        g = [tile.origin[a] + int(coords[d][c]) for d, a in enumerate(axes)]
        addr = sum((x * s for x, s in zip(g[1:], strides[1:])), g[0] * strides[0])
        mine = ((ir.TID + (threads - int(owner[c]))) % threads, 1)  # only the owner of replica 0
        stores.append(ir.Store(gname, addr, reg, Const(r), 1, (mine,) + tuple((x, n) for x, n in zip(g, gshape))))
    return ir.For(Var("p", 1), 1, tuple(stores), unroll=True)


