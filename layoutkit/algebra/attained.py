"""Which node intervals are attained: exact minima and maxima without evaluating the domain.

Every node stores an interval ``[lo, hi]`` that contains its values (:mod:`.nodes`); it is often
wider than the values (``(i * 3 + 7) % 16`` over ``i < 6`` is at most 13, not 15).  This module proves,
from the structure, when an end of the interval is a value the expression takes, so that
``Layout.output_shape`` (a maximum per output) needs no pass over the domain:

* a variable takes every value of ``[0, extent)``;
* a sum of terms over pairwise disjoint variables attains the sum of the attained ends of its terms
  (the terms vary independently); it takes every value in between when, in order of ``|coeff|``,
  each coefficient is at most one more than the span of the terms before it (mixed-radix digits);
* ``x // c`` attains what ``x`` attains (floor division is monotone);
* ``x % c`` of an ``x`` that takes every value of an interval crossing a multiple of ``c`` attains
  ``0`` and ``c - 1``;
* ``table[x]`` of an ``x`` that takes every value of an interval inside the table attains the smallest
  and the largest entry of that interval (its node interval).

Anything else (products, bitwise operators, variables shared between terms) is "not known", and the
caller evaluates instead.

>>> from layoutkit.algebra import Var
>>> i, j = Var("_i", 6), Var("_j", 10)
>>> attained_range((i * 10 + j) % 6), attained_range((i * 3 + 7) % 16), attained_range((i + j) // 4)
((0, 5), None, (0, 3))
"""

from __future__ import annotations

import math
from typing import NamedTuple

from .nodes import Const, Expr, FloorDiv, FloorMod, Lookup, Sum, Var


class _Known(NamedTuple):
    variables: frozenset[Var]
    lo: bool
    """``node.lo`` is a value of the node."""
    hi: bool
    """``node.hi`` is a value of the node."""
    dense: bool
    """Every integer of ``[node.lo, node.hi]`` is a value (implies ``lo`` and ``hi``)."""


_UNKNOWN = _Known(frozenset(), False, False, False)


def attained_range(e: Expr) -> tuple[int, int] | None:
    """``(min, max)`` of ``e`` over its variables' ranges when the structure proves both, else None."""
    k = _analyse(e, {})
    if k.lo and k.hi:
        return int(e.lo), int(e.hi)
    return None


def attained_ranges(exprs: tuple[Expr, ...]) -> list[tuple[int, int] | None]:
    """:func:`attained_range` of several expressions, sharing the work on a shared DAG."""
    memo: dict[Expr, _Known] = {}
    out: list[tuple[int, int] | None] = []
    for e in exprs:
        k = _analyse(e, memo)
        out.append((int(e.lo), int(e.hi)) if k.lo and k.hi else None)
    return out


def _finite(e: Expr) -> bool:
    # bounds are ints (any size) or float infinities; math.isinf would convert a huge int to float
    return not any(isinstance(b, float) and math.isinf(b) for b in (e.lo, e.hi))


def _analyse(e: Expr, memo: dict[Expr, _Known]) -> _Known:
    hit = memo.get(e)
    if hit is None:
        hit = memo[e] = _known(e, memo) if _finite(e) else _UNKNOWN
    return hit


def _known(e: Expr, memo: dict[Expr, _Known]) -> _Known:
    if isinstance(e, Const):
        return _Known(frozenset(), True, True, True)
    if isinstance(e, Var):
        return _Known(frozenset((e,)), True, True, True)
    if isinstance(e, FloorDiv):
        return _analyse(e.a, memo)
    if isinstance(e, FloorMod):
        a = _analyse(e.a, memo)
        # the simplifier drops a % c whose operand never crosses a multiple of c; check anyway
        if a.dense and e.a.lo // e.c != e.a.hi // e.c:
            return _Known(a.variables, True, True, e.a.hi - e.a.lo + 1 >= e.c)
        return _UNKNOWN
    if isinstance(e, Sum):
        return _sum(e, memo)
    if isinstance(e, Lookup):
        index = _analyse(e.index, memo)
        # the node interval is the entries over the index interval when that lies inside the table
        if index.dense and 0 <= e.index.lo and e.index.hi < len(e.table):
            return _Known(index.variables, True, True, False)
        return _UNKNOWN
    return _UNKNOWN


def _sum(e: Sum, memo: dict[Expr, _Known]) -> _Known:
    seen: frozenset[Var] = frozenset()
    lo = hi = dense = True
    spans: list[tuple[int, float]] = []
    for atom, c in e.terms:
        k = _analyse(atom, memo)
        if not k.variables or k.variables & seen:  # a shared variable: the terms are not independent
            return _UNKNOWN
        seen |= k.variables
        lo &= k.lo if c > 0 else k.hi
        hi &= k.hi if c > 0 else k.lo
        dense &= k.dense
        spans.append((abs(c), atom.hi - atom.lo))
    if dense:
        reach: float = 0
        for c, span in sorted(spans):
            if c > reach + 1:
                dense = False
                break
            reach += c * span
    return _Known(seen, lo, hi, dense)
