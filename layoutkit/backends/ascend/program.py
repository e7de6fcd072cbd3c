"""The Ascend op builders (``Program(target="ascend")``): the cube GEMM :func:`mad`, :func:`dual_copy`, the atomic
store mode (:func:`set_atomic` ... :func:`set_atomic_none`), vector regions (``with p.simt_vf(threads=...)`` /
``with p.simd_vf()``), and the Ascend forms of copy, GEMM checks and fill.  Registered as extra
:class:`~layoutkit.infer.Program` methods, so ``p.mad(...)`` calls :func:`mad` with ``p``.  GM sides of Ascend
copies may run past the tensor's end until ``insert_oob_padding`` clamps them (see :mod:`.passes`).

>>> from layoutkit.infer import Program
>>> p = Program(target="ascend")
>>> a = p.alloc("a", (32, 16), "float16", "l0a"); b = p.alloc("b", (16, 32), "float16", "l0b")
>>> c = p.alloc("c", (32, 32), "float32", "l0c")
>>> p.mad(a, b, c, k_align=16).args["k_align"]
16
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ...dtypes import canonical_dtype
from ...errors import ShapeError
from ...infer import schema, validate
from ...infer.ops import Buffer, Op, Region, region_access
from ...infer.program import Program
from ...infer.tileop import TileOp
from ...scopes import FRAGMENT
from .scopes import ASCEND_SCOPES, GM, L0A, L0B, L0C, L1, UB  # noqa: F401  (ASCEND_SCOPES: re-exported)

"""Ascend memories (``target="ascend"``): global memory, the vector unified buffer, the cube L1 and the
L0A/L0B/L0C operand and accumulator buffers."""
DUAL_COPY_PATHS = ((L0C, UB), (GM, UB), (UB, GM), (UB, L1))


def is_ascend(p: Program) -> bool:
    return p.target == "ascend"


def mad(p: Program, A: Buffer, B: Buffer, C: Buffer, transpose_A: bool = False, transpose_B: bool = False,
        clear_accum: bool = False, k_align: int = 1) -> Op:
    """Ascend cube GEMM (MAD): ``C (l0c) += A (l0a) @ B (l0b)``; ``k_align > 1`` (block-scaled GEMM)
    requires the K extent of A and B to be a static multiple of it."""
    if not is_ascend(p):
        raise validate.OpValidationError(f"gemm#{p.next_uid}: mad needs target='ascend'", f"gemm#{p.next_uid}")
    k_align = validate.positive(k_align, f"gemm#{p.next_uid} k_align")
    op = p.gemm(A, B, C, transpose_A, transpose_B, "square", clear_accum)
    op.args["k_align"] = k_align
    return op


def ascend_copy(p: Program, kind: str, s: Region, d: Region) -> Op:
    """Ascend copies: a GM side may run past the tensor's end (``insert_oob_padding`` clamps it)."""
    what = f"{kind}#{p.next_uid}"
    sr, dr, loop = ascend_regions(s, d, what)
    args = {"src": s.buffer.name, "dst": d.buffer.name, "src_region": sr, "dst_region": dr,
            "cast": s.buffer.dtype != d.buffer.dtype}
    if "atomic" in p.modes and d.buffer.scope == GM:
        args["atomic"] = p.modes["atomic"].args["mode"]
    accesses = (region_access(s.buffer, sr, loop, False), region_access(d.buffer, dr, loop, True))
    return p.emit(kind, args, loop, accesses)


def dual_copy(p: Program, src: Buffer | Region, dst: Buffer | Region) -> Op:
    """One move, two vector cores each take half: exactly one trailing dim is split 2:1 between the
    full side and the per-core side (``split`` is ``"M"`` for dim -2, ``"N"`` for dim -1).  Only
    L0C->UB, GM->UB, UB->GM and UB->L1; L0C->UB needs rank >= 2 and an N split needs N % 32 == 0.

    >>> p = Program(target="ascend")
    >>> c = p.alloc("c", (128, 64), "float32", "l0c"); u = p.alloc("u", (64, 64), "float32", "ub")
    >>> p.dual_copy(c, u).args["split"]
    'M'
    """
    if not is_ascend(p):
        raise validate.OpValidationError(f"dual_copy#{p.next_uid}: dual_copy needs target='ascend'",
                                         f"dual_copy#{p.next_uid}")
    s, d = p.own(src), p.own(dst)
    what = f"dual_copy#{p.next_uid}"
    path = (s.buffer.scope, d.buffer.scope)
    if path not in DUAL_COPY_PATHS:
        raise validate.OpValidationError(f"{what}: dual_copy supports only L0C->UB, GM->UB, UB->GM, UB->L1; "
                                         f"found {path[0]}->{path[1]}", what, d.buffer.name)
    se = s.extents if s.extents is not None else s.buffer.shape
    de = d.extents if d.extents is not None else d.buffer.shape
    if path == (L0C, UB) and (len(se) < 2 or len(de) < 2):
        raise validate.OpValidationError(f"{what}: L0C->UB dual_copy needs rank >= 2", what, d.buffer.name)
    if path == (L0C, UB) and s.buffer.dtype != d.buffer.dtype:
        raise validate.OpValidationError(f"{what}: the L0C->UB fixpipe of dual_copy does not convert types "
                                         f"({s.buffer.dtype} -> {d.buffer.dtype})", what, d.buffer.name)
    if len(se) != len(de):
        raise validate.OpValidationError(f"{what}: dual_copy sides differ in rank: {se} vs {de}", what,
                                         d.buffer.name)
    full, half = (se, de) if s.buffer.scope != UB else (de, se)
    split = [k for k in range(max(0, len(full) - 2), len(full)) if full[k] == 2 * half[k]]
    same = all(full[k] == half[k] for k in range(len(full)) if k not in split)
    if len(split) != 1 or not same:
        raise validate.OpValidationError(f"{what}: exactly one trailing dim must split 2:1 between {full} and "
                                         f"{half}", what, d.buffer.name)
    axis = "N" if split[0] == len(full) - 1 else "M"
    if path == (L0C, UB) and axis == "N" and full[-1] % 32:
        raise validate.OpValidationError(f"{what}: an N split of L0C->UB needs N % 32 == 0; found N = "
                                         f"{full[-1]}", what, d.buffer.name)
    op = p.emit("dual_copy", {"src": s.buffer.name, "dst": d.buffer.name,
                                  "src_region": (tuple(s.starts), tuple(se)),
                                  "dst_region": (tuple(d.starts), tuple(de)), "split": axis})
    if "atomic" in p.modes and d.buffer.scope == GM:
        op.args["atomic"] = p.modes["atomic"].args["mode"]
    return op


def set_atomic(p: Program, mode: str, dtype) -> Op:
    """Turn on the atomic store mode (``"add"``): copies into GM accumulate until
    :meth:`set_atomic_none`.  A kernel must not end with it on (:meth:`check_end`)."""
    if mode not in ("add", "max", "min"):
        raise validate.OpValidationError(f"set_atomic#{p.next_uid}: unknown atomic mode {mode!r}",
                                         f"set_atomic#{p.next_uid}")
    op = p.emit("set_atomic", {"mode": str(mode), "dtype": canonical_dtype(dtype)})
    p.modes["atomic"] = op
    return op


def set_atomic_none(p: Program) -> Op:
    p.modes.pop("atomic", None)
    return p.emit("set_atomic", {"mode": "none", "dtype": None})


def check_end(p: Program) -> None:
    """Raise :class:`~layoutkit.infer.OpValidationError` when the kernel ends in atomic mode (``p.check_end()``).

    >>> p = Program(target="ascend")
    >>> _ = p.set_atomic("add", "float32")
    >>> try:
    ...     p.check_end()
    ... except validate.OpValidationError as e:
    ...     print(e.op)
    set_atomic#0
    """
    last = None
    for op in p.ops:
        if op.kind == "set_atomic":
            last = op
    if last is not None and last.args["mode"] != "none":
        raise validate.OpValidationError(f"{last.name}: the kernel ends with atomic mode {last.args['mode']!r} "
                                         f"still on; call set_atomic_none()", last.name)

@contextmanager
def simt_vf(p: Program, threads=128) -> Iterator[Program]:
    """A SIMT vector region with its own lane scope (``threads``: int or up to 3 dims, missing dims 1);
    opaque to the outer worklist, its ops are inferred with ``threads`` lanes."""
    dims = (threads,) if isinstance(threads, int) else tuple(threads)
    if not 1 <= len(dims) <= 3:
        raise ShapeError(f"simt_vf: threads takes at most 3 dims; found {threads!r}")
    dims = tuple(validate.positive(t, "simt_vf threads") for t in dims) + (1,) * (3 - len(dims))
    with _vf(p, "simt", dims):
        yield p


@contextmanager
def simd_vf(p: Program) -> Iterator[Program]:
    """A SIMD vector region (no thread dims)."""
    with _vf(p, "simd", (1, 1, 1)):
        yield p


def _vf(p: Program, mode: str, dims: tuple[int, ...]):
    if not is_ascend(p):
        raise ShapeError(f"{mode}_vf regions need target='ascend'; found {p.target!r}")
    return p.region("vf", {"mode": mode, "threads": list(dims)}, label=f"{mode}_vf: vector")


def ascend_regions(s: Region, d: Region, what: str):
    """``validate.copy_regions`` with a GM side allowed past the tensor's end (starts stay >= 0)."""
    full_s = validate.complete_region(s, d, what) if s.extents is not None or d.extents is not None else None
    full_d = validate.complete_region(d, s, what) if full_s is not None else None
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
        if r.buffer.scope != GM:
            for k, (lo, e, n) in enumerate(zip(*full, r.buffer.shape)):
                if lo + e > n:
                    raise validate.OpValidationError(f"{what}: region [{lo}:{lo + e}] of dim {k} lies outside "
                                                     f"{r.buffer.name} {r.buffer.shape}", what, r.buffer.name)
    return full_s, full_d, (se or (1,))


def check_gemm(A: Buffer, B: Buffer, C: Buffer, args: dict, what: str) -> None:
    """Ascend MAD operands: A in l0a (or l1), B in l0b (or l1), C in l0c; M/N/K as :func:`validate.gemm`."""
    for b, name, scopes in ((A, "A", (L0A, L1)), (B, "B", (L0B, L1)), (C, "C", (L0C,))):
        if b.scope not in scopes:
            raise validate.OpValidationError(f"{what}: operand {name} ({b.name}) must live in {' or '.join(scopes)}; "
                                             f"found scope {b.scope}", what, b.name)
    for key in ("A_region", "B_region"):
        if args.get(key) is not None:
            raise validate.OpValidationError(f"{what}: operand {key[0]} is a sub-region {args[key]}; Ascend MAD "
                                             f"operands are whole buffers", what, A.name if key[0] == "A" else B.name)
    fake_c = Buffer(C.name, C.shape, C.dtype, FRAGMENT)
    validate.gemm(A, B, fake_c, args, what)


_REGION = schema.nullable(schema.region)

TILE_OPS = (
    TileOp("dual_copy", (("dual_copy", dual_copy),), required=("src", "dst", "src_region", "dst_region", "split"),
           argument_types=(("src_region", _REGION), ("dst_region", _REGION), ("split", schema.NAME),
                           ("atomic", schema.NAME))),
    TileOp("set_atomic", (("set_atomic", set_atomic), ("set_atomic_none", set_atomic_none)), required=("mode",),
           argument_types=(("mode", schema.NAME), ("dtype", schema.nullable(schema.NAME)))),
    TileOp("vf", (("simt_vf", simt_vf), ("simd_vf", simd_vf)), required=("mode", "threads"),
           argument_types=(("mode", schema.NAME), ("threads", schema.array(schema.EXTENT, 3, 3)))),
    TileOp("scatter"),
    TileOp("post_copy"),
)
"""The Ascend tile ops (their rules are the backend's, :mod:`.rules`): the split vector-core copy, the atomic
store mode, the vector regions (a region op: its body is ``program.regions[uid]``) and the two halves of a
copy the passes split (``scatter`` / ``post_copy``, :mod:`.passes`: no builder)."""
