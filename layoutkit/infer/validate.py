"""Validation of tile operations, as the primitives chapter describes; every violation is an
:class:`OpValidationError` naming the op and the buffer.

>>> from layoutkit.infer import Program
>>> p = Program()
>>> a = p.alloc_fragment("a", (4, 8), "float32")
>>> b = p.alloc_fragment("b", (8, 4), "float32")
>>> try:
...     p.copy(a, b)
... except OpValidationError as e:
...     print(e.op, e.buffer)
copy#0 b
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..algebra.nodes import Expr, as_expr
from ..algebra.parse import parse_index_fn
from ..algebra.shapes import call_index_fn, placeholder
from ..errors import ExprError, ShapeError
from ..scopes import FRAGMENT
from .ops import Buffer, Region

REDUCE_KINDS = ("sum", "abssum", "max", "min", "absmax")


class OpValidationError(ShapeError):
    """A tile op is malformed; ``op`` names it (``copy#3``) and ``buffer`` the buffer concerned."""

    def __init__(self, message: str, op: str, buffer: str | None = None):
        super().__init__(message)
        self.op = op
        self.buffer = buffer


def positive(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ShapeError(f"{what} must be a positive integer; found {value!r}")
    return value


def _found(value: object) -> str:
    return f"{type(value).__name__} {value!r}"


def scalar(value: object, what: str, op: str, buffer: str | None = None) -> float:
    """A fill or atomic value: a real number (Python or numpy; not a bool, a string or None) that a float
    holds; NaN and infinities are values too (``-inf`` starts a max reduction)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise OpValidationError(f"{what}: expected a real number; found {_found(value)}", op, buffer)
    try:
        return float(value)
    except OverflowError:
        raise OpValidationError(f"{what}: expected a number a float holds; found the integer {value} "
                                f"({int(value).bit_length()} bits)", op, buffer) from None


def flag(value: object, what: str, op: str) -> bool:
    """A boolean option (True/False, a numpy bool, or 0/1); strings and None are refused, not read as truthy."""
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, (int, np.integer)) and value in (0, 1)):
        return bool(value)
    raise OpValidationError(f"{what}: expected True or False; found {_found(value)}", op)


def text(value: object, what: str, op: str) -> str:
    """A string option (a reduction kind, a GEMM policy, a compute description)."""
    if not isinstance(value, str):
        raise OpValidationError(f"{what}: expected a string; found {_found(value)}", op)
    return value


def access_pairs(group: object, what: str, op: str) -> tuple[tuple[Any, Any], ...]:
    """A parallel loop's ``writes`` / ``reads``: a sequence of ``(buffer, index function)`` pairs."""
    if isinstance(group, (str, bytes)) or not isinstance(group, Sequence):
        raise OpValidationError(f"{what}: expected a sequence of (buffer, index function) pairs; found "
                                f"{_found(group)}", op)
    for k, pair in enumerate(group):
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise OpValidationError(f"{what}[{k}]: expected a (buffer, index function) pair; found {_found(pair)}",
                                    op)
    return tuple((pair[0], pair[1]) for pair in group)


def mapping(value: object, what: str, op: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise OpValidationError(f"{what}: expected a mapping; found {_found(value)}", op)
    return value


def region_bounds(buf: Buffer, starts: Sequence[int], extents: Sequence[int], what: str) -> None:
    """Every dim of ``buf[starts : starts + extents]`` is non-empty and inside the buffer."""
    for k, (lo, e, n) in enumerate(zip(starts, extents, buf.shape)):
        if lo < 0 or e <= 0 or lo + e > n:
            raise OpValidationError(f"{what}: region [{lo}:{lo + e}] of dim {k} lies outside {buf.name} "
                                    f"{buf.shape}", what, buf.name)


def complete_region(r: Region, other: Region, what: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A start point takes the other side's non-unit extents, right-aligned."""
    if r.extents is not None:
        return r.starts, r.extents
    if other.extents is None:
        raise OpValidationError(f"{what}: both sides are start points; one side needs extents", what,
                                r.buffer.name)
    ext = [e for e in other.extents if e != 1]
    if len(ext) > len(r.starts):
        raise OpValidationError(f"{what}: cannot complete {r.buffer.name}{list(r.starts)} with extents "
                                f"{other.extents}", what, r.buffer.name)
    return r.starts, tuple([1] * (len(r.starts) - len(ext)) + ext)


def _squeezed(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(n for n in shape if n != 1)


def copy_regions(src: Region, dst: Region, what: str):
    """Check a copy's two regions; returns ``(src_region, dst_region, loop_shape)``."""
    whole = (src.extents == src.buffer.shape and not any(src.starts)
             and dst.extents == dst.buffer.shape and not any(dst.starts))
    # shapes that differ by unit dims only copy element for element, as TileLang's copy (which drops them)
    if whole and _squeezed(src.buffer.shape) != _squeezed(dst.buffer.shape):
        raise OpValidationError(f"{what}: whole-buffer copy needs equal shapes; {src.buffer.name} is "
                                f"{src.buffer.shape}, {dst.buffer.name} is {dst.buffer.shape}", what, dst.buffer.name)
    s = complete_region(src, dst, what)
    d = complete_region(dst, src, what)
    for (starts, extents), b in ((s, src.buffer), (d, dst.buffer)):
        region_bounds(b, starts, extents, what)
    se = tuple(e for e in s[1] if e != 1)
    de = tuple(e for e in d[1] if e != 1)
    if se != de:
        raise OpValidationError(f"{what}: copy extents differ: {src.buffer.name} {s[1]} vs {dst.buffer.name} "
                                f"{d[1]}", what, dst.buffer.name)
    return s, d, (se or (1,))


def gemm(A: Buffer, B: Buffer, C: Buffer, args: dict, what: str,
         accumulators: tuple[str, ...] = (FRAGMENT,)) -> tuple[int, int, int]:
    """M/N/K from the last two dims (transpose flags swap the roles) of the operands, or of their
    regions (``args["A_region"]`` / ``args["B_region"]``: starts, extents); C must be in one of the
    ``accumulators`` scopes (a target may add its own, NVIDIA's tensor memory)."""
    for b, name in ((A, "A"), (B, "B"), (C, "C")):
        if len(b.shape) < 2:
            raise OpValidationError(f"{what}: operand {name} ({b.name}) needs rank >= 2; found {b.shape}", what,
                                    b.name)
    a0, a1 = gemm_tile(A.shape, args.get("A_region"))
    b0, b1 = gemm_tile(B.shape, args.get("B_region"))
    M, Ka = (a1, a0) if args["transpose_A"] else (a0, a1)
    Kb, N = (b1, b0) if args["transpose_B"] else (b0, b1)
    if args.get("use_2cta"):  # a two-CTA GEMM: each CTA holds half of B along N
        N *= 2
    if Ka != Kb:
        raise OpValidationError(f"{what}: K differs: A {A.name} {A.shape} gives {Ka}, B {B.name} {B.shape} "
                                f"gives {Kb}", what, B.name)
    if tuple(C.shape[-2:]) != (M, N):
        raise OpValidationError(f"{what}: C {C.name} is {C.shape}; expected [..., {M}, {N}]", what, C.name)
    if C.scope not in accumulators:
        kinds = "a fragment" if accumulators == (FRAGMENT,) else f"in one of {accumulators}"
        raise OpValidationError(f"{what}: C {C.name} must be {kinds}; found scope {C.scope}", what, C.name)
    return M, N, Ka


def gemm_tile(shape: tuple[int, ...], region) -> tuple[int, int]:
    """The last two extents of a GEMM operand: of its region when it has one.

    >>> gemm_tile((2, 64, 64), None), gemm_tile((64, 64), ((0, 32), (64, 32)))
    ((64, 64), (64, 32))
    """
    ext = tuple(shape) if region is None else tuple(region[1])
    return int(ext[-2]), int(ext[-1])


def reduce(src: Buffer, dst: Buffer, dim: int, kind: str, what: str) -> int:
    """Normalise ``dim``; the output drops the axis or keeps it as 1."""
    if not isinstance(kind, str) or kind not in REDUCE_KINDS:
        raise OpValidationError(f"{what}: unknown reduction {kind!r}; expected one of {REDUCE_KINDS}", what, src.name)
    r = len(src.shape)
    if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, (int, np.integer)):
        raise OpValidationError(f"{what}: dim must be an integer axis of {src.name} (rank {r}); found {_found(dim)}",
                                what, src.name)
    dim = int(dim)
    if not -r <= dim < r:
        raise OpValidationError(f"{what}: dim {dim} out of range for {src.name} of rank {r}", what, src.name)
    d = dim % r
    dropped = src.shape[:d] + src.shape[d + 1:]
    kept = src.shape[:d] + (1,) + src.shape[d + 1:]
    if dst.shape not in (dropped or (1,), kept):
        raise OpValidationError(f"{what}: output {dst.name} is {dst.shape}; expected {dropped or (1,)} or {kept}",
                                what, dst.name)
    return d


def swap_last_two(extents: Sequence[int]) -> tuple[int, ...]:
    """``extents`` with its last two entries exchanged (the axes a transpose swaps)."""
    e = tuple(extents)
    return e[:-2] + (e[-1], e[-2])


def transpose_regions(src: Region, dst: Region, what: str):
    """Check a transpose's two regions (TileLang's ``T.transpose``: dst axis ``d`` takes src axis ``d``,
    the last two exchanged, at any rank >= 2); returns ``(src_region, dst_region, loop_shape)``, the loop
    over the src region's non-unit extents in order (``(1,)`` when there are none).  A start point takes
    its extents from the other side; both regions must lie inside their buffers (TileLang guards indices
    past a buffer with a predicate, so the Program, whose accesses are in bounds, takes no such region)."""
    rank = len(src.buffer.shape)
    if rank < 2 or len(dst.buffer.shape) != rank:
        raise OpValidationError(f"{what}: transpose needs {src.buffer.name} and {dst.buffer.name} of one rank >= 2; "
                                f"found {src.buffer.shape} and {dst.buffer.shape}", what, dst.buffer.name)
    if src.extents is None and dst.extents is None:
        raise OpValidationError(f"{what}: both sides are start points; one side needs extents", what, src.buffer.name)
    se = src.extents if src.extents is not None else swap_last_two(dst.extents or ())
    de = dst.extents if dst.extents is not None else swap_last_two(se)
    if tuple(de) != swap_last_two(se):
        raise OpValidationError(f"{what}: {dst.buffer.name} region extents {tuple(de)}; expected {src.buffer.name}'s "
                                f"{tuple(se)} with the last two swapped, {swap_last_two(se)}", what, dst.buffer.name)
    for b, starts, ext in ((src.buffer, src.starts, se), (dst.buffer, dst.starts, de)):
        region_bounds(b, starts, ext, what)
    loop = tuple(e for e in se if e != 1) or (1,)
    return (tuple(src.starts), tuple(se)), (tuple(dst.starts), tuple(de)), loop


def atomic_scalar(dst: Region, what: str) -> None:
    if dst.extents is not None and math.prod(dst.extents) != 1:
        raise OpValidationError(f"{what}: scalar atomic_add needs one element of {dst.buffer.name}; found extents "
                                f"{dst.extents}", what, dst.buffer.name)
    region_bounds(dst.buffer, dst.starts, (1,) * len(dst.starts), what)


def loop_indices(buf: Buffer, fn, loop: tuple[int, ...], what: str) -> tuple[Expr, ...]:
    """Evaluate an index function (callable or lambda text) on the loop placeholders."""
    variables = [placeholder(d, e) for d, e in enumerate(loop)]
    try:
        if isinstance(fn, str):
            fn = parse_index_fn(fn)
        out = call_index_fn(fn, variables, f"{what} index function of {buf.name}")
    except (ExprError, ShapeError) as err:
        raise OpValidationError(f"{what}: bad index function for {buf.name}: {err}", what, buf.name) from None
    out = tuple(as_expr(e) for e in out)
    if len(out) != len(buf.shape):
        raise OpValidationError(f"{what}: {buf.name} has rank {len(buf.shape)}; the index function gives "
                                f"{len(out)} indices", what, buf.name)
    for k, (e, n) in enumerate(zip(out, buf.shape)):
        lo, hi = e.lo, e.hi
        if lo < 0 or hi > n - 1:
            raise OpValidationError(f"{what}: index {e} of {buf.name} dim {k} ranges over [{lo}, {hi}], outside "
                                    f"[0, {n})", what, buf.name)
    return out
