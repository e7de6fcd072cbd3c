"""A numpy executor for :mod:`.ir` kernels: every thread of every block at once.

Each statement is evaluated for all ``blocks x threads`` threads as numpy arrays (expressions are compiled
with :func:`layoutkit.algebra.compile_numpy`); loops run in Python.  ``ldmatrix`` and ``mma.sync`` follow
:func:`layoutkit.targets.nv.mma.ldmatrix_layout` and the operand atoms of :func:`~layoutkit.targets.nv.mma.mma_atom`
(fp16 products accumulate in fp32, int8 in int32).  ``cp.async`` copies read global memory when issued and
write shared memory only when a ``cp.async.wait_group`` retires their group, so a pipeline that reads a
stage before waiting for it computes wrong numbers here too.

>>> import numpy as np
>>> from layoutkit.algebra.nodes import Const
>>> from layoutkit.codegen import ir
>>> k = ir.Kernel("k", 32, (1, 1), (ir.Buffer("r", "float32", 1, "reg"), ir.Buffer("y", "float32", 32, "global")),
...               (ir.Fill("r", 2.0), ir.Store("y", ir.TID, "r", Const(0), 1)))
>>> run(k, {"y": np.zeros(32, np.float32)})["y"][:3].tolist()
[2.0, 2.0, 2.0]
"""

from __future__ import annotations

import functools

import numpy as np

from ..algebra import compile_numpy, free_vars
from ..algebra.nodes import Expr
from ..errors import CoordinateError, UnsupportedError
from ..targets.nv.dtype import element_bits
from ..targets.nv.mma import mma_atom
from . import ir

_NP = {"float16": np.float16, "float32": np.float32, "int8": np.int8, "int32": np.int32, "uint8": np.uint8,
       "float64": np.float64}


def np_dtype(dtype: str):
    try:
        return _NP[dtype]
    except KeyError:
        raise UnsupportedError(f"executor: no numpy type for {dtype}") from None


@functools.lru_cache(maxsize=4096)
def _compiled(e: Expr):
    vs = tuple(sorted(free_vars(e), key=lambda v: v.name))
    return compile_numpy((e,), vs), vs


def _ev(e, env) -> np.ndarray:
    if not isinstance(e, Expr):
        return np.asarray(int(e))
    fn, vs = _compiled(e)
    return np.asarray(fn(*(env[v.name] for v in vs))[0])


def _ok(guard, env, n):
    ok = np.ones(n, bool)
    for e, bound in guard:
        ok &= np.broadcast_to(_ev(e, env) < bound, (n,))
    return ok


class _State:
    def __init__(self, kernel: ir.Kernel, arrays: dict):
        gx, gy = kernel.grid
        self.k = kernel
        self.blocks = gx * gy
        self.T = kernel.threads
        n = self.blocks * self.T
        self.n = n
        t = np.arange(n, dtype=np.int64)
        blk = t // self.T
        self.block = blk
        self.env = {"tid": t % self.T, "bx": blk % gx, "by": blk // gx}
        self.mem = {}
        self.group: list = []  # cp.async copies issued since the last commit
        self.pending: list = []  # committed groups, oldest first; they land in shared memory at a wait
        for b in kernel.buffers:
            if b.scope == "global":
                if b.name not in arrays:
                    raise KeyError(f"executor: no array for parameter {b.name}")
                a = np.ascontiguousarray(arrays[b.name], dtype=np_dtype(b.dtype)).reshape(-1).copy()
                if a.size != b.size:
                    raise ValueError(f"executor: {b.name} has {a.size} elements; the kernel expects {b.size}")
                self.mem[b.name] = a
            elif b.scope == "shared":
                self.mem[b.name] = np.zeros((self.blocks, b.size), np_dtype(b.dtype))
            else:
                self.mem[b.name] = np.zeros((n, b.size), np_dtype(b.dtype))


def run(kernel: ir.Kernel, arrays: dict) -> dict:
    """Run ``kernel`` on copies of ``arrays`` (name -> array per global parameter); returns the globals."""
    s = _State(kernel, arrays)
    _block(s, kernel.body)
    return {b.name: s.mem[b.name] for b in kernel.scoped("global")}


def _block(s: _State, body) -> None:
    for st in body:
        _stmt(s, st)


def _stmt(s: _State, st) -> None:
    if isinstance(st, ir.For):
        for v in range(st.extent):
            s.env[st.var.name] = np.asarray(v)
            _block(s, st.body)
        s.env.pop(st.var.name, None)
    elif isinstance(st, ir.CommitGroup):
        s.pending.append(s.group)
        s.group = []
    elif isinstance(st, ir.WaitGroup):
        while len(s.pending) > st.n:
            for dst, index, vals in s.pending.pop(0):
                s.mem[dst][index] = vals
    elif isinstance(st, ir.Barrier):
        return  # every thread runs each statement before the next: a barrier is implicit
    elif isinstance(st, ir.Fill):
        s.mem[st.buffer][...] = st.value
    elif isinstance(st, ir.Copy):
        _copy(s, st)
    elif isinstance(st, ir.Store):
        _store(s, st)
    elif isinstance(st, ir.Load):
        _load(s, st)
    elif isinstance(st, ir.Move):
        _move(s, st)
    elif isinstance(st, ir.Ldmatrix):
        _ldmatrix(s, st)
    elif isinstance(st, ir.Mma):
        _mma(s, st)
    else:
        raise UnsupportedError(f"executor: statement {type(st).__name__} is not executed")


def _lanes(v: int) -> np.ndarray:
    return np.arange(v, dtype=np.int64)


def _copy(s: _State, st: ir.Copy) -> None:
    n = s.n
    ok = _ok(st.guard, s.env, n)
    src = s.mem[st.src]
    dst = s.mem[st.dst]
    sa = np.broadcast_to(_ev(st.src_addr, s.env), (n,))[:, None] + _lanes(st.vec)
    da = np.broadcast_to(_ev(st.dst_addr, s.env), (n,))[:, None] + _lanes(st.vec)
    vals = np.zeros((n, st.vec), dst.dtype)
    if np.any(ok & (sa[:, 0] % st.vec != 0)) or np.any(da[:, 0] % st.vec != 0):
        raise CoordinateError(f"copy {st.src} -> {st.dst}: {st.vec}-element vectors must be aligned")
    vals[ok] = src[sa[ok]]
    live = _ok(st.mask, s.env, n)
    vals, da = vals[live], da[live]
    index = (np.broadcast_to(s.block[live, None], da.shape), da)
    if st.async_:  # lands at the cp.async.wait_group that retires its group
        s.group.append((st.dst, index, vals))
    else:
        dst[index] = vals


def _store(s: _State, st: ir.Store) -> None:
    n = s.n
    ok = _ok(st.guard, s.env, n)
    dst = s.mem[st.dst]
    reg = s.mem[st.src]
    ro = np.broadcast_to(_ev(st.src_off, s.env), (n,))[:, None] + _lanes(st.vec)
    da = np.broadcast_to(_ev(st.dst_addr, s.env), (n,))[:, None] + _lanes(st.vec)
    vals = reg[np.arange(n)[:, None], ro]
    dst[da[ok]] = vals[ok].astype(dst.dtype)


def _load(s: _State, st: ir.Load) -> None:
    n = s.n
    ok = _ok(st.guard, s.env, n)
    src, reg = s.mem[st.src], s.mem[st.dst]
    sa = np.broadcast_to(_ev(st.src_addr, s.env), (n,))[:, None] + _lanes(st.vec)
    ro = np.broadcast_to(_ev(st.dst_off, s.env), (n,))[:, None] + _lanes(st.vec)
    vals = np.zeros((n, st.vec), reg.dtype)
    vals[ok] = src[sa[ok]].astype(reg.dtype)
    reg[np.arange(n)[:, None], ro] = vals


def _move(s: _State, st: ir.Move) -> None:
    n = s.n
    dst, src = s.mem[st.dst], s.mem[st.src]
    rows = np.arange(n)[:, None]
    so = np.broadcast_to(_ev(st.src_off, s.env), (n,))[:, None] + _lanes(st.count)
    do = np.broadcast_to(_ev(st.dst_off, s.env), (n,))[:, None] + _lanes(st.count)
    vals = src[rows, so]
    if st.fn == "relu":
        vals = np.maximum(vals, 0).astype(vals.dtype)
    elif st.fn != "copy":
        raise UnsupportedError(f"executor: move function {st.fn!r}; expected one of {ir.MOVE_FNS}")
    dst[rows, do] = vals.astype(dst.dtype)


def _ldmatrix(s: _State, st: ir.Ldmatrix) -> None:
    n, smem, reg = s.n, s.mem[st.src], s.mem[st.dst]
    bits = element_bits(s.k.buffer(st.src).dtype)
    E, per = 128 // bits, 32 // bits
    W = n // 32
    addr = np.broadcast_to(_ev(st.addr, s.env), (n,)).reshape(W, 32)
    blk = s.block.reshape(W, 32)[:, :1]
    # rows[w, m, r, c]: row r of matrix m, read from the address lane 8m + r gives
    lane_src = addr[:, : 8 * st.num]
    if np.any(lane_src % E):
        raise CoordinateError(f"ldmatrix from {st.src}: row addresses must be 16-byte aligned; found element "
                              f"offsets {np.unique(lane_src[lane_src % E != 0])[:8].tolist()}")
    rows = smem[blk[:, :, None], lane_src[:, :, None] + _lanes(E)].reshape(W, st.num, 8, E)
    m, r, c = np.meshgrid(np.arange(st.num), np.arange(8), np.arange(E), indexing="ij")
    if st.trans:
        if bits != 16:
            raise UnsupportedError(f"ldmatrix .trans moves 16-bit elements; found {bits}-bit")
        lane, elem = 4 * c + r // 2, m * 2 + r % 2
    else:
        lane, elem = 4 * r + c // per, m * per + c % per
    off = np.broadcast_to(_ev(st.dst_off, s.env), (n,)).reshape(W, 32)[:, 0]
    threads = np.arange(W)[:, None] * 32 + lane.reshape(-1)
    reg[threads, off[:, None] + elem.reshape(-1)] = rows.reshape(W, -1)


@functools.lru_cache(maxsize=8)
def _atom_maps(shape: str, dtype: str):
    atom = mma_atom(dtype)
    if atom.name != shape:
        raise UnsupportedError(f"executor: mma {shape} on {dtype} operands (atom {atom.name})")
    K = atom.k
    si, ki = np.meshgrid(np.arange(16), np.arange(K), indexing="ij")
    a = (atom.lane(si, ki), atom.local("A", si, ki))  # [16, K]
    kb, nb = np.meshgrid(np.arange(K), np.arange(8), indexing="ij")
    b = (atom.lane(nb, kb), atom.local("B", nb, kb))  # [K, 8]
    i, j = np.meshgrid(np.arange(16), np.arange(8), indexing="ij")
    c = (4 * (i % 8) + (j % 8) // 2, 2 * (i // 8) + j % 2)  # [16, 8]
    return a, b, c


def _mma(s: _State, st: ir.Mma) -> None:
    n = s.n
    W = n // 32
    adt = s.k.buffer(st.a[0]).dtype
    (al, ax), (bl, bx), (cl, cx) = _atom_maps(st.shape, adt)
    base = np.arange(W)[:, None, None] * 32

    def off(o):
        return np.broadcast_to(_ev(o, s.env), (n,)).reshape(W, 32)[:, 0][:, None, None]

    A, B, C = s.mem[st.a[0]], s.mem[st.b[0]], s.mem[st.c[0]]
    acc = np.float32 if C.dtype.kind == "f" else np.int64
    a = A[base + al, off(st.a[1]) + ax].astype(acc)
    b = B[base + bl, off(st.b[1]) + bx].astype(acc)
    ci = (base + cl, off(st.c[1]) + cx)
    C[ci] = (a @ b + C[ci].astype(acc)).astype(C.dtype)
