"""Exact piecewise inverses of tabulated bijections (the inverse of a bijection with no closed form).

A bijection onto a box that digit matching and F2 elimination cannot invert still has an inverse: its
table, read backwards.  This module writes that table as an index expression, so the inverse is a
:class:`~layoutkit.algebra.layout.Layout` like any other (callers substitute into it, evaluate it,
emit it).  Over the row-major offset ``o`` of the output box (``N`` points), input ``d`` is the step
function

    ``x_d(o) = x_d(0) + a * o + sum_c (delta_c - a) * [o >= c]``, with ``[o >= c] = (o + N - c) // N``

where ``a`` is the most common step ``x_d(o) - x_d(o - 1)`` and ``c`` runs over the offsets whose step
differs from it (a run of ``a``-steps costs nothing, so a map that is affine with a few breaks stays
short).  Law: ``piecewise_inverse(table, box)`` evaluated at ``table[x]`` is ``x`` for every input
``x``.  The expression has one term per break; past :data:`PIECEWISE_LIMIT` breaks (or
:data:`PIECEWISE_WORK_LIMIT` breaks times points, what evaluating it costs) it is refused with a
:class:`~layoutkit.errors.LimitError` that says to invert through the table instead.

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
from .nodes import Const, Expr, Var, add, floordiv, make_sum, scale

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
    offset: Expr = Const(0)
    for k, o in enumerate(outputs):
        offset = add(offset, scale(o, math.prod(output_shape[k + 1:])))
    plans = [_steps(inv[:, d]) for d in range(inv.shape[1])]
    breaks = sum(len(b) for _, _, b, _ in plans)
    if breaks > PIECEWISE_LIMIT or breaks * size > PIECEWISE_WORK_LIMIT:
        raise LimitError(f"{what}: the bijection has no closed-form inverse, and its piecewise inverse needs "
                         f"{breaks} breaks over {size} points, past the {PIECEWISE_LIMIT} breaks (and "
                         f"{PIECEWISE_WORK_LIMIT} breaks times points) it is written with; invert through the "
                         "layout's table() instead",
                         PIECEWISE_LIMIT, breaks)
    return tuple(_expression(start, slope, where, jumps, offset, size) for start, slope, where, jumps in plans)


def _steps(values: NDArray[np.int64]) -> tuple[int, int, NDArray[np.intp], NDArray[np.int64]]:
    """``(start, slope, breaks, jumps)``: ``values[o] = start + slope * o + sum(jumps[breaks <= o])``."""
    deltas = np.diff(values)
    if deltas.size == 0:
        return int(values[0]), 0, np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.int64)
    steps, counts = np.unique(deltas, return_counts=True)
    slope = int(steps[int(np.argmax(counts))])
    where = np.flatnonzero(deltas != slope) + 1
    return int(values[0]), slope, where, deltas[where - 1] - slope


def _expression(start: int, slope: int, where: NDArray[np.intp], jumps: NDArray[np.int64], offset: Expr,
                size: int) -> Expr:
    terms: dict[Expr, int] = {}
    const = start
    lin = scale(offset, slope)
    for c, jump in zip(where.tolist(), jumps.tolist()):
        step = floordiv(add(offset, Const(size - c)), Const(size))  # 1 from offset c on, else 0
        terms[step] = terms.get(step, 0) + jump
    return add(make_sum(terms, const), lin)


__all__ = ["PIECEWISE_LIMIT", "PIECEWISE_WORK_LIMIT", "inverse_table", "piecewise_inverse"]
