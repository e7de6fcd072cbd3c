"""A numpy executor for :mod:`.ir` kernels: every thread of every block at once.

Each statement is evaluated for all ``blocks x threads`` threads as numpy arrays (expressions are compiled
with :func:`layoutkit.algebra.compile_numpy`).  Loops run in Python, except a loop of one ``Store`` / ``Copy`` /
``Mma`` (the unrolled epilogue stores, tile copies and mma tiles): those run every iteration of every thread
as one numpy step when no two iterations write one element, which is what sequential order would give.
``ldmatrix`` and ``mma.sync`` follow
:func:`layoutkit.targets.nv.mma.ldmatrix_layout` and the operand atoms of :func:`~layoutkit.targets.nv.mma.mma_atom`
(fp16 / bf16 products accumulate in fp32, int8 in int32; tf32 operands keep the top 19 bits of each fp32, as
the tensor core reads them).  ``bfloat16`` buffers hold their bit patterns as ``uint16`` (numpy has no bf16;
see :func:`to_bf16` / :func:`from_bf16`).  ``__shfl_xor_sync`` reads every lane's register before any lane
writes, exactly as the warp does.  ``cp.async`` copies read global memory when issued and
write shared memory only when a ``cp.async.wait_group`` retires their group, so a pipeline that reads a
stage before waiting for it computes wrong numbers here too.  Barriers are modelled (:mod:`.races`): a
thread reading a shared element another thread wrote since the last ``__syncthreads()`` raises
:class:`~layoutkit.errors.RaceError`, so a kernel missing a barrier fails here as it would on the GPU.

>>> import numpy as np
>>> from layoutkit.algebra.nodes import Const
>>> from layoutkit.backends.nv import ir
>>> k = ir.Kernel("k", 32, (1, 1), (ir.Buffer("r", "float32", 1, "reg"), ir.Buffer("y", "float32", 32, "global")),
...               (ir.Fill("r", 2.0), ir.Store("y", ir.TID, "r", Const(0), 1)))
>>> run(k, {"y": np.zeros(32, np.float32)})["y"][:3].tolist()
[2.0, 2.0, 2.0]
"""

from __future__ import annotations

import functools

import numpy as np

from ...algebra import compile_numpy, free_vars
from ...algebra.nodes import Expr
from ...dtypes import element_bits, from_bf16, storage_dtype, to_bf16  # noqa: F401  (re-exported)
from ...errors import CodegenInputError, CoordinateError, DtypeError, UnsupportedError
from ...numerics import mad
from ...scopes import GLOBAL, SHARED
from ...targets.nv.mma import mma_atom
from ..dispatch import OpTable
from . import ir
from .races import SharedWriters

NV_DTYPES = ("float16", "float32", "int8", "int32", "uint8", "float64", "bfloat16")
"""Buffer dtypes this executor models (bfloat16 as ``uint16`` bit patterns: :func:`~layoutkit.dtypes.to_bf16`)."""


def _wide(x: np.ndarray, dtype: str) -> np.ndarray:
    """Values of a ``dtype`` buffer in the compute type (fp32 for floats, int64 for integers)."""
    if dtype == "bfloat16":
        return from_bf16(x)
    return x.astype(np.float32 if x.dtype.kind == "f" else np.int64)


def _narrow(x: np.ndarray, dtype: str) -> np.ndarray:
    """Compute-type values cast to a ``dtype`` buffer's numpy type (integers wrap)."""
    if dtype == "bfloat16":
        return to_bf16(x)
    return x.astype(np_dtype(dtype))


def _cast(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    return x if src == dst else _narrow(_wide(x, src), dst)


def np_dtype(dtype: str):
    """The numpy storage type of a buffer dtype (``bfloat16`` as ``uint16`` bit patterns).

    >>> np_dtype("bfloat16").__name__
    'uint16'
    """
    return storage_dtype(dtype, NV_DTYPES)


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
        self.rows = t  # the thread (row of every register buffer) each evaluated lane belongs to
        self.buffers = {b.name: b for b in kernel.buffers}
        self.env = {"tid": t % self.T, "bx": blk % gx, "by": blk // gx}
        self.mem = {}
        self.group: list = []  # cp.async copies issued since the last commit
        self.pending: list = []  # committed groups, oldest first; they land in shared memory at a wait
        self.writers = SharedWriters({b.name: b.size for b in kernel.scoped(SHARED)}, self.blocks)
        for b in kernel.buffers:
            if b.scope == GLOBAL:
                self.mem[b.name] = _parameter(kernel, b, arrays)
            elif b.scope == SHARED:
                self.mem[b.name] = np.zeros((self.blocks, b.size), np_dtype(b.dtype))
            else:
                self.mem[b.name] = np.zeros((n, b.size), np_dtype(b.dtype))


def _parameter(kernel: ir.Kernel, b: ir.Buffer, arrays: dict) -> np.ndarray:
    """A flat copy of the array of global parameter ``b``, checked: present, ``b.size`` elements (any shape),
    exactly the storage dtype (a cast here would round or reinterpret silently)."""
    if b.name not in arrays:
        raise CodegenInputError(f"executor: kernel {kernel.name} has no array for parameter {b.name} "
                                f"({b.size} x {b.dtype}); given {sorted(arrays)}", b.name)
    a = arrays[b.name]
    if not isinstance(a, np.ndarray):
        raise CodegenInputError(f"executor: parameter {b.name} is a {type(a).__name__}; expected a numpy array of "
                                f"{b.size} {b.dtype} elements", b.name)
    if a.size != b.size:
        raise CodegenInputError(f"executor: parameter {b.name} has {a.size} elements (shape {a.shape}); kernel "
                                f"{kernel.name} expects {b.size}", b.name)
    if a.dtype != np.dtype(np_dtype(b.dtype)):
        raise DtypeError(f"executor: parameter {b.name} has dtype {a.dtype}; expected {np.dtype(np_dtype(b.dtype))} "
                         f"(the storage type of {b.dtype})")
    return np.ascontiguousarray(a).reshape(-1).copy()


def run(kernel: ir.Kernel, arrays: dict) -> dict:
    """Run ``kernel`` on copies of ``arrays`` (name -> array per global parameter, any shape with the
    parameter's element count, exactly its storage dtype, see :func:`np_dtype`); returns the globals, flat.
    A missing, mis-sized or mistyped array raises :class:`~.checks.CodegenInputError` /
    :class:`~layoutkit.errors.DtypeError` naming the parameter.

    >>> from layoutkit.backends.nv import ir
    >>> k = ir.Kernel("k", 32, (1, 1), (ir.Buffer("y", "float32", 32, "global"),), (ir.Fill("y", 1.0),))
    >>> run(k, {"y": np.zeros(32, np.float64)})
    Traceback (most recent call last):
    ...
    layoutkit.errors.DtypeError: executor: parameter y has dtype float64; expected float32 (the storage type of float32)
    """
    if not isinstance(arrays, dict):
        raise CodegenInputError(f"executor: expected a dict of parameter name -> array; found {type(arrays).__name__}")
    unknown = sorted(set(arrays) - {b.name for b in kernel.scoped(GLOBAL)})
    if unknown:
        raise CodegenInputError(f"executor: arrays {unknown} are not parameters of kernel {kernel.name}; expected "
                                f"{[b.name for b in kernel.scoped('global')]}", unknown[0])
    s = _State(kernel, arrays)
    _block(s, kernel.body)
    return {b.name: s.mem[b.name] for b in kernel.scoped(GLOBAL)}


def _block(s: _State, body) -> None:
    for st in body:
        _stmt(s, st)


STATEMENTS = OpTable("NVIDIA IR statements")
"""IR statement class name -> its handler ``fn(state, statement)``."""


def _stmt(s: _State, st) -> None:
    fn = STATEMENTS.lookup(type(st).__name__)
    if fn is None:
        raise UnsupportedError(f"executor: statement {type(st).__name__} is not executed")
    fn(s, st)


@STATEMENTS.register("For")
def _for(s: _State, st: ir.For) -> None:
    if len(st.body) == 1 and type(st.body[0]) in _BATCHED and _batched(s, st):
        return
    for v in range(st.extent):
        s.env[st.var.name] = np.asarray(v)
        _block(s, st.body)
    s.env.pop(st.var.name, None)


@STATEMENTS.register("CommitGroup")
def _commit_group(s: _State, st: ir.CommitGroup) -> None:
    s.pending.append(s.group)
    s.group = []


@STATEMENTS.register("WaitGroup")
def _wait_group(s: _State, st: ir.WaitGroup) -> None:
    while len(s.pending) > st.n:
        for dst, index, vals, threads in s.pending.pop(0):
            s.mem[dst][index] = vals
            s.writers.wrote(dst, index[0], index[1], threads)


@STATEMENTS.register("Barrier")
def _barrier(s: _State, st: ir.Barrier) -> None:
    s.writers.barrier()  # the statements already ran in order; what the barrier adds is visibility


@STATEMENTS.register("Fill")
def _fill(s: _State, st: ir.Fill) -> None:
    dt = s.k.buffer(st.buffer).dtype
    wide = np.float32 if dt in ("bfloat16", "float16", "float32", "float64") else np.int64
    s.mem[st.buffer][...] = _narrow(np.asarray([st.value], wide), dt)


def _lanes(v: int) -> np.ndarray:
    return np.arange(v, dtype=np.int64)


def _repeats(flat: np.ndarray) -> bool:
    """Whether some (non-negative) flat index occurs twice; a negative one counts as a repeat (the caller
    then runs the loop statement by statement, as written)."""
    flat = flat.ravel()
    return flat.size > 0 and (int(flat.min()) < 0 or int(np.bincount(flat).max()) > 1)


def _copy(s: _State, st: ir.Copy, env: dict | None = None, rows: np.ndarray | None = None) -> bool:
    """``st`` on every thread, or on the (iteration, thread) ``rows`` of a batched loop (see :func:`_batched`;
    then nothing happens and the result is False when two rows would write one element)."""
    batched = env is not None
    env, rows = (env, rows) if batched else (s.env, s.rows)
    n = rows.size
    ok = _ok(st.guard, env, n)
    src = s.mem[st.src]
    dst = s.mem[st.dst]
    sa = np.broadcast_to(_ev(st.src_addr, env), (n,))[:, None] + _lanes(st.vec)
    da = np.broadcast_to(_ev(st.dst_addr, env), (n,))[:, None] + _lanes(st.vec)
    live = _ok(st.mask, env, n)
    blk = np.broadcast_to(s.block[rows[live], None], da[live].shape)
    if batched and (st.src == st.dst or _repeats(blk * dst.shape[-1] + da[live])):
        return False
    vals = np.zeros((n, st.vec), dst.dtype)
    if np.any(ok & (sa[:, 0] % st.vec != 0)) or np.any(da[:, 0] % st.vec != 0):
        raise CoordinateError(f"copy {st.src} -> {st.dst}: {st.vec}-element vectors must be aligned")
    vals[ok] = src[sa[ok]]
    index = (blk, da[live])
    threads = np.broadcast_to((np.asarray(rows) % s.T)[live, None], blk.shape)
    if st.async_:  # lands at the cp.async.wait_group that retires its group
        s.group.append((st.dst, index, vals[live], threads))
    else:
        dst[index] = vals[live]
        s.writers.wrote(st.dst, index[0], index[1], threads)
    return True


def _store(s: _State, st: ir.Store, env: dict | None = None, rows: np.ndarray | None = None) -> bool:
    """``st`` on every thread, or on the (iteration, thread) ``rows`` of a batched loop (as :func:`_copy`)."""
    batched = env is not None
    env, rows = (env, rows) if batched else (s.env, s.rows)
    n = rows.size
    ok = _ok(st.guard, env, n)
    dst = s.mem[st.dst]
    reg = s.mem[st.src]
    da = np.broadcast_to(_ev(st.dst_addr, env), (n,))[:, None] + _lanes(st.vec)
    if s.buffers[st.dst].scope == SHARED:
        where = (np.broadcast_to(s.block[rows, None], da.shape)[ok], da[ok])
    else:
        where = (da[ok],)
    if batched and (st.src == st.dst or _repeats(where[0] * dst.shape[-1] + where[-1] if len(where) == 2
                                                 else where[0])):
        return False
    ro = np.broadcast_to(_ev(st.src_off, env), (n,))[:, None] + _lanes(st.vec)
    vals = _cast(reg[rows[:, None], ro], s.buffers[st.src].dtype, s.buffers[st.dst].dtype)
    dst[where] = vals[ok]
    if len(where) == 2:
        thread = np.broadcast_to((np.asarray(rows) % s.T)[:, None], da.shape)[ok]
        s.writers.wrote(st.dst, where[0], where[1], thread)
    return True


def _batched(s: _State, st: ir.For) -> bool:
    """Run the unrolled loop ``st`` (one statement of :data:`_BATCHED`) for all iterations and threads in one
    numpy step: its rows are (iteration, thread) pairs, iteration-major, with the loop variable bound per
    row.  Each batched statement reads only memory the loop does not write, so this equals running the
    iterations in order unless two rows write one element (then the last iteration must win): the
    statement checks that first and returns False, and the loop runs iteration by iteration instead."""
    rows = np.tile(s.rows, st.extent)
    env = {k: (v[rows] if np.ndim(v) else v) for k, v in s.env.items()}
    env[st.var.name] = np.repeat(np.arange(st.extent, dtype=np.int64), s.n)
    return _BATCHED[type(st.body[0])](s, st.body[0], env, rows)


def _load(s: _State, st: ir.Load) -> None:
    n = s.n
    ok = _ok(st.guard, s.env, n)
    src, reg = s.mem[st.src], s.mem[st.dst]
    sa = np.broadcast_to(_ev(st.src_addr, s.env), (n,))[:, None] + _lanes(st.vec)
    ro = np.broadcast_to(_ev(st.dst_off, s.env), (n,))[:, None] + _lanes(st.vec)
    vals = np.zeros((n, st.vec), reg.dtype)
    if s.k.buffer(st.src).scope == SHARED:
        blk = np.broadcast_to(s.block[:, None], sa.shape)[ok]
        s.writers.read(st.src, blk, sa[ok], np.broadcast_to((s.rows % s.T)[:, None], sa.shape)[ok], "load")
        got = src[blk, sa[ok]]
    else:
        got = src[sa[ok]]
    vals[ok] = _cast(got, s.k.buffer(st.src).dtype, s.k.buffer(st.dst).dtype)
    reg[np.arange(n)[:, None], ro] = vals


def apply_fn(fn: str, args: list) -> np.ndarray:
    """``fn`` (:data:`~layoutkit.backends.nv.ir.COMPUTE_FNS`) on compute-type operands, as the CUDA printer writes it.

    >>> apply_fn("max", [np.float32([1, np.nan]), np.float32([2, 3])]).tolist()
    [2.0, 3.0]
    """
    if ir.COMPUTE_FNS.get(fn) != len(args):
        raise UnsupportedError(f"executor: compute {fn!r} with {len(args)} operands; expected one of "
                               f"{ir.COMPUTE_FNS} (name -> operand count)")
    a = args[0]
    if fn == "copy":
        return a
    if fn == "relu":
        return np.fmax(a, 0) if a.dtype.kind == "f" else np.maximum(a, 0)
    if fn == "neg":
        return -a
    if fn == "abs":
        return np.abs(a)
    b = args[1]
    if fn == "div" and a.dtype.kind != "f":  # C integer division truncates toward zero
        return np.where(b == 0, 0, np.trunc(a / np.where(b == 0, 1, b))).astype(a.dtype)
    ops = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
           "max": np.fmax if a.dtype.kind == "f" else np.maximum, "min": np.fmin if a.dtype.kind == "f" else np.minimum}
    with np.errstate(all="ignore"):
        return ops[fn](a, b)


def _compute(s: _State, st: ir.Compute) -> None:
    ok = _ok(st.guard, s.env, s.n)
    args = [_wide(s.mem[b][:, int(o)], s.k.buffer(b).dtype) for b, o in st.srcs]
    out = _narrow(apply_fn(st.fn, args), s.k.buffer(st.dst).dtype)
    col = s.mem[st.dst][:, int(st.dst_off)]
    col[ok] = out[ok]


def _shfl_xor(s: _State, st: ir.ShflXor) -> None:
    if not 0 < st.mask < 32:
        raise CoordinateError(f"shfl.xor on {st.buffer}: lane mask {st.mask} is outside [1, 32)")
    dt = s.k.buffer(st.buffer).dtype
    col = s.mem[st.buffer][:, int(st.off)]
    partner = np.arange(s.n) ^ st.mask  # the same warp: blocks hold whole warps
    mine, theirs = _wide(col, dt), _wide(col[partner], dt)
    s.mem[st.buffer][:, int(st.off)] = _narrow(apply_fn(st.fn, [mine, theirs]), dt)


def _move(s: _State, st: ir.Move) -> None:
    n = s.n
    dst, src = s.mem[st.dst], s.mem[st.src]
    rows = np.arange(n)[:, None]
    so = np.broadcast_to(_ev(st.src_off, s.env), (n,))[:, None] + _lanes(st.count)
    do = np.broadcast_to(_ev(st.dst_off, s.env), (n,))[:, None] + _lanes(st.count)
    if st.fn not in ir.MOVE_FNS:
        raise UnsupportedError(f"executor: move function {st.fn!r}; expected one of {ir.MOVE_FNS}")
    sdt, ddt = s.k.buffer(st.src).dtype, s.k.buffer(st.dst).dtype
    dst[rows, do] = _narrow(apply_fn(st.fn, [_wide(src[rows, so], sdt)]), ddt)


def _reg_bytes(s: _State, buffer: str, off: int) -> np.ndarray:
    """The byte view ``[threads, 4]`` of the 32-bit word at element offset ``off`` of register buffer ``buffer``."""
    m = s.mem[buffer]
    at = int(off) * m.itemsize
    if at % 4 or at + 4 > m.shape[1] * m.itemsize:
        raise CoordinateError(f"prmt: the 32-bit word at element {off} of {buffer} ({m.shape[1]} x {m.dtype}) is "
                              "not an aligned word of the buffer")
    return m.view(np.uint8)[:, at:at + 4]


def prmt_bytes(a: np.ndarray, b: np.ndarray, selector) -> np.ndarray:
    """``prmt.b32`` (default mode) on byte arrays ``[..., 4]``: result byte ``i`` is byte ``s & 7`` of ``{b, a}``
    (``s``: nibble ``i`` of the selector, an int or an array ``[...]``), or that byte's sign replicated when
    ``s & 8``.

    >>> prmt_bytes(np.uint8([[1, 2, 3, 4]]), np.uint8([[5, 6, 7, 0x80]]), 0xF740).tolist()
    [[1, 5, 128, 255]]
    """
    both = np.concatenate([a, b], axis=-1)
    sel = np.broadcast_to(np.asarray(selector, np.int64), a.shape[:-1])
    out = np.empty(a.shape, np.uint8)
    for i in range(4):
        s = (sel >> (4 * i)) & 0xF
        byte = np.take_along_axis(both, (s & 7)[..., None], axis=-1)[..., 0]
        out[..., i] = np.where(s & 8, np.where(byte & 0x80, 0xFF, 0), byte).astype(np.uint8)
    return out


def _prmt(s: _State, st: ir.Prmt) -> None:
    sel = _ev(st.selector, s.env) if isinstance(st.selector, Expr) else st.selector
    out = prmt_bytes(_reg_bytes(s, *st.a).copy(), _reg_bytes(s, *st.b).copy(), sel)
    _reg_bytes(s, st.dst, st.dst_off)[...] = out


def _ldmatrix(s: _State, st: ir.Ldmatrix) -> None:
    n, smem, reg = s.n, s.mem[st.src], s.mem[st.dst]
    bits = element_bits(_bits_name(s.k.buffer(st.src).dtype))
    E, per = 128 // bits, 32 // bits
    W = n // 32
    addr = np.broadcast_to(_ev(st.addr, s.env), (n,)).reshape(W, 32)
    blk = s.block.reshape(W, 32)[:, :1]
    # rows[w, m, r, c]: row r of matrix m, read from the address lane 8m + r gives
    lane_src = addr[:, : 8 * st.num]
    if np.any(lane_src % E):
        raise CoordinateError(f"ldmatrix from {st.src}: row addresses must be 16-byte aligned; found element "
                              f"offsets {np.unique(lane_src[lane_src % E != 0])[:8].tolist()}")
    reader = (np.arange(W)[:, None] * 32 + np.arange(8 * st.num)) % s.T  # lane 8m + r reads row r of matrix m
    s.writers.read(st.src, blk[:, :, None], lane_src[:, :, None] + _lanes(E), reader[:, :, None], "ldmatrix")
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


def _bits_name(dtype: str) -> str:
    return "float16" if dtype == "bfloat16" else dtype


@functools.lru_cache(maxsize=8)
def _atom_maps(shape: str, dtype: str):
    atom = mma_atom(_bits_name(dtype))
    if shape == "m16n8k8" and atom.bits == 16:  # Turing m16n8k8: the k 0..7 half of the m16n8k16 atom
        si, ki = np.meshgrid(np.arange(16), np.arange(8), indexing="ij")
        kb, nb = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
        i, j = np.meshgrid(np.arange(16), np.arange(8), indexing="ij")
        return ((atom.lane(si, ki), atom.local("A", si, ki)), (atom.lane(nb, kb), atom.local("B", nb, kb)),
                (4 * (i % 8) + (j % 8) // 2, 2 * (i // 8) + j % 2))
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


def _mma(s: _State, st: ir.Mma, env: dict | None = None, rows: np.ndarray | None = None) -> bool:
    """``st`` for every warp, or for the (iteration, warp) pairs of a batched loop (as :func:`_copy`: rows come
    in whole warps, so each 32 rows are one warp of one iteration)."""
    batched = env is not None
    env, rows = (env, rows) if batched else (s.env, s.rows)
    n = rows.size
    W = n // 32
    adt = s.k.buffer(st.a[0]).dtype
    (al, ax), (bl, bx), (cl, cx) = _atom_maps(st.shape, adt)
    base = rows.reshape(W, 32)[:, :1, None]  # each warp's first thread

    def off(o):
        return np.broadcast_to(_ev(o, env), (n,)).reshape(W, 32)[:, 0][:, None, None]

    A, B, C = s.mem[st.a[0]], s.mem[st.b[0]], s.mem[st.c[0]]
    ci = (base + cl, off(st.c[1]) + cx)
    if batched and (st.c[0] in (st.a[0], st.b[0]) or _repeats(ci[0] * C.shape[1] + ci[1])):
        return False
    cdt = s.k.buffer(st.c[0]).dtype
    a = _wide(A[base + al, off(st.a[1]) + ax], adt)
    b = _wide(B[base + bl, off(st.b[1]) + bx], adt)
    if adt == "float32":  # tf32: the tensor core ignores the low 13 mantissa bits
        a, b = _tf32(a), _tf32(b)
    C[ci] = _narrow(mad(a, b, _wide(C[ci], cdt)), cdt)  # a fixed k order: the same bits on every machine
    return True


_BATCHED = {ir.Store: _store, ir.Copy: _copy, ir.Mma: _mma}
"""Statements an unrolled loop of one runs as one numpy step (:func:`_batched`): each reads memory the loop
does not write (registers -> global / shared, global -> shared, mma operands -> a distinct accumulator)."""


def _tf32(x: np.ndarray) -> np.ndarray:
    return (np.ascontiguousarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


for _name, _fn in (("Copy", _copy), ("Store", _store), ("Load", _load), ("Move", _move), ("Ldmatrix", _ldmatrix),
                   ("Mma", _mma), ("Compute", _compute), ("ShflXor", _shfl_xor), ("Prmt", _prmt)):
    STATEMENTS.register(_name)(_fn)
