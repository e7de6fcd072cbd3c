"""The tile-program IR layout inference works on.

A :class:`Program` holds buffers (global tensors, shared memory, register fragments, per-thread
locals) and a list of tile operations over them: copies between regions, GEMMs, parallel loops with
read/write index functions, reductions, fills, atomic adds and transposes.  ``pipelined(num_stages)``
multi-versions the shared buffers written inside it (a leading stage dim, as TileLang's pipeline
pass does before layout inference).  Programs round-trip through JSON; index functions are stored as
expression text and parsed back by :func:`layoutkit.algebra.parse_expr` (no ``eval``).

``target="ascend"`` programs use the scopes gm, ub, l1, l0a, l0b, l0c, the cube GEMM :meth:`Program.mad`,
vector regions (``with p.simt_vf(threads=...)`` / ``with p.simd_vf()``), :meth:`Program.dual_copy` and the
atomic store mode (:meth:`Program.set_atomic` ... :meth:`Program.set_atomic_none`); GM sides of their copies
may run past the tensor's end until ``insert_oob_padding`` clamps them (see :mod:`.ascend_passes`).

>>> p = Program(threads=128, target="sm_80")
>>> A = p.tensor("A", (1024, 1024), "float16")
>>> A_s = p.alloc_shared("A_shared", (32, 32), "float16")
>>> with p.pipelined(num_stages=2):
...     _ = p.copy(A[0:32, 0:32], A_s)
>>> p.shape_of(A_s)
(2, 32, 32)
>>> Program.from_json(p.to_json()).to_json() == p.to_json()
True
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..algebra.layout import Layout, check_shape, placeholder
from ..algebra.nodes import Expr, as_expr
from ..algebra.parse import parse_expr
from ..dtypes import canonical_dtype
from ..errors import ShapeError
from . import validate

SCOPES = ("global", "shared", "shared.dyn", "local.fragment", "local")
FRAGMENT = "local.fragment"
ASCEND_SCOPES = ("gm", "ub", "l1", "l0a", "l0b", "l0c")
"""Ascend memories (``target="ascend"``): global memory, the vector unified buffer, the cube L1 and the
L0A/L0B/L0C operand and accumulator buffers."""
DUAL_COPY_PATHS = (("l0c", "ub"), ("gm", "ub"), ("ub", "gm"), ("ub", "l1"))


def is_shared(scope: str) -> bool:
    return scope in ("shared", "shared.dyn")


@dataclass(frozen=True)
class Buffer:
    """A named buffer: logical ``shape`` (without pipeline stages), ``dtype`` and memory ``scope``.
    ``alias_of`` names the buffer whose storage this one views."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    scope: str
    alias_of: str | None = None

    @property
    def is_fragment(self) -> bool:
        return self.scope == FRAGMENT

    def __getitem__(self, key) -> Region:
        """``A[0:32, 0:32]`` (a region) or ``A[64, 32]`` (a start point, extents completed from the
        other side of a copy)."""
        key = key if isinstance(key, tuple) else (key,)
        if len(key) != len(self.shape):
            raise ShapeError(f"buffer {self.name} has rank {len(self.shape)}; indexed with {len(key)} subscripts")
        if not any(isinstance(k, slice) for k in key):
            return Region(self, tuple(int(k) for k in key), None)
        starts, extents = [], []
        for k, n in zip(key, self.shape):
            if isinstance(k, slice):
                if k.step not in (None, 1):
                    raise ShapeError(f"buffer {self.name}: region slices take no step; found {k}")
                lo = 0 if k.start is None else int(k.start)
                hi = n if k.stop is None else int(k.stop)
                starts.append(lo)
                extents.append(hi - lo)
            else:
                starts.append(int(k))
                extents.append(1)
        return Region(self, tuple(starts), tuple(extents))

    def to_dict(self) -> dict:
        d = {"name": self.name, "shape": list(self.shape), "dtype": self.dtype, "scope": self.scope}
        if self.alias_of:
            d["alias_of"] = self.alias_of
        return d


@dataclass(frozen=True)
class Region:
    """``buffer[starts : starts + extents]``; ``extents is None`` for a start point."""

    buffer: Buffer
    starts: tuple[int, ...]
    extents: tuple[int, ...] | None

    def to_dict(self) -> dict:
        return {"buffer": self.buffer.name, "starts": list(self.starts),
                "extents": None if self.extents is None else list(self.extents)}


def as_region(x: Buffer | Region) -> Region:
    if isinstance(x, Region):
        return x
    if isinstance(x, Buffer):
        return Region(x, (0,) * len(x.shape), x.shape)
    raise ShapeError(f"expected a Buffer or a region of one; found {type(x).__name__}")


@dataclass(frozen=True)
class Access:
    """One buffer access of a loop: ``indices`` are expressions over the loop vars ``_i, _j, ...``."""

    buffer: str
    indices: tuple[Expr, ...]
    is_write: bool


@dataclass(frozen=True)
class Op:
    """A tile operation.  ``kind`` is the rule key; ``args`` its parameters (JSON-ready);
    ``loop`` the loop shape and ``accesses`` for ops that lower to a parallel loop."""

    kind: str
    uid: int
    args: dict = field(default_factory=dict, compare=False, hash=False)
    loop: tuple[int, ...] | None = None
    accesses: tuple[Access, ...] = ()
    buffers: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.kind}#{self.uid}"

    def __str__(self) -> str:
        return self.name


class Program:
    """A kernel body for layout inference (see the module doc)."""

    def __init__(self, threads: int = 128, target: str = "sm_80"):
        self.threads = validate.positive(threads, "Program threads")
        self.target = str(target)
        self.buffers: dict[str, Buffer] = {}
        self.ops: list[Op] = []
        self.annotations: dict[str, Layout] = {}
        self.stages: dict[str, int] = {}
        self._stage: int | None = None
        self._uid = 0
        self.regions: dict[int, list[Op]] = {}
        self._region_stack: list[list[Op]] = []
        self._atomic: Op | None = None

    @property
    def is_ascend(self) -> bool:
        return self.target == "ascend"

    # ---- buffers --------------------------------------------------------------------------------
    def _add(self, name: str, shape, dtype, scope: str, alias_of: str | None = None) -> Buffer:
        if name in self.buffers:
            raise ShapeError(f"buffer {name!r} is already declared")
        scopes = ASCEND_SCOPES + (FRAGMENT, "local") if self.is_ascend else SCOPES
        if scope not in scopes:
            raise ShapeError(f"buffer {name!r}: unknown scope {scope!r}; expected one of {scopes}")
        buf = Buffer(str(name), check_shape(shape, f"buffer {name} shape"), canonical_dtype(dtype), scope, alias_of)
        self.buffers[buf.name] = buf
        return buf

    def tensor(self, name: str, shape, dtype) -> Buffer:
        return self._add(name, shape, dtype, "gm" if self.is_ascend else "global")

    def alloc(self, name: str, shape, dtype, scope: str) -> Buffer:
        """Any scope; on Ascend ``gm``, ``ub``, ``l1``, ``l0a``, ``l0b``, ``l0c``."""
        return self._add(name, shape, dtype, scope)

    def alloc_shared(self, name: str, shape, dtype, scope: str = "shared.dyn") -> Buffer:
        """Shared memory; on Ascend the vector unified buffer (``ub``), as TileLang-Ascend maps it."""
        return self._add(name, shape, dtype, "ub" if self.is_ascend and is_shared(scope) else scope)

    def alloc_fragment(self, name: str, shape, dtype) -> Buffer:
        return self._add(name, shape, dtype, FRAGMENT)

    def alloc_local(self, name: str, shape, dtype) -> Buffer:
        return self._add(name, shape, dtype, "local")

    def alias(self, name: str, base: Buffer, shape=None, dtype=None) -> Buffer:
        """A view of ``base``'s storage (same scope); layouts are copied to it after inference,
        rescaled by the element-width ratio."""
        root = base.alias_of or base.name
        return self._add(name, base.shape if shape is None else shape, dtype or base.dtype, base.scope, root)

    def shape_of(self, buf: Buffer | str) -> tuple[int, ...]:
        """The buffer's shape as layout inference sees it (pipeline stage dim included)."""
        b = self.buffers[buf if isinstance(buf, str) else buf.name]
        s = self.stages.get(b.name) or self.stages.get(b.alias_of or "", 1)
        return ((s,) + b.shape) if s > 1 else b.shape

    def _own(self, x: Buffer | Region) -> Region:
        r = as_region(x)
        if self.buffers.get(r.buffer.name) != r.buffer:
            raise ShapeError(f"buffer {r.buffer.name!r} does not belong to this program")
        return r

    # ---- ops ------------------------------------------------------------------------------------
    def _emit(self, kind: str, args: dict, loop=None, accesses=()) -> Op:
        names = tuple(dict.fromkeys([a.buffer for a in accesses] + [v for k, v in args.items()
                                                                      if k in ("A", "B", "C", "src", "dst")
                                                                      and isinstance(v, str)]))
        op = Op(kind, self._uid, args, loop, tuple(accesses), names)
        self._uid += 1
        (self._region_stack[-1] if self._region_stack else self.ops).append(op)
        return op

    def copy(self, src: Buffer | Region, dst: Buffer | Region) -> Op:
        s, d = self._own(src), self._own(dst)
        if self.is_ascend:
            return self._ascend_copy("copy", s, d)
        sr, dr, loop = validate.copy_regions(s, d, f"copy#{self._uid}")
        if self._stage and is_shared(d.buffer.scope):
            self.stages[d.buffer.name] = self._stage
        accesses = (_region_access(s.buffer, sr, loop, False), _region_access(d.buffer, dr, loop, True))
        return self._emit("copy", {"src": s.buffer.name, "dst": d.buffer.name, "src_region": sr,
                                   "dst_region": dr, "cast": s.buffer.dtype != d.buffer.dtype}, loop, accesses)

    def gemm(self, A: Buffer, B: Buffer, C: Buffer, transpose_A: bool = False, transpose_B: bool = False,
             policy: str = "square", clear_accum: bool = False) -> Op:
        for b in (A, B, C):
            self._own(b)
        args = {"A": A.name, "B": B.name, "C": C.name, "transpose_A": bool(transpose_A),
                "transpose_B": bool(transpose_B), "policy": str(policy).lower(), "clear_accum": bool(clear_accum)}
        if self.is_ascend:
            _ascend_gemm_check(A, B, C, args, f"gemm#{self._uid}")
        else:
            validate.gemm(A, B, C, args, f"gemm#{self._uid}")
        return self._emit("gemm", args)

    def mad(self, A: Buffer, B: Buffer, C: Buffer, transpose_A: bool = False, transpose_B: bool = False,
            clear_accum: bool = False, k_align: int = 1) -> Op:
        """Ascend cube GEMM (MAD): ``C (l0c) += A (l0a) @ B (l0b)``; ``k_align > 1`` (block-scaled GEMM)
        requires the K extent of A and B to be a static multiple of it."""
        if not self.is_ascend:
            raise validate.OpValidationError(f"gemm#{self._uid}: mad needs target='ascend'", f"gemm#{self._uid}")
        k_align = validate.positive(k_align, f"gemm#{self._uid} k_align")
        op = self.gemm(A, B, C, transpose_A, transpose_B, "square", clear_accum)
        op.args["k_align"] = k_align
        return op

    def parallel(self, shape: Sequence[int], writes=(), reads=(), compute: str | None = None) -> Op:
        """A ``T.Parallel`` loop nest of ``shape``; ``writes`` / ``reads`` are ``(buffer, fn)`` pairs
        where ``fn(i, j, ...)`` returns the buffer indices (or expression text ``"lambda i, j: ..."``)."""
        loop = check_shape(shape, "parallel loop shape")
        what = f"parallel#{self._uid}"
        accesses = []
        for is_write, group in ((True, writes), (False, reads)):
            for buf, fn in group:
                self._own(buf)
                accesses.append(Access(buf.name, validate.loop_indices(buf, fn, loop, what), is_write))
        return self._emit("parallel", {} if compute is None else {"compute": str(compute)}, loop, accesses)

    def fill(self, buf: Buffer | Region, value: float = 0.0) -> Op:
        r = self._own(buf)
        ext = r.extents if r.extents is not None else r.buffer.shape
        acc = _region_access(r.buffer, (r.starts, tuple(ext)), tuple(ext), True)
        args = {"dst": r.buffer.name, "value": float(value)}
        if self.is_ascend:
            args["fill_region"] = tuple((int(s), int(e)) for s, e in zip(r.starts, ext))
        return self._emit("fill", args, tuple(ext), (acc,))

    def clear(self, buf: Buffer | Region) -> Op:
        return self.fill(buf, 0.0)

    def reduce(self, src: Buffer, dst: Buffer, dim: int = -1, kind: str = "sum", clear: bool = True) -> Op:
        self._own(src)
        self._own(dst)
        d = validate.reduce(src, dst, dim, kind, f"reduce#{self._uid}")
        return self._emit("reduce", {"src": src.name, "dst": dst.name, "dim": d, "kind": kind,
                                     "clear": bool(clear)})

    def transpose(self, src: Buffer, dst: Buffer) -> Op:
        self._own(src)
        self._own(dst)
        validate.transpose(src, dst, f"transpose#{self._uid}")
        n, m = src.shape
        i, j = placeholder(0, n), placeholder(1, m)
        acc = (Access(src.name, (i, j), False), Access(dst.name, (j, i), True))
        return self._emit("transpose", {"src": src.name, "dst": dst.name}, (n, m), acc)

    def atomic_add(self, dst: Buffer | Region, src: Buffer | Region | float, return_prev: bool = False) -> Op:
        """Tile form ``atomic_add(dst_region, src_region)`` or scalar form ``atomic_add(dst[point], value,
        return_prev=...)``; only the scalar form may return the previous value."""
        what = f"atomic_add#{self._uid}"
        d = self._own(dst)
        if isinstance(src, (int, float)):
            validate.atomic_scalar(d, what)
            return self._emit("atomic_add", {"dst": d.buffer.name, "starts": list(d.starts), "value": float(src),
                                             "return_prev": bool(return_prev)})
        if return_prev:
            raise validate.OpValidationError(f"{what}: the tile-region form of atomic_add cannot return the "
                                             f"previous value (only the scalar form can)", what, d.buffer.name)
        s = self._own(src)
        sr, dr, loop = validate.copy_regions(s, d, what)
        accesses = (_region_access(s.buffer, sr, loop, False), _region_access(d.buffer, dr, loop, True))
        return self._emit("atomic_add", {"src": s.buffer.name, "dst": d.buffer.name, "src_region": sr,
                                         "dst_region": dr}, loop, accesses)

    def annotate_layout(self, mapping: dict) -> None:
        """``{buffer: Layout}``: strict layouts inference can never override."""
        for buf, layout in mapping.items():
            self._own(buf)
            if not isinstance(layout, Layout):
                raise ShapeError(f"annotate_layout: {buf.name} needs a Layout or Fragment; found {type(layout)}")
            self.annotations[buf.name] = layout

    @contextmanager
    def pipelined(self, num_stages: int = 2) -> Iterator[Program]:
        """Shared buffers written inside get a leading stage dim of ``num_stages`` (when > 1)."""
        old, self._stage = self._stage, validate.positive(num_stages, "num_stages")
        try:
            yield self
        finally:
            self._stage = old

    # ---- Ascend ---------------------------------------------------------------------------------
    def _ascend_copy(self, kind: str, s: Region, d: Region) -> Op:
        """Ascend copies: a GM side may run past the tensor's end (``insert_oob_padding`` clamps it)."""
        what = f"{kind}#{self._uid}"
        sr, dr, loop = _ascend_regions(s, d, what)
        args = {"src": s.buffer.name, "dst": d.buffer.name, "src_region": sr, "dst_region": dr,
                "cast": s.buffer.dtype != d.buffer.dtype}
        if self._atomic is not None and d.buffer.scope == "gm":
            args["atomic"] = self._atomic.args["mode"]
        accesses = (_region_access(s.buffer, sr, loop, False), _region_access(d.buffer, dr, loop, True))
        return self._emit(kind, args, loop, accesses)

    def dual_copy(self, src: Buffer | Region, dst: Buffer | Region) -> Op:
        """One move, two vector cores each take half: exactly one trailing dim is split 2:1 between the
        full side and the per-core side (``split`` is ``"M"`` for dim -2, ``"N"`` for dim -1).  Only
        L0C->UB, GM->UB, UB->GM and UB->L1; L0C->UB needs rank >= 2 and an N split needs N % 32 == 0.

        >>> p = Program(target="ascend")
        >>> c = p.alloc("c", (128, 64), "float32", "l0c"); u = p.alloc("u", (64, 64), "float32", "ub")
        >>> p.dual_copy(c, u).args["split"]
        'M'
        """
        if not self.is_ascend:
            raise validate.OpValidationError(f"dual_copy#{self._uid}: dual_copy needs target='ascend'",
                                             f"dual_copy#{self._uid}")
        s, d = self._own(src), self._own(dst)
        what = f"dual_copy#{self._uid}"
        path = (s.buffer.scope, d.buffer.scope)
        if path not in DUAL_COPY_PATHS:
            raise validate.OpValidationError(f"{what}: dual_copy supports only L0C->UB, GM->UB, UB->GM, UB->L1; "
                                             f"found {path[0]}->{path[1]}", what, d.buffer.name)
        se = s.extents if s.extents is not None else s.buffer.shape
        de = d.extents if d.extents is not None else d.buffer.shape
        if path == ("l0c", "ub") and (len(se) < 2 or len(de) < 2):
            raise validate.OpValidationError(f"{what}: L0C->UB dual_copy needs rank >= 2", what, d.buffer.name)
        if path == ("l0c", "ub") and s.buffer.dtype != d.buffer.dtype:
            raise validate.OpValidationError(f"{what}: the L0C->UB fixpipe of dual_copy does not convert types "
                                             f"({s.buffer.dtype} -> {d.buffer.dtype})", what, d.buffer.name)
        if len(se) != len(de):
            raise validate.OpValidationError(f"{what}: dual_copy sides differ in rank: {se} vs {de}", what,
                                             d.buffer.name)
        full, half = (se, de) if s.buffer.scope != "ub" else (de, se)
        split = [k for k in range(max(0, len(full) - 2), len(full)) if full[k] == 2 * half[k]]
        same = all(full[k] == half[k] for k in range(len(full)) if k not in split)
        if len(split) != 1 or not same:
            raise validate.OpValidationError(f"{what}: exactly one trailing dim must split 2:1 between {full} and "
                                             f"{half}", what, d.buffer.name)
        axis = "N" if split[0] == len(full) - 1 else "M"
        if path == ("l0c", "ub") and axis == "N" and full[-1] % 32:
            raise validate.OpValidationError(f"{what}: an N split of L0C->UB needs N % 32 == 0; found N = "
                                             f"{full[-1]}", what, d.buffer.name)
        op = self._emit("dual_copy", {"src": s.buffer.name, "dst": d.buffer.name,
                                      "src_region": (tuple(s.starts), tuple(se)),
                                      "dst_region": (tuple(d.starts), tuple(de)), "split": axis})
        if self._atomic is not None and d.buffer.scope == "gm":
            op.args["atomic"] = self._atomic.args["mode"]
        return op

    def set_atomic(self, mode: str, dtype) -> Op:
        """Turn on the atomic store mode (``"add"``): copies into GM accumulate until
        :meth:`set_atomic_none`.  A kernel must not end with it on (:meth:`check_end`)."""
        if mode not in ("add", "max", "min"):
            raise validate.OpValidationError(f"set_atomic#{self._uid}: unknown atomic mode {mode!r}",
                                             f"set_atomic#{self._uid}")
        op = self._emit("set_atomic", {"mode": str(mode), "dtype": canonical_dtype(dtype)})
        self._atomic = op
        return op

    def set_atomic_none(self) -> Op:
        self._atomic = None
        return self._emit("set_atomic", {"mode": "none", "dtype": None})

    def check_end(self) -> None:
        """Raise :class:`~layoutkit.infer.OpValidationError` when the kernel ends in atomic mode.

        >>> p = Program(target="ascend")
        >>> _ = p.set_atomic("add", "float32")
        >>> try:
        ...     p.check_end()
        ... except validate.OpValidationError as e:
        ...     print(e.op)
        set_atomic#0
        """
        last = None
        for op in self.ops:
            if op.kind == "set_atomic":
                last = op
        if last is not None and last.args["mode"] != "none":
            raise validate.OpValidationError(f"{last.name}: the kernel ends with atomic mode {last.args['mode']!r} "
                                             f"still on; call set_atomic_none()", last.name)

    @contextmanager
    def simt_vf(self, threads=128) -> Iterator[Program]:
        """A SIMT vector region with its own lane scope (``threads``: int or up to 3 dims, missing dims 1);
        opaque to the outer worklist, its ops are inferred with ``threads`` lanes."""
        dims = (threads,) if isinstance(threads, int) else tuple(threads)
        if not 1 <= len(dims) <= 3:
            raise ShapeError(f"simt_vf: threads takes at most 3 dims; found {threads!r}")
        dims = tuple(validate.positive(t, "simt_vf threads") for t in dims) + (1,) * (3 - len(dims))
        with self._vf("simt", dims):
            yield self

    @contextmanager
    def simd_vf(self) -> Iterator[Program]:
        """A SIMD vector region (no thread dims)."""
        with self._vf("simd", (1, 1, 1)):
            yield self

    @contextmanager
    def _vf(self, mode: str, dims: tuple[int, ...]) -> Iterator[None]:
        if not self.is_ascend:
            raise ShapeError(f"{mode}_vf regions need target='ascend'; found {self.target!r}")
        if self._region_stack:
            raise ShapeError(f"{mode}_vf: vector regions do not nest")
        body: list[Op] = []
        self._region_stack.append(body)
        try:
            yield
        finally:
            self._region_stack.pop()
        uid = self._uid
        self._uid += 1
        self.regions[uid] = body
        names = tuple(dict.fromkeys(b for op in body for b in op.buffers))
        self.ops.append(Op("vf", uid, {"mode": mode, "threads": list(dims)}, None, (), names))

    # ---- JSON -----------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        ops = [_op_dict(op) for op in self.ops]
        ann = {}
        for name, lay in self.annotations.items():
            ann[name] = _layout_dict(lay)
        out = {"threads": self.threads, "target": self.target,
               "buffers": [b.to_dict() for b in self.buffers.values()], "stages": dict(self.stages),
               "ops": ops, "annotations": ann}
        if self.regions:
            out["regions"] = {str(k): [_op_dict(op) for op in v] for k, v in self.regions.items()}
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Program:
        """Rebuild a program; index expressions are parsed by the safe parser."""
        try:
            d = json.loads(text)
        except json.JSONDecodeError as err:
            raise ShapeError(f"Program.from_json: not JSON ({err.msg})") from None
        p = cls(d["threads"], d["target"])
        for b in d["buffers"]:
            p._add(b["name"], b["shape"], b["dtype"], b["scope"], b.get("alias_of"))
        p.stages = {k: int(v) for k, v in d.get("stages", {}).items()}
        for k, body in d.get("regions", {}).items():
            p.regions[int(k)] = [_op_from(o, p) for o in body]
        for o in d["ops"]:
            if o["kind"] == "vf":
                body = p.regions.get(int(o["uid"]), [])
                op = Op("vf", int(o["uid"]), dict(o["args"]), None, (),
                        tuple(dict.fromkeys(b for x in body for b in x.buffers)))
            else:
                op = _op_from(o, p)
            p.ops.append(op)
            p._uid = max(p._uid, int(o["uid"]) + 1)
        for body in p.regions.values():
            for op in body:
                p._uid = max(p._uid, op.uid + 1)
        for name, ld in d.get("annotations", {}).items():
            p.annotations[name] = _layout_from(ld)
        return p


def _op_dict(op: Op) -> dict:
    d = {"kind": op.kind, "uid": op.uid, "args": _jsonable(op.args)}
    if op.loop is not None:
        d["loop"] = list(op.loop)
        d["accesses"] = [{"buffer": a.buffer, "indices": [str(e) for e in a.indices],
                          "write": a.is_write} for a in op.accesses]
    return d


def _op_from(o: dict, p: Program) -> Op:
    loop = tuple(o["loop"]) if o.get("loop") is not None else None
    accesses: tuple[Access, ...] = ()
    if loop is not None:
        names = {f"_{c}": placeholder(k, e) for k, (c, e) in enumerate(zip("ijklmnopqrstuvwxyz", loop))}
        accesses = tuple(Access(a["buffer"], tuple(parse_expr(t, names) for t in a["indices"]), a["write"])
                         for a in o["accesses"])
        for a in accesses:
            if a.buffer not in p.buffers:
                raise ShapeError(f"{o['kind']}#{o['uid']}: unknown buffer {a.buffer!r}")
    args = {k: (tuple(tuple(x) for x in v) if k.endswith("_region") and v is not None else v)
            for k, v in o["args"].items()}
    return Op(o["kind"], int(o["uid"]), args, loop, accesses,
              tuple(dict.fromkeys([a.buffer for a in accesses] + [
                  v for k, v in args.items() if k in ("A", "B", "C", "src", "dst")])))


def _ascend_regions(s: Region, d: Region, what: str):
    """``validate.copy_regions`` with a GM side allowed past the tensor's end (starts stay >= 0)."""
    full_s = validate._complete(s, d, what) if s.extents is not None or d.extents is not None else None
    full_d = validate._complete(d, s, what) if full_s is not None else None
    if full_s is None:
        return validate.copy_regions(s, d, what)
    for (starts, _e), b in ((full_s, s.buffer), (full_d, d.buffer)):
        if any(lo < 0 or lo >= n for lo, n in zip(starts, b.shape)):
            raise validate.OpValidationError(f"{what}: region start {list(starts)} lies outside {b.name} {b.shape}",
                                             what, b.name)
    se = tuple(e for e in full_s[1] if e != 1)
    de = tuple(e for e in full_d[1] if e != 1)
    if se != de:
        raise validate.OpValidationError(f"{what}: copy extents differ: {s.buffer.name} {full_s[1]} vs "
                                         f"{d.buffer.name} {full_d[1]}", what, d.buffer.name)
    for r, full in ((s, full_s), (d, full_d)):
        if r.buffer.scope != "gm":
            for k, (lo, e, n) in enumerate(zip(*full, r.buffer.shape)):
                if lo + e > n:
                    raise validate.OpValidationError(f"{what}: region [{lo}:{lo + e}] of dim {k} lies outside "
                                                     f"{r.buffer.name} {r.buffer.shape}", what, r.buffer.name)
    return full_s, full_d, (se or (1,))


def _ascend_gemm_check(A: Buffer, B: Buffer, C: Buffer, args: dict, what: str) -> None:
    """Ascend MAD operands: A in l0a (or l1), B in l0b (or l1), C in l0c; M/N/K as :func:`validate.gemm`."""
    for b, name, scopes in ((A, "A", ("l0a", "l1")), (B, "B", ("l0b", "l1")), (C, "C", ("l0c",))):
        if b.scope not in scopes:
            raise validate.OpValidationError(f"{what}: operand {name} ({b.name}) must live in {' or '.join(scopes)}; "
                                             f"found scope {b.scope}", what, b.name)
    fake_c = Buffer(C.name, C.shape, C.dtype, FRAGMENT)
    validate.gemm(A, B, fake_c, args, what)


def _region_access(buf: Buffer, region, loop: tuple[int, ...], is_write: bool) -> Access:
    """Indices of a copy side: unit dims stay at their start, the others take the loop vars in order
    (TileLang drops unit extents when it builds a copy's loop nest)."""
    starts, extents = region
    loop_vars = [placeholder(d, e) for d, e in enumerate(loop)]
    k = 0
    idx: list[Expr] = []
    for s, e in zip(starts, extents):
        if e == 1:
            idx.append(as_expr(s))
            continue
        idx.append(loop_vars[k] + s if s else loop_vars[k])
        k += 1
    return Access(buf.name, tuple(idx), is_write)


def _jsonable(args: dict) -> dict:
    return {k: ([list(x) for x in v] if k.endswith("_region") else v) for k, v in args.items()}


def _layout_dict(lay: Layout) -> dict:
    from ..fragment.fragment import Fragment

    d = {"shape": list(lay.input_shape), "index": [str(e) for e in lay.forward_index]}
    if isinstance(lay, Fragment):
        d.update(thread=str(lay.forward_thread), replicate=lay.replicate_size,
                 thread_range=None if lay.thread_range is None else list(lay.thread_range))
    return d


def _layout_from(d: dict) -> Layout:
    from ..fragment.fragment import Fragment, rep_var

    shape = check_shape(d["shape"])
    names: dict = {f"_{c}": placeholder(k, e) for k, (c, e) in enumerate(zip("ijklmnopqrstuvwxyz", shape))}
    if "thread" in d:
        names["_rep"] = rep_var(int(d["replicate"]))
        tr = d.get("thread_range")
        return Fragment.from_exprs(shape, [parse_expr(t, names) for t in d["index"]], parse_expr(d["thread"], names),
                                   int(d["replicate"]), None if tr is None else tuple(tr))
    return Layout.from_exprs(shape, [parse_expr(t, names) for t in d["index"]])


IndexFn = Callable[..., object]
