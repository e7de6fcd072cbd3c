"""Loops nested inside a parallel loop nest (``for k in T.serial(16)`` in a ``T.Parallel(16, 16)`` body), as
TileLang 0.1.15's loop planner sees them.

The parallel loop's layout is over its parallel dims only, but TileLang's ``VectorizePlanner`` tracks the
innermost ``For`` it visits, of any kind: an inner serial loop is the axis it vectorises along.  An access
is then judged along that loop's variable (a store that does not move with it, ``C[i, j] += A[i, k] *
B[k, j]``, forces scalar code), and the width divides that loop's extent.  ``ComputePlanCandidate`` counts
the loop's size down the chain of ``For`` bodies: inner loops that are the body itself (not one statement
of several) multiply the size its fragment and padding checks divide.

A parallel op records them in ``args["inner"]``: the inner loops' ``extents`` (outer to inner; the last is
the vector axis), ``chained`` (how many leading ones are such direct bodies) and, per access, its indices
over the parallel dims followed by the inner loops' (placeholders ``_i, _j, ...`` in that order, as
expression text).  The op's own accesses keep the inner variables at 0, as every layout rule reads them.

>>> from layoutkit.infer import Program
>>> p = Program(threads=128)
>>> C = p.alloc_fragment("C", (16, 16), "float32"); A = p.alloc_shared("A", (16, 16), "float32")
>>> op = p.parallel((16, 16), writes=[(C, lambda i, j: (i, j))], reads=[(A, lambda i, j: (i, 0))],
...                 inner={"extents": (16,), "chained": 1, "indices": [lambda i, j, k: (i, j), lambda i, j, k: (i, k)]})
>>> op.args["inner"]["indices"]
[['_i', '_j'], ['_i', '_k']]
>>> vector_domain(op)[0], plan_extent(op)
((16, 16, 16), (16, 16, 16))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..algebra.nodes import Expr
from ..algebra.parse import parse_expr
from ..algebra.shapes import check_shape, placeholder
from ..caches import memoized
from . import validate
from .ops import Buffer, Op

__all__ = ["inner_args", "plan_extent", "vector_domain"]

_NAMES = "ijklmnopqrstuvwxyz"


def inner_args(inner: Mapping, loop: tuple[int, ...], buffers: Sequence[Buffer], what: str) -> dict:
    """The ``args["inner"]`` of a parallel op over ``loop`` whose accesses are to ``buffers`` (writes, then
    reads): ``inner`` maps ``extents`` to the inner loops' extents, ``indices`` to one index function per
    access taking the parallel and the inner loop variables, and ``chained`` (default 0) to the number of
    leading inner loops TileLang counts into the loop's size."""
    validate.mapping(inner, f"{what} inner", what)
    extents = check_shape(inner.get("extents"), f"{what} inner extents")
    full = tuple(loop) + extents
    if len(full) > len(_NAMES):
        raise validate.OpValidationError(f"{what} inner: {len(full)} loop dims in all; at most {len(_NAMES)}", what)
    chained = inner.get("chained", 0)
    if isinstance(chained, bool) or not isinstance(chained, int) or not 0 <= chained <= len(extents):
        raise validate.OpValidationError(f"{what} inner chained: expected an integer in [0, {len(extents)}]; found "
                                         f"{chained!r}", what)
    fns = list(inner.get("indices") or ())
    if len(fns) != len(buffers):
        raise validate.OpValidationError(f"{what} inner indices: one index function per access ({len(buffers)}); "
                                         f"found {len(fns)}", what)
    texts = [[str(e) for e in validate.loop_indices(b, fn, full, f"{what} inner")] for b, fn in zip(buffers, fns)]
    return {"extents": list(extents), "chained": chained, "indices": texts}


def vector_domain(op: Op) -> tuple[tuple[int, ...], tuple[tuple[Expr, ...], ...]]:
    """The loop TileLang's vectoriser plans over and each access's indices in it: the op's own loop and
    accesses, or with ``args["inner"]`` the parallel dims followed by the inner loops."""
    inner = op.args.get("inner")
    if not inner:
        return tuple(op.loop or ()), tuple(a.indices for a in op.accesses)
    full = tuple(op.loop or ()) + tuple(inner["extents"])
    return full, _parsed(full, tuple(tuple(ix) for ix in inner["indices"]))


def plan_extent(op: Op) -> tuple[int, ...]:
    """The dims whose product is the loop size TileLang's partition plan divides (its loop followed by the
    ``chained`` inner loops)."""
    inner = op.args.get("inner") or {}
    return tuple(op.loop or ()) + tuple(inner.get("extents", ()))[:inner.get("chained", 0)]


@memoized(maxsize=256)
def _parsed(full: tuple[int, ...], texts: tuple[tuple[str, ...], ...]) -> tuple[tuple[Expr, ...], ...]:
    names = {f"_{c}": placeholder(k, e) for k, (c, e) in enumerate(zip(_NAMES, full))}
    return tuple(tuple(parse_expr(t, names) for t in ix) for ix in texts)
