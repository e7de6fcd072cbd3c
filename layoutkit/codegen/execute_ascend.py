"""A numpy executor for :mod:`.ascend_ir` kernels, statement by statement.

No Ascend simulator (CANN) is available to run the emitted Ascend C, so this executor stands in for one: it
runs the same statements the printer writes, with the data-movement semantics of
:mod:`layoutkit.targets.ascend.movement` (``DataCopy`` with ``Nd2NzParams`` *is*
:func:`~layoutkit.targets.ascend.nd2nz`; fractal images are read through
:func:`~layoutkit.targets.ascend.from_storage`), the documented semantics of ``InitConstValue`` (32-byte blocks
on L1), ``LoadData2DParams`` (512-byte fractals, ``ifTranspose`` per 16 x 16 fractal) and
``FixpipeParamsV220`` with NZ2ND (accumulating into GM after ``SetAtomicAdd``), and the MAD in fp32
(fp16/bf16 products are exact in fp32).

Every buffer is a flat numpy array.  On-chip memory starts uninitialised (NaN; bfloat16 is held as raw
``uint16`` bits), and an ``Mmad`` or ``Fixpipe`` that reads an uninitialised element raises
:class:`~layoutkit.infer.ascend_exec.UninitialisedReadError` naming the op.  The pipes are checked too: a
statement that touches a buffer another pipe used, without a ``SetFlag``/``WaitFlag`` pair that orders the
two, raises :class:`PipeRaceError`.

>>> import numpy as np
>>> from layoutkit.infer import Program, infer_layouts
>>> from layoutkit.codegen.lower_ascend import lower
>>> p = Program(target="ascend")
>>> A = p.tensor("A", (20, 24), "float16"); B = p.tensor("B", (24, 18), "float16")
>>> C = p.tensor("C", (20, 18), "float32")
>>> a1 = p.alloc("a1", (32, 32), "float16", "l1"); b1 = p.alloc("b1", (32, 32), "float16", "l1")
>>> a0 = p.alloc("a0", (32, 32), "float16", "l0a"); b0 = p.alloc("b0", (32, 32), "float16", "l0b")
>>> c0 = p.alloc("c0", (32, 32), "float32", "l0c")
>>> _ = p.copy(A[0:32, 0:32], a1); _ = p.copy(B[0:32, 0:32], b1)
>>> _ = p.copy(a1, a0); _ = p.copy(b1, b0); _ = p.mad(a0, b0, c0, clear_accum=True)
>>> _ = p.copy(c0, C[0:32, 0:32])
>>> out = run(lower(p, infer_layouts(p)), {"A": np.ones((20, 24), np.float16), "B": np.ones((24, 18), np.float16)})
>>> float(out["C"][19, 17]), out["C"].shape
(24.0, (20, 18))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from ..infer.ascend_exec import AscendExecutionError, UninitialisedReadError, bf16_bits, bf16_value
from ..targets import ascend
from . import ascend_ir as ir

BLOCK_BYTES = 32
FRACTAL_BYTES = 512


class PipeRaceError(AscendExecutionError):
    """Two pipes touch one buffer without a SetFlag/WaitFlag pair ordering them."""


def np_dtype(dtype: str):
    """The numpy storage type of an Ascend element type (bfloat16 as raw ``uint16`` bits)."""
    table = {"float16": np.float16, "float32": np.float32, "bfloat16": np.uint16}
    if dtype not in table:
        raise AscendExecutionError(f"execute_ascend: no numpy model for {dtype}", "allocate")
    return table[dtype]


def _blank(size: int, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        return np.full(size, 0x7FC0, np.uint16)
    return np.full(size, np.nan, np_dtype(dtype))


def _values(x: np.ndarray, dtype: str) -> np.ndarray:
    return bf16_value(x) if dtype == "bfloat16" else np.asarray(x, np.float32)


def _store(x: np.ndarray, dtype: str) -> np.ndarray:
    return bf16_bits(np.asarray(x, np.float32)) if dtype == "bfloat16" else np.asarray(x).astype(np_dtype(dtype))


class _Machine:
    def __init__(self, kernel: ir.Kernel, inputs: Mapping[str, np.ndarray]):
        self.k = kernel
        self.dtype = {g.name: g.dtype for g in kernel.params} | {b.name: b.dtype for b in kernel.buffers}
        self.mem: dict[str, np.ndarray] = {}
        for g in kernel.params:
            if g.name in inputs:
                arr = np.asarray(inputs[g.name])
                if arr.shape != g.shape:
                    raise AscendExecutionError(f"execute_ascend: input {g.name} has shape {arr.shape}; expected "
                                               f"{g.shape}", "input", g.name)
                self.mem[g.name] = _store(arr, g.dtype).reshape(-1).copy()
            else:
                self.mem[g.name] = _store(np.zeros(g.shape, np.float32), g.dtype).reshape(-1)
        for b in kernel.buffers:
            self.mem[b.name] = _blank(b.size, b.dtype)
        # pipe ordering: clock[(q, p)] = the last statement of pipe q that pipe p has waited for
        self.clock: dict[tuple[str, str], int] = {}
        self.flags: dict[tuple[str, str, int], int] = {}
        self.last: dict[str, int] = {}
        self.access: dict[str, list[tuple[str, int, bool]]] = {}
        self.atomic = "none"

    def elems(self, name: str, nbytes: int) -> int:
        return nbytes // np.dtype(np_dtype(self.dtype[name])).itemsize

    def check(self, x: np.ndarray, name: str, stmt) -> None:
        bad = np.isnan(_values(x, self.dtype[name]))
        if bad.any():
            raise UninitialisedReadError(f"{stmt.label}: reads {int(bad.sum())} uninitialised element(s) of {name}",
                                         stmt.label, name)

    # ---- pipe ordering ----------------------------------------------------------------------------
    def order(self, stmt, n: int) -> None:
        p = stmt.pipe
        for b in stmt.reads + stmt.writes:
            writing = b in stmt.writes
            for q, i, was_write in self.access.get(b, []):
                if q != p and (writing or was_write) and i > self.clock.get((q, p), -1):
                    raise PipeRaceError(f"{stmt.label}: pipe {p} touches {b} after pipe {q} (statement {i}) with no "
                                        f"SetFlag/WaitFlag<{q}_{p}> between them", stmt.label, b)
        for b in stmt.reads + stmt.writes:
            self.access.setdefault(b, []).append((p, n, b in stmt.writes))
        self.last[p] = n

    def op_SetFlag(self, s: ir.SetFlag, n: int) -> None:
        self.flags[(s.src, s.dst, s.event_id)] = self.last.get(s.src, -1)

    def op_WaitFlag(self, s: ir.WaitFlag, n: int) -> None:
        key = (s.src, s.dst, s.event_id)
        if key not in self.flags:
            raise PipeRaceError(f"WaitFlag<{s.event}>({s.event_id}) with no SetFlag before it (deadlock)", s.event)
        self.clock[(s.src, s.dst)] = max(self.clock.get((s.src, s.dst), -1), self.flags.pop(key))

    def op_PipeBarrier(self, s: ir.PipeBarrier, n: int) -> None:
        for q in self.last:
            for p in ("MTE2", "MTE1", "M", "FIX"):
                self.clock[(q, p)] = self.last[q]

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
        self.mem[s.dst][idx] = _store(np.array(q.init_value, np.float32), self.dtype[s.dst])

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
        va, vb = self.logical(s.a), self.logical(s.b)
        a = va[:q.k, :q.m].T if s.transpose_a else va[:q.m, :q.k]
        b = vb[:q.n, :q.k].T if s.transpose_b else vb[:q.k, :q.n]
        self.check(a, s.a, s)
        self.check(b, s.b, s)
        prod = np.matmul(_values(a, self.dtype[s.a]), _values(b, self.dtype[s.b]), dtype=np.float32)
        c = self.logical(s.c).copy()
        if not q.cmatrix_init_val:
            self.check(c[:q.m, :q.n], s.c, s)
            prod = c[:q.m, :q.n].astype(np.float32) + prod
        c[:q.m, :q.n] = prod
        info = self.k.buffer(s.c).image
        self.mem[s.c] = np.ascontiguousarray(ascend.to_storage(c, info)).reshape(-1)

    def op_Fixpipe(self, s: ir.Fixpipe, n: int) -> None:
        q = s.params
        f = ascend.ROW_FRACTAL
        r = np.arange(q.m_size)[:, None]
        c = np.arange(q.n_size)[None, :]
        src = s.src_offset + (c // f) * q.src_stride * f + r * f + c % f
        block = self.mem[s.src][src]
        self.check(block, s.src, s)
        out = _values(block, self.dtype[s.src])
        if q.relu_en:
            out = np.maximum(out, 0)
        idx = s.dst_offset + r * q.dst_stride + c
        if self.atomic == "add":  # the store accumulates into GM
            out = _values(self.mem[s.dst][idx], self.dtype[s.dst]) + out
        self.mem[s.dst][idx] = _store(out, self.dtype[s.dst])


def _bind(stmt, env: dict[str, int]):
    """``stmt`` with its loop-affine offsets evaluated."""
    changes = {f: ir.resolve(getattr(stmt, f), env) for f in ("src_offset", "dst_offset")
               if isinstance(getattr(stmt, f, None), ir.Offset)}
    return replace(stmt, **changes) if changes else stmt


def _block(m: _Machine, body, env: dict[str, int], counter: list[int]) -> None:
    for stmt in body:
        if isinstance(stmt, ir.For):
            for i in range(stmt.extent):
                _block(m, stmt.body, {**env, stmt.var: i}, counter)
            continue
        stmt, n = _bind(stmt, env), counter[0]
        counter[0] += 1
        if isinstance(stmt, ir.WORK):
            m.order(stmt, n)
        getattr(m, f"op_{type(stmt).__name__}")(stmt, n)


def run(kernel: ir.Kernel, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run ``kernel`` on ``inputs`` (GM arrays by name; bfloat16 given as float32 values) and return every
    GM tensor, shaped as declared (bfloat16 decoded to float32)."""
    m = _Machine(kernel, inputs)
    _block(m, kernel.body, {}, [0])
    out = {}
    for g in kernel.params:
        arr = m.mem[g.name].reshape(g.shape)
        out[g.name] = bf16_value(arr) if g.dtype == "bfloat16" else arr
    return out
