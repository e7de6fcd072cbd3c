"""The shared-memory reduce: the lowering of a ``reduce`` whose threads sharing an output element form no
xor group (ragged rows: an ``8 x 12`` tile on 32 threads puts row 0 on threads 0-11 and row 1 on 12-23),
which shuffle butterflies cannot fold.

Every thread stores its source registers into a row-major copy of the source tile in shared memory;
after a barrier every thread folds, for each output register, the row that register holds -- in column
order, the same on every thread, so all replicas of an output hold the same value.  The output's
register ``r`` must hold one row on every thread that holds it (the row is then a constant of the
kernel); the source fragment must use every register of every thread.

>>> from layoutkit.infer import infer_layouts, programs
>>> from layoutkit.backends.nv.lower_frag import Tile, fragment_axes, lower_ops
>>> p = programs.tile_reduce(M=16, N=24, bM=8, bN=12, threads=32)
>>> tile = Tile((ir.BY * 8, ir.BX * 12), (8, 12), (16, 24), fragment_axes(p))
>>> body, extra = lower_ops(p.ops, p, dict(infer_layouts(p).layout_map), tile)
>>> [b.name for b in extra], sum(isinstance(s, ir.Barrier) for s in body)
(['r_stage1', 'r_tmp1'], 2)
"""

from __future__ import annotations

import math

import numpy as np

from ...algebra.nodes import Const, Var
from ...errors import UnsupportedError
from ...scopes import SHARED
from . import ir
from .ir import REG
from .lower_frag import Tile, _identity, _inverse_at, _slots


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
    this fails too)."""
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


__all__ = ["reduce_through_shared", "store_sparse_fragment"]
