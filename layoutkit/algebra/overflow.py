"""Proofs that machine integers cannot overflow while an expression is evaluated.

Every node carries an interval ``[lo, hi]`` valid while each variable lies in ``[0, extent)``; numpy
evaluation in int32 or int64 is exact when every intermediate value (the partial sums of a ``Sum``
included) and every constant operand fits.  :func:`fits` reads the node intervals (once per compiled
program); :func:`fits_values` redoes the interval arithmetic from the intervals the inputs actually
span (inputs outside their variables' ranges, or variables without an extent), in one pass over the
nodes, never over the points.

>>> from layoutkit.algebra import Var
>>> i = Var("_i", 1 << 16)
>>> fits((i * 4096 + 7,), INT32), fits((i * 65536,), INT32), fits((i * (1 << 62),), INT64)
(True, False, False)
>>> k = Var("_k")                                   # no extent: no static proof
>>> fits((k * 8,), INT64), fits_values((k * 8,), (k,), [(0, 1 << 59)], INT64)
(False, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import IntegerOverflowError
from .nodes import And, Const, Expr, FloorDiv, FloorMod, Lookup, Mul, Or, Sum, Var, Xor, int_text

INT32 = 1 << 31
INT64 = 1 << 63

Interval = tuple[float, float]


def topological(exprs: Sequence[Expr]) -> list[Expr]:
    """Every node of ``exprs``, children before parents, each once."""
    order: list[Expr] = []
    seen: set[Expr] = set()
    for root in exprs:
        stack: list[tuple[Expr, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if node in seen:
                continue
            if expanded:
                seen.add(node)
                order.append(node)
                continue
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(node.children()) if c not in seen)
    return order


def _inside(value: float, bound: int) -> bool:
    return -bound <= value < bound


def _node_fits(node: Expr, lo: float, hi: float, child: dict[Expr, Interval], bound: int) -> bool:
    """Whether ``node`` (its value in ``[lo, hi]``, its children's in ``child``) evaluates within ``bound``."""
    if not (_inside(lo, bound) and _inside(hi, bound)):
        return False
    if isinstance(node, Sum):
        # the partial sums are bounded by the sum of the terms' magnitudes; coefficients are operands
        reach = abs(node.const) + sum(abs(c) * max(abs(child[a][0]), abs(child[a][1])) for a, c in node.terms)
        return _inside(reach, bound) and all(_inside(c, bound) for _, c in node.terms)
    if isinstance(node, (FloorDiv, FloorMod)):
        return _inside(node.c, bound)
    return True


def fits(exprs: Sequence[Expr], bound: int) -> bool:
    """Whether evaluating ``exprs`` stays inside ``[-bound, bound)`` when every variable lies in its range."""
    for node in topological(exprs):
        if not _node_fits(node, node.lo, node.hi, {c: (c.lo, c.hi) for c in node.children()}, bound):
            return False
    return True


def fits_values(exprs: Sequence[Expr], variables: Sequence[Var], spans: Sequence[Interval], bound: int) -> bool:
    """:func:`fits` for inputs that span ``spans`` (one ``(min, max)`` per variable) instead of the
    variables' ranges: the intervals are recomputed bottom-up from the inputs' spans."""
    known: dict[Expr, Interval] = dict(zip(variables, spans))
    for node in topological(exprs):
        if node in known:
            if not (_inside(known[node][0], bound) and _inside(known[node][1], bound)):
                return False
            continue
        lo, hi = _interval(node, known)
        if not _node_fits(node, lo, hi, known, bound):
            return False
        known[node] = (lo, hi)
    return True


def _interval(node: Expr, known: dict[Expr, Interval]) -> Interval:
    """``node``'s interval from its children's (a variable that is no input keeps its own range)."""
    if isinstance(node, Const):
        return node.value, node.value
    if isinstance(node, Var):
        return node.lo, node.hi
    if isinstance(node, Sum):
        lo: float = node.const
        hi: float = node.const
        for a, c in node.terms:
            x, y = sorted((known[a][0] * c, known[a][1] * c))
            lo, hi = lo + x, hi + y
        return lo, hi
    if isinstance(node, Mul):
        left, right = (known[x] for x in node.children())
        corners = [x * y for x in left for y in right]
        return (-math.inf, math.inf) if any(math.isnan(v) for v in corners) else (min(corners), max(corners))
    if isinstance(node, FloorDiv):
        span = known[node.children()[0]]
        return _floor(span[0], node.c), _floor(span[1], node.c)
    if isinstance(node, FloorMod):
        return 0, node.c - 1
    if isinstance(node, Lookup):
        # an entry of the table whatever the index (evaluation refuses an index outside the table)
        return node.table.lo, node.table.hi
    if isinstance(node, (And, Or, Xor)):
        # two's complement: the result needs no more bits than the widest operand
        width = max(_bits(v) for x in node.children() for v in known[x])
        lo_all = min(known[x][0] for x in node.children())
        return (0 if lo_all >= 0 else -(2 ** width)), 2 ** width - 1
    return -math.inf, math.inf


def _floor(x: float, c: int) -> float:
    return x if math.isinf(x) else x // c


def _bits(v: float) -> float:
    if math.isinf(v):
        return math.inf
    return int(v if v >= 0 else -v).bit_length()


def narrow_int64(value: Any, what: object) -> NDArray[np.int64]:
    """``value`` (Python ints, possibly an object array of them) as int64, or
    :class:`~layoutkit.errors.IntegerOverflowError` naming the first position outside int64.

    >>> narrow_int64(np.array([1, 2**62], dtype=object), "x").tolist()
    [1, 4611686018427387904]
    >>> narrow_int64(np.array([1, 2**63], dtype=object), "x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    layoutkit.errors.IntegerOverflowError: x evaluates to 9223372036854775808 at (1,), outside int64 ...
    """
    arr = np.asarray(value, dtype=object)
    if arr.size:
        bad = np.flatnonzero(((arr < -INT64) | (arr >= INT64)).reshape(-1))
        if bad.size:
            where = tuple(int(v) for v in np.unravel_index(int(bad[0]), arr.shape))
            got = arr.reshape(-1)[bad[0]]
            raise IntegerOverflowError(
                f"{what} evaluates to {int_text(int(got))} at {where}, outside int64 [-2**63, 2**63): layoutkit "
                f"tables and images are int64 and never wrap", {"expr": what, "at": where, "value": got})
    return arr.astype(np.int64)
