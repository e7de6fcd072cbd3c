"""A numpy executor for :mod:`.ir` kernels, statement by statement.

No Ascend simulator (CANN) is available to run the emitted Ascend C, so this executor stands in for one: it
runs the same statements the printer writes, with the data-movement semantics of
:mod:`layoutkit.targets.ascend.movement` (``DataCopy`` with ``Nd2NzParams`` *is*
:func:`~layoutkit.targets.ascend.nd2nz`; fractal images are read through
:func:`~layoutkit.targets.ascend.from_storage`), the documented semantics of ``InitConstValue`` (32-byte blocks
on L1), ``LoadData2DParams`` (512-byte fractals, ``ifTranspose`` per 16 x 16 fractal) and
``FixpipeParamsV220`` with NZ2ND (accumulating into GM after ``SetAtomicAdd``), and the MAD in fp32
(fp16/bf16 products are exact in fp32) on its operands as Ascend C documents them (:func:`mmad_index`: A zZ
in L0A, B nZ in L0B, C zN in L0C).  A multi-core kernel (:class:`~.ir.TileLoop`) runs its AI cores one after
another on one global memory, each with its own on-chip buffers.

Every buffer is a flat numpy array (a UB buffer once per vector core).  On-chip memory starts uninitialised
(NaN; bfloat16 is held as raw ``uint16`` bits), and an ``Mmad``, ``Fixpipe``, vector op or UB -> GM copy
that reads an uninitialised element raises :class:`~layoutkit.backends.ascend.reference.UninitialisedReadError`
naming the op.  The pipes are checked too: a statement that touches a buffer another pipe used, without a
``SetFlag``/``WaitFlag`` pair (or, across cores, a ``CrossCoreSetFlag``/``CrossCoreWaitFlag`` pair) that
orders the two, raises :class:`PipeRaceError`.

A mixed kernel runs its cube body and its two vector bodies as coroutines: a core runs until a
``CrossCoreWaitFlag`` finds no signal, then the next core runs; when every core waits the kernel is
deadlocked (:class:`PipeRaceError`).  ``DataCopyPad`` follows ``DataCopyExtParams`` (block gaps in bytes on
GM, in 32-byte blocks on UB) and the vector intrinsics compute in fp32.

>>> import numpy as np
>>> from layoutkit.infer import infer_layouts, programs
>>> from layoutkit.backends.ascend.lower import lower
>>> p = programs.ascend_gemm(M=20, N=18, K=24, bm=32, bn=32, bk=32)   # one tile, tails in every dim
>>> out = run(lower(p, infer_layouts(p)), {"A": np.ones((20, 24), np.float16), "B": np.ones((24, 18), np.float16)})
>>> float(out["C"][19, 17]), out["C"].shape
(24.0, (20, 18))
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace

import numpy as np

from ...errors import DtypeError
from ...numerics import mad
from ...targets import ascend
from ..checks import check_names
from ..dispatch import OpTable
from . import ir
from .reference import (
    AscendExecutionError,
    UninitialisedReadError,
    bf16_value,
    storage_dtype,
    to_storage,
    to_values,
)

BLOCK_BYTES = 32
FRACTAL_BYTES = 512
FLAG_LIMIT = 15  # a cross-core flag counter saturates after 15 signals
CUBE_PIPES = ("MTE2", "MTE1", "M", "FIX")
VECTOR_PIPES = ("MTE2", "V", "MTE3")
VECTOR_CORES = ("aiv0", "aiv1")


def ascend_c0(dtype: str) -> int:
    """C0: the elements of one 32-byte block (16 for float16 / bfloat16, 8 for float32).

    >>> ascend_c0("bfloat16"), ascend_c0("float32")
    (16, 8)
    """
    return BLOCK_BYTES // np.dtype(np_dtype(dtype)).itemsize


def mmad_index(m: int, n: int, k: int, c0: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Element offsets ``[m, k]``, ``[k, n]`` and ``[m, n]`` of the operands of ``Mmad(c, a, b, {m, n, k})`` as
    Ascend C documents them: A in L0A is zZ (``16 x C0`` fractals, row-major inside and between fractals, a
    fractal row holding ``ceil(k / C0)`` fractals), B in L0B is nZ (``C0 x 16`` fractals, column-major inside,
    row-major between, ``ceil(n / 16)`` per fractal row) and C in L0C is zN (``16 x 16`` fractals, row-major
    inside, column-major between, ``ceil(m / 16)`` per fractal column).

    >>> ia, ib, ic = mmad_index(32, 16, 32, 16)
    >>> int(ia[0, 16]), int(ia[16, 0]), int(ib[1, 0]), int(ic[17, 1])
    (256, 512, 1, 273)
    """
    f = ascend.ROW_FRACTAL
    kf, nf, mf = -(-k // c0), -(-n // f), -(-m // f)
    r, kk = np.arange(m)[:, None], np.arange(k)[None, :]
    ia = ((r // f) * kf + kk // c0) * f * c0 + (r % f) * c0 + kk % c0
    kk, cc = np.arange(k)[:, None], np.arange(n)[None, :]
    ib = ((kk // c0) * nf + cc // f) * f * c0 + (cc % f) * c0 + kk % c0
    ic = ((cc // f) * mf + r // f) * f * f + (r % f) * f + cc % f
    return ia, ib, ic


class PipeRaceError(AscendExecutionError):
    """Two pipes touch one buffer without a SetFlag/WaitFlag pair ordering them."""


np_dtype = storage_dtype
"""The numpy storage type of an Ascend element type (bfloat16 as raw ``uint16`` bits)."""


def _blank(size: int, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        return np.full(size, 0x7FC0, np.uint16)
    return np.full(size, np.nan, np_dtype(dtype))




class _Machine:
    def __init__(self, kernel: ir.Kernel, inputs: Mapping[str, np.ndarray], gm: dict | None = None):
        self.k = kernel
        self.dtype = {g.name: g.dtype for g in kernel.params} | {b.name: b.dtype for b in kernel.buffers}
        self.mem: dict[str, np.ndarray] = {}
        for g in kernel.params:
            if gm is not None:  # another AI core of the same launch: the same global memory
                self.mem[g.name] = gm[g.name]
            elif g.name in inputs:
                arr = np.asarray(inputs[g.name])
                if arr.shape != g.shape:
                    raise AscendExecutionError(f"execute_ascend: input {g.name} has shape {arr.shape}; expected "
                                               f"{g.shape}", "input", g.name)
                self.mem[g.name] = to_storage(arr, g.dtype).reshape(-1).copy()
            else:
                self.mem[g.name] = to_storage(np.zeros(g.shape, np.float32), g.dtype).reshape(-1)
        for b in kernel.buffers:
            for name in ([f"{b.name}@{c}" for c in VECTOR_CORES] if b.is_ub else [b.name]):
                self.mem[name] = _blank(b.size, b.dtype)
                self.dtype[name] = b.dtype
        # pipe ordering: clock[(q, p)] = the last statement of pipe q that pipe p has waited for; the pipes of
        # a vector core are named "aiv0.V" etc. (the cube's keep their bare names)
        self.clock: dict[tuple[str, str], int] = {}
        self.flags: dict[tuple[str, str, str, int], tuple[str, int, dict]] = {}
        self.last: dict[str, int] = {}
        self.access: dict[str, dict[tuple[str, bool, tuple[int, int]], int]] = {}
        self.atomic = "none"
        self.core = ""  # "" (the cube) or a vector core's name
        self.cross: dict[tuple[str, int], list[tuple[str, int, dict]]] = {}  # (waiting core, flag) -> signals

    def pid(self, pipe: str) -> str:
        """The machine-wide name of a pipe of the running core."""
        return f"{self.core}.{pipe}" if self.core else pipe

    def local(self, stmt):
        """``stmt`` with its UB buffer names made those of the running vector core."""
        if not self.core:
            return stmt
        ub = {b.name for b in self.k.buffers if b.is_ub}
        tag = f"@{self.core}"
        changes = {f: getattr(stmt, f) + tag for f in ("dst", "src") if getattr(stmt, f, None) in ub}
        if isinstance(stmt, ir.VecOp):
            changes["srcs"] = tuple((b + tag if b in ub else b, o) for b, o in stmt.srcs)
        return replace(stmt, **changes) if changes else stmt

    def elems(self, name: str, nbytes: int) -> int:
        return nbytes // np.dtype(np_dtype(self.dtype[name])).itemsize

    def check(self, x: np.ndarray, name: str, stmt) -> None:
        bad = np.isnan(to_values(x, self.dtype[name]))
        if bad.any():
            raise UninitialisedReadError(f"{stmt.label}: reads {int(bad.sum())} uninitialised element(s) of {name}",
                                         stmt.label, name)

    # ---- pipe ordering ----------------------------------------------------------------------------
    def span(self, stmt, b: str) -> tuple[int, int]:
        """The flat element range ``[lo, hi)`` of ``b`` that ``stmt`` touches: exact for the GM side of the
        DataCopyPad / Fixpipe stores (two vector cores store disjoint rows of one tensor), else all of it."""
        q = getattr(stmt, "params", None)
        if isinstance(stmt, (ir.CopyGmToUb, ir.CopyUbToGm)) and b == (stmt.src if isinstance(stmt, ir.CopyGmToUb)
                                                                      else stmt.dst):
            size = np.dtype(np_dtype(self.dtype[b])).itemsize
            gap = q.src_stride if isinstance(stmt, ir.CopyGmToUb) else q.dst_stride
            lo = stmt.src_offset if isinstance(stmt, ir.CopyGmToUb) else stmt.dst_offset
            return lo, lo + (max(q.block_count, 1) * (q.block_len + gap) - gap) // size
        if isinstance(stmt, ir.Fixpipe) and b == stmt.dst:
            return stmt.dst_offset, stmt.dst_offset + (q.m_size - 1) * q.dst_stride + q.n_size
        return 0, self.mem[b].size

    def order(self, stmt, n: int) -> None:
        p = self.pid(stmt.pipe)
        for b in stmt.reads + stmt.writes:
            writing = b in stmt.writes
            lo, hi = self.span(stmt, b)
            for (q, was_write, (l2, h2)), i in self.access.get(b, {}).items():
                if (q != p and (writing or was_write) and i > self.clock.get((q, p), -1) and lo < h2 and l2 < hi):
                    raise PipeRaceError(f"{stmt.label}: pipe {p} touches {b} after pipe {q} (statement {i}) with no "
                                        f"SetFlag/WaitFlag<{q}_{p}> between them", stmt.label, b)
        # only the latest access per (pipe, kind, span) matters: a wait covers all earlier statements of a pipe
        for b in stmt.reads + stmt.writes:
            self.access.setdefault(b, {})[(p, b in stmt.writes, self.span(stmt, b))] = n
        self.last[p] = n

    def signal(self, pipe: str) -> tuple[str, int, dict]:
        """What a flag set on ``pipe`` now carries: its last statement and what ``pipe`` itself has waited
        for (ordering is transitive: MTE2 -> V -> MTE3 orders MTE2 before MTE3)."""
        return pipe, self.last.get(pipe, -1), {q: i for (q, x), i in self.clock.items() if x == pipe}

    def op_SetFlag(self, s: ir.SetFlag, n: int) -> None:
        key = (self.core, s.src, s.dst, s.event_id)
        if key in self.flags:  # the second signal would merge into the first: one wait, two meanings
            raise PipeRaceError(f"SetFlag<{s.event}>({s.event_id}) while an earlier one is still unwaited", s.event)
        self.flags[key] = self.signal(self.pid(s.src))

    def op_WaitFlag(self, s: ir.WaitFlag, n: int) -> None:
        key = (self.core, s.src, s.dst, s.event_id)
        if key not in self.flags:
            raise PipeRaceError(f"WaitFlag<{s.event}>({s.event_id}) with no SetFlag before it (deadlock)", s.event)
        self.wait_for(self.pid(s.dst), self.flags.pop(key))

    def wait_for(self, p: str, signal: tuple[str, int, dict]) -> None:
        """Pipe ``p`` waits for ``signal``: it is ordered after the signalling pipe's statements so far and
        after everything that pipe had waited for."""
        q, index, known = signal
        for r, i in {**known, q: index}.items():
            self.clock[(r, p)] = max(self.clock.get((r, p), -1), i)

    def pipes(self) -> list[str]:
        return [self.pid(p) for p in (VECTOR_PIPES if self.core else CUBE_PIPES)]

    def op_PipeBarrier(self, s: ir.PipeBarrier, n: int) -> None:
        mine = self.pipes()
        for q in [q for q in self.last if q in mine]:
            for p in mine:
                self.clock[(q, p)] = self.last[q]

    # ---- cross-core flags (mode 2) ----------------------------------------------------------------
    def op_CrossCoreSetFlag(self, s: ir.CrossCoreSetFlag, n: int) -> None:
        signal = self.signal(self.pid(s.pipe_name))
        for target in (VECTOR_CORES if not self.core else [f"cube<{self.core}"]):
            queue = self.cross.setdefault((target, s.flag_id), [])
            if len(queue) >= FLAG_LIMIT:
                raise PipeRaceError(f"CrossCoreSetFlag({s.flag_id}): more than {FLAG_LIMIT} signals pending for "
                                    f"{target or 'the cube'}", f"flag{s.flag_id}")
            queue.append(signal)

    def can_wait(self, s: ir.CrossCoreWaitFlag) -> bool:
        keys = [(f"cube<{c}", s.flag_id) for c in VECTOR_CORES] if not self.core else [(self.core, s.flag_id)]
        return all(self.cross.get(k) for k in keys)

    def op_CrossCoreWaitFlag(self, s: ir.CrossCoreWaitFlag, n: int) -> None:
        keys = [(f"cube<{c}", s.flag_id) for c in VECTOR_CORES] if not self.core else [(self.core, s.flag_id)]
        for k in keys:
            signal = self.cross[k].pop(0)
            for p in self.pipes():
                self.wait_for(p, signal)

    def op_Comment(self, s: ir.Comment, n: int) -> None:
        pass

    def op_SetAtomic(self, s: ir.SetAtomic, n: int) -> None:
        self.atomic = s.mode

    # ---- data statements --------------------------------------------------------------------------
    def op_InitConstValue(self, s: ir.InitConstValue, n: int) -> None:
        q = s.params
        blk = self.elems(s.dst, BLOCK_BYTES)
        r = np.arange(q.repeat_times)[:, None] * (q.block_num + q.dst_gap) * blk
        idx = s.dst_offset + r + np.arange(q.block_num * blk)[None, :]
        self.mem[s.dst][idx] = to_storage(np.array(q.init_value, np.float32), self.dtype[s.dst])

    def op_CopyGmToL1(self, s: ir.CopyGmToL1, n: int) -> None:
        ascend.nd2nz(self.mem[s.src][s.src_offset:], self.mem[s.dst][s.dst_offset:], s.params, self.dtype[s.dst])

    def op_LoadData(self, s: ir.LoadData, n: int) -> None:
        q = s.params
        frac = self.elems(s.dst, FRACTAL_BYTES)
        t = np.arange(q.repeat_times)[:, None]
        e = np.arange(frac)[None, :]
        src = s.src_offset + (q.start_index + t * q.src_stride) * frac + e
        if q.if_transpose:  # element (r, c) of each 16 x 16 destination fractal comes from (c, r)
            e = (e % ascend.ROW_FRACTAL) * ascend.ROW_FRACTAL + e // ascend.ROW_FRACTAL
        dst = s.dst_offset + t * (1 + q.dst_gap) * frac + e
        self.mem[s.dst][dst] = self.mem[s.src][src]

    def logical(self, name: str) -> np.ndarray:
        info = self.k.buffer(name).image
        return ascend.from_storage(self.mem[name].reshape(info.storage_shape), info)

    def op_Mmad(self, s: ir.Mmad, n: int) -> None:
        q = s.params
        ia, ib, ic = mmad_index(q.m, q.n, q.k, ascend_c0(self.dtype[s.a]))
        a, b = self.mem[s.a][ia], self.mem[s.b][ib]
        self.check(a, s.a, s)
        self.check(b, s.b, s)
        c = None
        if not q.cmatrix_init_val:
            c = self.mem[s.c][ic]
            self.check(c, s.c, s)
        # the op-level simulator calls the same routine: equal bit for bit on every machine
        self.mem[s.c][ic] = mad(to_values(a, self.dtype[s.a]), to_values(b, self.dtype[s.b]), c)

    def op_Fixpipe(self, s: ir.Fixpipe, n: int) -> None:
        q = s.params
        f = ascend.ROW_FRACTAL
        r = np.arange(q.m_size)[:, None]
        c = np.arange(q.n_size)[None, :]
        src = s.src_offset + (c // f) * q.src_stride * f + r * f + c % f
        block = self.mem[s.src][src]
        self.check(block, s.src, s)
        out = to_values(block, self.dtype[s.src])
        if q.relu_en:
            out = np.maximum(out, 0)
        idx = s.dst_offset + r * q.dst_stride + c
        if self.atomic == "add":  # the store accumulates into GM
            out = to_values(self.mem[s.dst][idx], self.dtype[s.dst]) + out
        self.mem[s.dst][idx] = to_storage(out, self.dtype[s.dst])


    # ---- the vector core ---------------------------------------------------------------------------
    def pad_copy(self, s, gm_is_src: bool) -> None:
        """``DataCopyPad`` between GM and UB: blocks of ``block_len`` bytes; GM gaps in bytes, UB gaps in
        32-byte blocks, each UB block starting on a 32-byte boundary."""
        q = s.params
        size = np.dtype(np_dtype(self.dtype[s.dst])).itemsize
        ub_len = -(-q.block_len // BLOCK_BYTES) * BLOCK_BYTES
        gm_pitch = q.block_len + (q.src_stride if gm_is_src else q.dst_stride)
        ub_pitch = ub_len + BLOCK_BYTES * (q.dst_stride if gm_is_src else q.src_stride)
        if q.block_len % size or gm_pitch % size:
            raise AscendExecutionError(f"{s.label}: DataCopyPad lengths {q.block_len} / {gm_pitch} bytes are not "
                                       f"whole {self.dtype[s.dst]} elements", s.label, s.dst)
        b = np.arange(q.block_count)[:, None]
        e = np.arange(q.block_len // size)[None, :]
        gm = (s.src_offset if gm_is_src else s.dst_offset) + b * (gm_pitch // size) + e
        ub = (s.dst_offset if gm_is_src else s.src_offset) + b * (ub_pitch // size) + e
        src, dst = (gm, ub) if gm_is_src else (ub, gm)
        data = self.mem[s.src][src]
        if not gm_is_src:
            self.check(data, s.src, s)
        self.mem[s.dst][dst] = data

    def op_CopyGmToUb(self, s: ir.CopyGmToUb, n: int) -> None:
        self.pad_copy(s, gm_is_src=True)

    def op_CopyUbToGm(self, s: ir.CopyUbToGm, n: int) -> None:
        self.pad_copy(s, gm_is_src=False)

    def op_VecOp(self, s: ir.VecOp, n: int) -> None:
        args = []
        for b, o in s.srcs:
            x = self.mem[b][o:o + s.count]
            self.check(x, b, s)
            args.append(to_values(x, self.dtype[b]))
        c = np.float32(s.scalar)
        fn = {"Add": lambda: args[0] + args[1], "Mul": lambda: args[0] * args[1],
              "Max": lambda: np.maximum(args[0], args[1]), "Adds": lambda: args[0] + c,
              "Muls": lambda: args[0] * c, "Maxs": lambda: np.maximum(args[0], c),
              "Relu": lambda: np.maximum(args[0], 0), "Duplicate": lambda: np.full(s.count, c, np.float32),
              "Cast": lambda: args[0]}  # the store below rounds to the destination type (nearest even)
        if s.op not in fn:
            raise AscendExecutionError(f"{s.label}: no model for the vector intrinsic {s.op}", s.label, s.dst)
        self.mem[s.dst][s.dst_offset:s.dst_offset + s.count] = to_storage(fn[s.op](), self.dtype[s.dst])


def _bind(stmt, env: dict[str, int]):
    """``stmt`` with its loop-affine offsets and its struct fields (per core, per tile extent) evaluated."""
    changes = {f: ir.resolve(getattr(stmt, f), env) for f in ("src_offset", "dst_offset")
               if isinstance(getattr(stmt, f, None), (ir.Offset, ir.Pick))}
    if isinstance(stmt, ir.VecOp):
        changes["srcs"] = tuple((b, ir.resolve(o, env)) for b, o in stmt.srcs)
        changes["count"] = ir.value_of(stmt.count, env)
    if isinstance(stmt, ir.WORK) and not isinstance(stmt, (ir.VecOp, ir.Mmad)) or isinstance(stmt, ir.Mmad):
        changes["params"] = ir.bind_params(stmt.params, env)
    return replace(stmt, **changes) if changes else stmt


def _steps(m: _Machine, core: str, body, env: dict[str, int], counter: list[int]) -> Iterator[None]:
    """Run ``body`` on ``core``, yielding whenever a cross-core wait finds no signal yet."""
    for stmt in body:
        if isinstance(stmt, ir.For):
            for i in range(stmt.extent):
                yield from _steps(m, core, stmt.body, {**env, stmt.var: i}, counter)
            continue
        if isinstance(stmt, ir.TileLoop):  # this core's tiles: core, core + GetBlockNum(), ...
            for t in range(env["core"], stmt.tiles, env["block_num"]):
                yield from _steps(m, core, stmt.body, ir.tile_env(stmt, t, env), counter)
            continue
        if isinstance(stmt, ir.Guard):
            if stmt.holds(env):
                yield from _steps(m, core, stmt.body, env, counter)
            continue
        m.core = core
        if isinstance(stmt, ir.CrossCoreWaitFlag):
            while not m.can_wait(stmt):
                yield
                m.core = core
        stmt, n = m.local(_bind(stmt, env)), counter[0]
        counter[0] += 1
        if isinstance(stmt, ir.WORK):
            m.order(stmt, n)
        STATEMENTS.lookup(type(stmt).__name__)(m, stmt, n)


def _schedule(m: _Machine, kernel: ir.Kernel, block: int = 0, block_num: int = 1) -> None:
    """Round-robin over the cores' coroutines of AI core ``block`` until all finish; a round in which nobody
    moves is a deadlock."""
    counter = [0]
    env = {"core": block, "block_num": block_num}
    cores = {"": _steps(m, "", kernel.body, env, counter)}
    if kernel.vector:
        cores |= {c: _steps(m, c, kernel.vector, {**env, "sub": i}, counter) for i, c in enumerate(VECTOR_CORES)}
    while cores:
        before = counter[0]
        for core, gen in list(cores.items()):
            try:
                next(gen)
            except StopIteration:
                del cores[core]
        if cores and counter[0] == before:
            waiting = ", ".join(c or "cube" for c in cores)
            raise PipeRaceError(f"deadlock: {waiting} wait on cross-core flags nobody sets", "CrossCoreWaitFlag")


def gm_inputs(kernel: ir.Kernel) -> list[str]:
    """The GM parameters some statement of ``kernel`` reads and none writes: :func:`run` needs an array for each.

    >>> k = ir.Kernel("k", (ir.GlobalParam("A", "float16", (16, 16)), ir.GlobalParam("C", "float32", (16, 16))),
    ...               (), ())
    >>> gm_inputs(k)
    []
    """
    stmts = [s for s in ir.flatten(kernel.body) + ir.flatten(kernel.vector) if isinstance(s, ir.WORK)]
    read = {b for s in stmts for b in s.reads}
    written = {b for s in stmts for b in s.writes}
    return [g.name for g in kernel.params if g.name in read and g.name not in written]


def _check_inputs(kernel: ir.Kernel, inputs) -> None:
    """Typed errors for inputs :class:`_Machine` would otherwise take silently (a missing input read as zeros,
    an unknown name ignored, integers or bit patterns read as values)."""
    params = {g.name: (g.shape, g.dtype) for g in kernel.params}
    check_names(inputs, params, gm_inputs(kernel), "execute_ascend", f" of {kernel.name}")
    for name, arr in inputs.items():
        if not isinstance(arr, np.ndarray) or arr.dtype.kind != "f":
            found = arr.dtype if isinstance(arr, np.ndarray) else type(arr).__name__
            raise DtypeError(f"execute_ascend: input {name} is {found}; expected a numpy array of floating values "
                             f"(converted to {kernel.param(name).dtype} as a host copy would)")


def run(kernel: ir.Kernel, inputs: Mapping[str, np.ndarray], block_num: int | None = None) -> dict[str, np.ndarray]:
    """Run ``kernel`` on ``inputs`` (GM arrays by name, shaped as declared, floating values; bfloat16 given as
    values, not bits) and return every GM tensor, shaped as declared (bfloat16 decoded to float32).  Every GM
    tensor the kernel reads and never writes needs an array (:func:`gm_inputs`); the others start at zero.
    Bad inputs raise :class:`~layoutkit.errors.CodegenInputError` / :class:`~layoutkit.errors.DtypeError`
    / :class:`~layoutkit.backends.ascend.reference.AscendExecutionError` (shape) naming the tensor.  See the module
    doc for an example.  The AI cores of the launch (``block_num``, default ``kernel.block_dim``) run one
    after another on one global memory, each with its own on-chip buffers and pipes."""
    _check_inputs(kernel, inputs)
    blocks = kernel.block_dim if block_num is None else int(block_num)
    gm = None
    for block in range(max(blocks, 1)):
        m = _Machine(kernel, inputs, gm)
        gm = m.mem
        _schedule(m, kernel, block, blocks)
        if m.flags:  # a set nobody waits for leaves the event raised for the next kernel
            core, src, dst, event = next(iter(m.flags))
            raise PipeRaceError(f"SetFlag<{src}_{dst}>({event}) on {core or 'the cube'} is never waited for", src)
    out = {}
    for g in kernel.params:
        arr = m.mem[g.name].reshape(g.shape)  # every core's machine shares these arrays
        out[g.name] = bf16_value(arr) if g.dtype == "bfloat16" else arr
    return out


STATEMENTS = OpTable.of_methods(_Machine, "Ascend IR statements")
"""IR statement class name -> the executor's handler."""
