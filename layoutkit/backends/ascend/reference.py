"""A numpy executor for solved Ascend programs, on the movement models of :mod:`layoutkit.targets.ascend`.

Buffers hold their real images: GM and UB as ND arrays (UB once per vector core: two AIVs), L1/L0A/L0B/L0C
as canonical fractal storage (``[..., outer0, outer1, 16, C0]``).  On-chip memory starts uninitialised
(NaN; for bfloat16, held as raw ``uint16`` bits, the NaN pattern ``0x7FC0``), so a GEMM, fixpipe or
vector op that reads padding nobody wrote raises :class:`UninitialisedReadError` naming the op and the
buffer instead of silently using it.

Semantics: GM -> L1 is the ND2NZ DMA (the valid block, zeros to the end of its last 32-byte block along
the C0 axis); ``fill`` writes its region; L1 -> L0A/L0B copies the fractal image (padding included);
``gemm`` is the MAD on the logical M x K x N block (fp32 accumulation); L0C -> GM is the fixpipe (with
``set_atomic("add")`` it accumulates); ``dual_copy`` gives each vector core its half; ``scatter`` /
``post_copy`` are :func:`~layoutkit.targets.ascend.ub_scatter_compact_nz` / ``burst_copy``; vector regions
run their ops on both cores (``parallel`` with ``compute`` one of :data:`PARALLEL_OPS`: ``relu``, ``copy``,
``add`` / ``mul`` / ``max`` of two reads, a read missing a loop variable broadcasting along it, as a bias row
``lambda i, j: (j,)``, and ``adds:C`` / ``muls:C`` / ``maxs:C`` with a number ``C``).

>>> import numpy as np
>>> from layoutkit.infer import infer_layouts, programs
>>> p = programs.ascend_gemm(M=20, N=18, K=24, bm=32, bn=32, bk=32)   # one tile, tails in every dim
>>> from layoutkit.backends.ascend.passes import run_ascend_passes
>>> q, reports = run_ascend_passes(p, infer_layouts(p))
>>> a = np.ones((20, 24), np.float16); b = np.ones((24, 18), np.float16)
>>> float(run_ascend(q, {"A": a, "B": b})["C"][19, 17])
24.0
>>> no_fills = clone(q, [op for op in q.ops if op.kind != "fill"])   # drop the OOB fills
>>> try:
...     run_ascend(no_fills, {"A": a, "B": b})
... except AscendExecutionError as err:
...     print(type(err).__name__, err.op, err.buffer)
UninitialisedReadError gemm#4 A_l0
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...dtypes import BF16_NAN, from_bf16, to_bf16
from ...dtypes import storage_dtype as _storage
from ...errors import LayoutError, UnsupportedError
from ...infer.ops import Op
from ...infer.program import Program
from ...numerics import mad
from ...scopes import GLOBAL
from ...targets import ascend
from ...targets.ascend.layouts import FractalKind
from ..dispatch import OpTable
from .passes import FRACTAL_SCOPES, clone, layouts_of  # noqa: F401  (clone: doctest)
from .scopes import GM, L1, UB

CORES = 2
ROW = ascend.ROW_FRACTAL


class AscendExecutionError(LayoutError):
    """The program cannot run as given; ``op`` names the op."""

    def __init__(self, message: str, op: str, buffer: str | None = None):
        super().__init__(message)
        self.op = op
        self.buffer = buffer


class UninitialisedReadError(AscendExecutionError):
    """An op read padding (or any element) that was never written."""


# ---- element types --------------------------------------------------------------------------------

bf16_bits = to_bf16
"""float32 -> bfloat16 bits (round to nearest even): :func:`layoutkit.dtypes.to_bf16`."""
bf16_value = from_bf16
"""bfloat16 bits -> float32: :func:`layoutkit.dtypes.from_bf16`."""
ASCEND_DTYPES = ("float16", "float32", "bfloat16", "int8", "int32")


def storage_dtype(dtype: str):
    """The numpy type an Ascend buffer of ``dtype`` is held in (bfloat16 as raw ``uint16`` bits); shared
    with the Ascend C executor (:mod:`layoutkit.backends.ascend.execute`).

    >>> storage_dtype("bfloat16").__name__, storage_dtype("float16").__name__
    ('uint16', 'float16')
    """
    return _storage(dtype, ASCEND_DTYPES)


def to_storage(x: np.ndarray, dtype: str) -> np.ndarray:
    """Values ``x`` as held in a ``dtype`` buffer (rounded; bfloat16 to nearest-even bits).

    >>> to_storage(np.float32([1.0, 3.0]), "bfloat16").tolist()
    [16256, 16448]
    """
    if dtype == "bfloat16":
        return bf16_bits(np.asarray(x, dtype=np.float32))
    return np.asarray(x).astype(storage_dtype(dtype))


def to_values(x: np.ndarray, dtype: str) -> np.ndarray:
    """The float32 values of a ``dtype`` buffer's contents ``x`` (the inverse of :func:`to_storage`).

    >>> to_values(np.uint16([16256, 16448]), "bfloat16").tolist()
    [1.0, 3.0]
    """
    return bf16_value(x) if dtype == "bfloat16" else np.asarray(x, dtype=np.float32)


def _blank(shape, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        return np.full(shape, BF16_NAN, np.uint16)
    dt = np.dtype(storage_dtype(dtype))
    return np.full(shape, ascend.default_sentinel(dt), dt)


def _uninit(x: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        return np.isnan(bf16_value(x))
    if np.asarray(x).dtype.kind == "f":
        return np.isnan(x)
    return np.asarray(x) == ascend.default_sentinel(np.asarray(x).dtype)


# ---- the machine ----------------------------------------------------------------------------------

class _Machine:
    def __init__(self, program: Program, inputs: Mapping[str, np.ndarray], layouts):
        self.p = program
        self.lay = layouts_of(program, layouts)
        self.mem: dict[str, np.ndarray] = {}
        self.atomic: str | None = None
        self.fills: dict[str, np.ndarray] = {}
        for name, buf in program.buffers.items():
            shape = program.shape_of(name)
            if buf.scope in (GM, GLOBAL):
                if name in inputs:
                    arr = np.asarray(inputs[name])
                    if arr.shape != shape:
                        raise AscendExecutionError(f"run_ascend: input {name} has shape {arr.shape}; expected {shape}",
                                                   "input", name)
                    self.mem[name] = to_storage(arr, buf.dtype)
                else:
                    self.mem[name] = to_storage(np.zeros(shape, np.float32), buf.dtype)
            elif buf.scope == UB:
                self.mem[name] = _blank((CORES,) + shape, buf.dtype)
            elif buf.scope in FRACTAL_SCOPES:
                info = self.info(name, "allocate")
                self.mem[name] = _blank(info.storage_shape, buf.dtype)

    def info(self, name: str, op: str):
        if name not in self.lay:
            raise AscendExecutionError(f"{op}: fractal buffer {name} has no layout; run infer_layouts first", op, name)
        return ascend.fractal_info(self.lay[name])

    def dtype(self, name: str) -> str:
        return self.p.buffers[name].dtype

    # padded logical views of fractal buffers
    def view(self, name: str, op: str) -> np.ndarray:
        return ascend.from_storage(self.mem[name], self.info(name, op)).copy()

    def store(self, name: str, padded: np.ndarray, op: str) -> None:
        self.mem[name] = np.ascontiguousarray(ascend.to_storage(padded, self.info(name, op)))

    def filled(self, name: str, shape) -> np.ndarray:
        """Elements a fill defined since the last copy into ``name``."""
        if name not in self.fills or self.fills[name].shape != tuple(shape):
            self.fills[name] = np.zeros(shape, dtype=bool)
        return self.fills[name]

    def undefine(self, name: str, arr: np.ndarray, idx) -> None:
        """Before a copy into ``idx`` of ``arr`` (the UB array or a fractal padded view): what no fill defined
        since the previous copy is stale, so it becomes undefined; then the fill marks reset."""
        keep = self.filled(name, arr.shape)
        region = arr[idx]
        region[~keep[idx]] = _blank((), self.dtype(name))
        arr[idx] = region
        keep[...] = False

    def check(self, x: np.ndarray, name: str, op: Op) -> None:
        bad = _uninit(x, self.dtype(name))
        if bad.any():
            where = tuple(int(v) for v in np.argwhere(bad)[0])
            raise UninitialisedReadError(f"{op.name}: reads {int(bad.sum())} uninitialised element(s) of {name} "
                                         f"(first at {where} of the region read)", op.name, name)

    # ---- ops ------------------------------------------------------------------------------------
    def run(self, op: Op) -> None:
        fn = OPS.lookup(op.kind)
        if fn is None:
            raise AscendExecutionError(f"{op.name}: run_ascend has no model for op kind {op.kind!r}", op.name)
        fn(self, op)

    def op_set_atomic(self, op: Op) -> None:
        self.atomic = None if op.args["mode"] == "none" else op.args["mode"]

    def op_vf(self, op: Op) -> None:
        for inner in self.p.regions.get(op.uid, []):
            self.run(inner)

    def op_fill(self, op: Op) -> None:
        a = op.args
        name = a["dst"]
        scope = self.p.buffers[name].scope
        idx = (Ellipsis,) + tuple(slice(s, s + e) for s, e in a.get("fill_region", ()))
        val = to_storage(np.array(a["value"], np.float32), self.dtype(name))
        if scope in FRACTAL_SCOPES:
            v = self.view(name, op.name)
            v[idx] = val
            self.store(name, v, op.name)
            self.filled(name, v.shape)[idx] = True
        elif scope == UB:
            self.mem[name][(slice(None),) + idx] = val
            self.filled(name, self.mem[name].shape)[(slice(None),) + idx] = True
        else:
            self.mem[name][idx] = val

    def op_gemm(self, op: Op) -> None:
        a = op.args
        M, N, K = a.get("mnk") or _mnk_of(self.p, a)
        va, vb = self.view(a["A"], op.name), self.view(a["B"], op.name)
        A = va[..., :K, :M].swapaxes(-1, -2) if a["transpose_A"] else va[..., :M, :K]
        B = vb[..., :N, :K].swapaxes(-1, -2) if a["transpose_B"] else vb[..., :K, :N]
        self.check(A, a["A"], op)
        self.check(B, a["B"], op)
        vc = self.view(a["C"], op.name)
        if not a["clear_accum"]:
            self.check(vc[..., :M, :N], a["C"], op)
        acc = None if a["clear_accum"] else vc[..., :M, :N]
        vc[..., :M, :N] = mad(to_values(A, self.dtype(a["A"])), to_values(B, self.dtype(a["B"])), acc)
        self.store(a["C"], vc, op.name)

    def op_copy(self, op: Op) -> None:
        a = op.args
        src, dst = a["src"], a["dst"]
        ss, ds = self.p.buffers[src].scope, self.p.buffers[dst].scope
        (s0, se), (d0, de) = a["src_region"], a["dst_region"]
        sk = [k for k, e in enumerate(se) if e != 1]
        dk = [k for k, e in enumerate(de) if e != 1]
        valid = list(a.get("valid", [se[k] for k in sk]))
        for side, starts, keys in (("src", s0, sk), ("dst", d0, dk)):
            name = src if side == "src" else dst
            if self.p.buffers[name].scope == GM:
                shape = self.p.shape_of(name)
                for k, v in zip(keys, valid):
                    if starts[k] + v > shape[k]:
                        raise AscendExecutionError(f"{op.name}: the region of {name} runs past its end (dim {k}: "
                                                   f"{starts[k]}+{v} > {shape[k]}); run insert_oob_padding", op.name,
                                                   name)
        s_idx = _box(s0, se, sk, valid)
        d_idx = _box(d0, de, dk, valid)
        if ss == GM and ds == L1:
            return self._gm_to_l1(op, src, dst, s_idx, d_idx, valid, dk)
        if ss == UB and ds == L1 and self.info(dst, op.name).kind is FractalKind.MAJOR_K:
            raise AscendExecutionError(f"{op.name}: a UB -> L1 copy into NZ needs insert_nd2nz (scatter + "
                                       f"post_copy)", op.name, dst)
        if ds == UB:  # a clamped copy leaves the rest of its UB tile undefined (unless filled just before)
            self.undefine(dst, self.mem[dst], (slice(None),) + tuple(slice(s, s + e) for s, e in zip(d0, de)))
        images = ss in FRACTAL_SCOPES and ds in FRACTAL_SCOPES  # L1 -> L0: the image moves, padding and all
        data = self._read(op, src, s_idx, core=0, check=not images)
        self._write(op, dst, d_idx, data, both_cores=True)

    def _read(self, op: Op, name: str, idx, core: int | None, check: bool = True) -> np.ndarray:
        scope = self.p.buffers[name].scope
        if scope in FRACTAL_SCOPES:
            x = self.view(name, op.name)[idx]
        elif scope == UB:
            x = self.mem[name][(slice(None) if core is None else core,) + idx]
        else:
            x = self.mem[name][idx]
        if scope != GM and check:
            self.check(x, name, op)
        return x if not check else to_values(x, self.dtype(name))

    def _write(self, op: Op, name: str, idx, data: np.ndarray, both_cores: bool = True, core: int = 0) -> None:
        scope = self.p.buffers[name].scope
        dt = self.dtype(name)
        if scope in FRACTAL_SCOPES:
            v = self.view(name, op.name)
            v[idx] = data.reshape(v[idx].shape) if data.dtype == v.dtype else to_storage(data.reshape(v[idx].shape), dt)
            self.store(name, v, op.name)
        elif scope == UB:
            full = (slice(None),) + idx if both_cores else (core,) + idx
            tgt = self.mem[name][full]
            self.mem[name][full] = to_storage(np.broadcast_to(data.reshape(tgt.shape[-data.ndim:] if both_cores
                                                                          else tgt.shape), tgt.shape), dt)
        else:
            tgt = self.mem[name][idx]
            data = data.reshape(tgt.shape)
            if op.args.get("atomic") == "add" or self.atomic == "add" and op.args.get("atomic") is None:
                if self.atomic != "add":
                    raise AscendExecutionError(f"{op.name}: atomic store without set_atomic", op.name, name)
                data = to_values(tgt, dt) + data
            self.mem[name][idx] = to_storage(data, dt)

    def _gm_to_l1(self, op, src, dst, s_idx, d_idx, valid, dk) -> None:
        """ND2NZ DMA: the valid block, zeros to the end of its last block along the C0 axis."""
        info = self.info(dst, op.name)
        if len(valid) != 2:
            raise UnsupportedError(f"{op.name}: the GM -> L1 model handles 2-D copies; found {valid}")
        v = self.view(dst, op.name)
        r0, c0 = d_idx[dk[0]].start, d_idx[dk[1]].start
        vr, vc = valid
        k = info.c0
        # the destination tile (to whole fractals) is undefined until written: a clamped copy leaves its
        # out-of-bounds part holding stale data, unless a fill since the previous copy defined it
        er, ec = (op.args["dst_region"][1][d] for d in dk)
        kr, kc = (k, ROW) if info.kind is FractalKind.MAJOR_MN else (ROW, k)
        self.undefine(dst, v, (Ellipsis, slice(r0, r0 + round_up(er, kr)), slice(c0, c0 + round_up(ec, kc))))
        if info.kind is FractalKind.MAJOR_K:
            v[..., r0:r0 + vr, c0:c0 + -(-vc // k) * k] = 0
        else:
            v[..., r0:r0 + -(-vr // k) * k, c0:c0 + vc] = 0
        block = self.mem[src][s_idx]
        v[..., r0:r0 + vr, c0:c0 + vc] = block.reshape(v[..., r0:r0 + vr, c0:c0 + vc].shape)
        self.store(dst, v, op.name)

    def op_dual_copy(self, op: Op) -> None:
        a = op.args
        src, dst = a["src"], a["dst"]
        (s0, se), (d0, de) = a["src_region"], a["dst_region"]
        ax = -1 if a["split"] == "N" else -2
        if self.p.buffers[dst].scope == L1:
            raise UnsupportedError(f"{op.name}: run_ascend does not model a UB -> L1 dual_copy (insert_nd2nz "
                                   f"rewrites plain copies only)")
        for core in range(CORES):
            if self.p.buffers[dst].scope == UB:  # full src, half dst per core
                h = de[ax]
                starts = list(s0)
                starts[ax] += core * h
                ext = list(se)
                ext[ax] = h
                data = self._read(op, src, tuple(slice(s, s + e) for s, e in zip(starts, ext)), core=None)
                idx = tuple(slice(s, s + e) for s, e in zip(d0, de))
                self._write(op, dst, idx, data, both_cores=False, core=core)
            else:  # half src per core, full dst
                h = se[ax]
                data = self._read(op, src, tuple(slice(s, s + e) for s, e in zip(s0, se)), core=core)
                starts = list(d0)
                starts[ax] += core * h
                ext = list(de)
                ext[ax] = h
                shape = self.p.shape_of(dst)
                clamped = [max(0, min(e, n - s)) for s, e, n in zip(starts, ext, shape)]
                if clamped != ext and "valid" not in a:
                    raise AscendExecutionError(f"{op.name}: the region of {dst} runs past its end; run "
                                               f"insert_oob_padding", op.name, dst)
                ext = clamped
                data = data[tuple(slice(0, e) for e in ext)]
                if 0 in ext:
                    continue
                self._write(op, dst, tuple(slice(s, s + e) for s, e in zip(starts, ext)), data)

    def op_parallel(self, op: Op) -> None:
        """An elementwise loop (see :data:`PARALLEL_OPS`): one write at the identity index, one or two reads
        whose indices are loop variables in loop order (a missing one broadcasts, ``(j,)`` is a row vector)."""
        kind, fn, scalar = parallel_compute(op)
        reads = [x for x in op.accesses if not x.is_write]
        writes = [x for x in op.accesses if x.is_write]
        arity = 2 if kind in BINARY else 1
        if len(reads) != arity or len(writes) != 1:
            raise UnsupportedError(f"{op.name}: run_ascend models compute {kind!r} with {arity} read(s) and one "
                                   f"write; found {len(reads)} and {len(writes)}")
        loopvars = [f"_{c}" for c in "ijklmn"[:len(op.loop)]]
        if [str(e) for e in writes[0].indices] != loopvars:
            raise UnsupportedError(f"{op.name}: run_ascend models identity writes only; {writes[0].buffer} is "
                                   f"written at {[str(e) for e in writes[0].indices]}")
        args = [self._operand(op, acc, loopvars) for acc in reads]
        if scalar is not None:
            args.append(np.float32(scalar))
        idx = tuple(slice(0, e) for e in op.loop)
        out = fn(*args)
        self._write(op, writes[0].buffer, idx, np.broadcast_to(out, (CORES,) + tuple(op.loop)), both_cores=True)

    def _operand(self, op: Op, acc, loopvars: list[str]) -> np.ndarray:
        """The values a read access sees, shaped ``(cores, *loop)`` with 1 where it broadcasts."""
        names = [str(e) for e in acc.indices]
        pos = [loopvars.index(v) if v in loopvars else -1 for v in names]
        if -1 in pos or pos != sorted(set(pos)):
            raise UnsupportedError(f"{op.name}: run_ascend models reads indexed by loop variables in loop order; "
                                   f"{acc.buffer} is read at {names}")
        idx = tuple(slice(0, op.loop[k]) for k in pos)
        data = self._read(op, acc.buffer, idx, core=None)
        if self.p.buffers[acc.buffer].scope != UB:
            data = data[None]
        shape = [data.shape[0]] + [op.loop[k] if k in pos else 1 for k in range(len(op.loop))]
        return data.reshape(shape)

    def op_scatter(self, op: Op) -> None:
        a = op.args
        (s0, se) = a["src_region"]
        idx = tuple(slice(s, s + e) for s, e in zip(s0, se))
        for core in range(CORES):
            tile = self.mem[a["src"]][(core,) + idx].reshape(a["rows"], a["cols"])
            self.check(tile, a["src"], op)
            ascend.ub_scatter_compact_nz(tile, self.dtype(a["src"]), scratch=self.mem[a["dst"]][core])

    def op_post_copy(self, op: Op) -> None:
        a = op.args
        flat = self.mem[a["dst"]].reshape(-1)
        ascend.burst_copy(self.mem[a["src"]][0], flat, n_burst=a["n_burst"], len_burst=a["len_burst"],
                          src_gap=a["src_gap"], dst_gap=a["dst_gap"], dst_offset=a["dst_offset"],
                          dtype=self.dtype(a["dst"]))


UNARY = {"relu": lambda x: np.maximum(x, 0), "copy": lambda x: x}
BINARY = {"add": np.add, "mul": np.multiply, "max": np.maximum}
SCALAR = {"adds": np.add, "muls": np.multiply, "maxs": np.maximum}
PARALLEL_OPS = tuple(UNARY) + tuple(BINARY) + tuple(f"{k}:C" for k in SCALAR)
"""``compute`` values of a ``parallel`` op that the executor (and the Ascend C lowering) model; ``C`` is a
number (``"muls:0.5"``)."""


OPS = OpTable.of_methods(_Machine, "run_ascend")
"""Op kind -> the reference executor's model of it."""


def parallel_compute(op: Op) -> tuple[str, object, float | None]:
    """``(kind, numpy function, scalar or None)`` of a parallel op's ``compute`` (``copy`` when absent).

    >>> from layoutkit.infer.program import Op
    >>> kind, fn, c = parallel_compute(Op("parallel", 0, {"compute": "muls:0.5"}))
    >>> kind, float(fn(np.float32(4), c))
    ('muls', 2.0)
    """
    text = str(op.args.get("compute", "copy"))
    kind, colon, value = text.partition(":")
    table = {**UNARY, **BINARY, **SCALAR}
    if kind not in table or bool(colon) != (kind in SCALAR):
        raise UnsupportedError(f"{op.name}: run_ascend models compute {', '.join(PARALLEL_OPS)}; found {text!r}")
    if kind not in SCALAR:
        return kind, table[kind], None
    try:
        return kind, table[kind], float(value)
    except ValueError:
        raise UnsupportedError(f"{op.name}: compute {text!r} needs a number after the colon") from None


def round_up(x: int, m: int) -> int:
    """``x`` rounded up to a multiple of ``m``.

    >>> round_up(20, 16), round_up(32, 16)
    (32, 32)
    """
    return -(-x // m) * m


def _box(starts, extents, keys, valid) -> tuple[slice, ...]:
    ext = list(extents)
    for k, v in zip(keys, valid):
        ext[k] = v
    return tuple(slice(s, s + e) for s, e in zip(starts, ext))


def _mnk_of(program: Program, a: dict) -> list[int]:
    A, B = program.buffers[a["A"]].shape, program.buffers[a["B"]].shape
    M, K = (A[-1], A[-2]) if a["transpose_A"] else (A[-2], A[-1])
    return [M, B[-2] if a["transpose_B"] else B[-1], K]


def run_ascend(program: Program, inputs: Mapping[str, np.ndarray], layouts=None) -> dict[str, np.ndarray]:
    """Run ``program`` (solved; usually after :func:`~layoutkit.backends.ascend.run_ascend_passes`) on ``inputs``
    (GM arrays by name; bfloat16 tensors as float32 values, rounded to bfloat16) and return every GM
    tensor as float32 (bfloat16 decoded) or its own dtype."""
    program.check_end()
    m = _Machine(program, inputs, layouts)
    for op in program.ops:
        m.run(op)
    out = {}
    for name, buf in program.buffers.items():
        if buf.scope in (GM, GLOBAL):
            out[name] = bf16_value(m.mem[name]) if buf.dtype == "bfloat16" else m.mem[name]
    return out
