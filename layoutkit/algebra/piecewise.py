"""Exact inverses of tabulated bijections (the inverse of a bijection with no closed form): piecewise, else a table.

A bijection onto a box that digit matching and F2 elimination cannot invert still has an inverse: its
table, read backwards.  This module writes that table as an index expression, so the inverse is a
:class:`~layoutkit.algebra.layout.Layout` like any other (callers substitute into it, evaluate it,
emit it).  Over the row-major offset ``o`` of the output box (``N`` points), input ``d`` is the step
function

    ``x_d(o) = s * (o // P) + x_d(0) + a * u + sum_c (delta_c - a) * [u >= c]``, with ``u = o % P`` and
    ``[u >= c] = (u + P - c) // P``

(or ``(a * o + b) % m`` when the values are that: the inverse of a modular multiplication), where ``P`` is
the least divisor of ``N`` for which ``x_d`` repeats every ``P`` offsets up to the constant
step ``s`` (``P = N`` always does; a map that only scrambles low digits, an xor on the low bits, has a
short period), ``a`` is the most common step ``x_d(u) - x_d(u - 1)`` within a period and ``c`` runs over the
offsets whose step differs from it (a run of ``a``-steps costs nothing, so a map that is affine with a few
breaks stays short).  Law: ``piecewise_inverse(table, box)`` evaluated at ``table[x]`` is ``x`` for every input
``x``.  The expression has one term per break; past :data:`PIECEWISE_LIMIT` breaks (or
:data:`PIECEWISE_WORK_LIMIT` breaks times points, what evaluating it costs) it is refused with a
:class:`~layoutkit.errors.LimitError`.

Past those limits the inverse is the table itself: :func:`lookup_inverse` reads input ``d`` from the column
``d`` of the inverse table at the row-major offset ``o``, a :class:`~layoutkit.algebra.nodes.Lookup` node
(``table#<id>[o]``).  It is exact by construction and costs one gather per point to evaluate, but it has no
closed form: islpy, sympy and TileLang refuse it, and C printers print it only with the array declared
(:func:`~layoutkit.algebra.translate.c_table`).  ``Layout.inverse()`` takes it when the piecewise form is
refused, so a proved bijection always has an inverse.  The same node reads a table forward
(:func:`lookup_exprs`: what ``Layout.from_table`` builds).

>>> import numpy as np
>>> from layoutkit.algebra.nodes import Var
>>> table = np.array([[1], [0], [2]])  # 0 -> 1, 1 -> 0, 2 -> 2
>>> o = Var("_i", 3)
>>> (x,) = piecewise_inverse(table, (3,), (o,))
>>> from layoutkit.algebra.evaluate import compile_numpy
>>> compile_numpy((x,), (o,))(np.arange(3))[0].tolist()
[1, 0, 2]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import LimitError
from .nodes import Const, Expr, Var, add, floordiv, floormod, lookup, make_sum, scale
from .tables import Table

PIECEWISE_LIMIT = 1 << 12
"""Most breaks (offsets where a step differs from the common one), over all inputs, a piecewise inverse
is written with."""
PIECEWISE_WORK_LIMIT = 1 << 25
"""Most breaks times output points: what evaluating the piecewise inverse on its whole box costs."""


def inverse_table(table: NDArray[np.integer[Any]], output_shape: Sequence[int]) -> NDArray[np.int64]:
    """``[N, n]``: the input coordinate of each row-major output offset, for a ``table`` (shape
    ``input_shape + (m,)``) that is a bijection onto ``output_shape`` (the caller has proved it)."""
    input_shape = table.shape[:-1]
    size = math.prod(input_shape)
    flat = np.ravel_multi_index(tuple(np.moveaxis(table.reshape(size, -1), -1, 0)), tuple(output_shape))
    coords = np.stack(np.unravel_index(np.arange(size), input_shape), axis=-1).astype(np.int64) if input_shape \
        else np.zeros((1, 0), dtype=np.int64)
    out = np.empty_like(coords)
    out[flat] = coords
    return out


def piecewise_inverse(table: NDArray[np.integer[Any]], output_shape: Sequence[int], outputs: Sequence[Var],
                      what: str = "inverse") -> tuple[Expr, ...]:
    """One expression per input dim over ``outputs`` (one Var per output dim) that inverts ``table``
    exactly (see the module doc); ``table`` must be a bijection onto ``output_shape``."""
    inv = inverse_table(table, output_shape)
    size = inv.shape[0]
    columns = [inv[:, d] for d in range(inv.shape[1])]
    modular = [_modular(v) for v in columns]
    plans = [_plan(v) if m is None else None for v, m in zip(columns, modular)]
    breaks = sum(len(plan[4]) for plan in plans if plan is not None)
    work = sum(len(plan[4]) * plan[0] for plan in plans if plan is not None)
    if breaks > PIECEWISE_LIMIT or work > PIECEWISE_WORK_LIMIT:
        raise LimitError(f"{what}: the bijection has no closed-form inverse, and its piecewise inverse needs "
                         f"{breaks} breaks over {size} points, past the {PIECEWISE_LIMIT} breaks (and "
                         f"{PIECEWISE_WORK_LIMIT} breaks times points) it is written with; lookup_inverse reads "
                         "the inverse from its table instead",
                         PIECEWISE_LIMIT, breaks)
    out = []
    offset = row_major_offset(outputs, output_shape)
    for plan, mod in zip(plans, modular):
        if mod is not None:
            a, b, m = mod
            out.append(floormod(add(scale(offset, a), Const(b)), Const(m)))
        elif plan is not None:
            out.append(_expression(plan, offset))
    return tuple(out)


def row_major_offset(variables: Sequence[Var], shape: Sequence[int]) -> Expr:
    """``sum_k variables[k] * prod(shape[k+1:])``: the row-major offset of a coordinate of ``shape``.

    >>> print(row_major_offset((Var("_i", 4), Var("_j", 8)), (4, 8)))
    _i * 8 + _j
    """
    offset: Expr = Const(0)
    for k, v in enumerate(variables):
        offset = add(offset, scale(v, math.prod(shape[k + 1:])))
    return offset


def lookup_exprs(rows: NDArray[np.integer[Any]], shape: Sequence[int], variables: Sequence[Var]) -> tuple[Expr, ...]:
    """One expression per column of ``rows`` (``[N, n]``, ``N = prod(shape)``): column ``d`` read at the
    row-major offset of ``variables`` over ``shape`` (a column of one value is that constant).  Law: the
    expressions evaluated at the coordinate of row ``r`` give ``rows[r]``.

    >>> from layoutkit.algebra.evaluate import compile_numpy
    >>> i = Var("_i", 3)
    >>> (x,) = lookup_exprs(np.array([[2], [0], [1]]), (3,), (i,))
    >>> compile_numpy((x,), (i,))(np.arange(3))[0].tolist()
    [2, 0, 1]
    """
    offset = row_major_offset(variables, shape)
    return tuple(lookup(Table(rows[:, d]), offset) for d in range(rows.shape[1]))


def lookup_inverse(table: NDArray[np.integer[Any]], output_shape: Sequence[int],
                   outputs: Sequence[Var]) -> tuple[Expr, ...]:
    """:func:`piecewise_inverse`'s law with no limit on the breaks: input ``d`` is read from the inverse table
    (:func:`inverse_table`) at the row-major offset of ``outputs``.  ``table`` must be a bijection onto
    ``output_shape``.

    >>> from layoutkit.algebra.evaluate import compile_numpy
    >>> o = Var("_i", 4)
    >>> (x,) = lookup_inverse(np.array([[2], [0], [3], [1]]), (4,), (o,))
    >>> compile_numpy((x,), (o,))(np.array([2, 0, 3, 1]))[0].tolist()
    [0, 1, 2, 3]
    """
    return lookup_exprs(inverse_table(table, output_shape), output_shape, outputs)


def _modular(values: NDArray[np.int64]) -> tuple[int, int, int] | None:
    """``(a, b, m)`` with ``values[o] == (a * o + b) % m`` for every offset (the inverse of a modular
    multiplication is one), or None."""
    m = int(values.max()) + 1
    if values.shape[0] < 2 or m < 2:
        return None
    a, b = int(values[1] - values[0]) % m, int(values[0])
    o = np.arange(values.shape[0], dtype=np.int64)
    return (a, b, m) if np.array_equal((o * a + b) % m, values) else None


_Plan = tuple[int, int, int, int, "NDArray[np.intp]", "NDArray[np.int64]"]


def _plan(values: NDArray[np.int64]) -> _Plan:
    """``(period, per_period, start, slope, breaks, jumps)``: with ``o = q * period + u``,
    ``values[o] = per_period * q + start + slope * u + sum(jumps[breaks <= u])``.  The period is the least
    divisor of the size for which the values repeat up to a constant step (a map that only scrambles low
    digits -- an xor on the low bits -- needs breaks for one period only)."""
    size = values.shape[0]
    for period in _divisors(size):
        rows = values.reshape(size // period, period)
        per = int(rows[1, 0] - rows[0, 0]) if rows.shape[0] > 1 else 0
        if np.all(rows - rows[:1] == np.arange(rows.shape[0], dtype=np.int64)[:, None] * per):
            return (period, per) + _steps(values[:period])
    raise AssertionError("unreachable: the whole size is a period")  # pragma: no cover


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def _steps(values: NDArray[np.int64]) -> tuple[int, int, NDArray[np.intp], NDArray[np.int64]]:
    """``(start, slope, breaks, jumps)``: ``values[o] = start + slope * o + sum(jumps[breaks <= o])``."""
    deltas = np.diff(values)
    if deltas.size == 0:
        return int(values[0]), 0, np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.int64)
    steps, counts = np.unique(deltas, return_counts=True)
    slope = int(steps[int(np.argmax(counts))])
    where = np.flatnonzero(deltas != slope) + 1
    return int(values[0]), slope, where, deltas[where - 1] - slope


def _expression(plan: _Plan, offset: Expr) -> Expr:
    period, per_period, start, slope, where, jumps = plan
    low = floormod(offset, Const(period))
    steps = [(floordiv(add(low, Const(period - c)), Const(period)), jump)  # 1 from c on within a period, else 0
             for c, jump in zip(where.tolist(), jumps.tolist())]
    # in the sum's canonical order already (larger coefficients first, then by text; every step has one divisor),
    # so building it sorts a sorted list: linear, not n log n comparisons of expression texts
    steps.sort(key=lambda item: (-item[1], str(item[0])))
    terms = dict(steps)
    for atom, coeff in ((low, slope), (floordiv(offset, Const(period)), per_period)):  # one sum built once
        terms[atom] = terms.get(atom, 0) + coeff
    return make_sum(terms, start)


__all__ = ["PIECEWISE_LIMIT", "PIECEWISE_WORK_LIMIT", "inverse_table", "lookup_exprs", "lookup_inverse",
           "piecewise_inverse", "row_major_offset"]
