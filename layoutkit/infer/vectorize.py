"""The vector width of a ``parallel`` loop, after TileLang's ``VectorizePlanner`` (contiguity analysis).

Every access's element offset is evaluated over the whole loop domain: ``sum(index_k * stride_k)``
(row-major strides of the buffer), or, for a buffer that already has a layout, its physical offset
(the row-major offset over the layout's output, a fragment's register index), as TileLang transforms
indices through the layout map.  Along the innermost loop axis, an access

* is *independent* when its offset does not change along the axis: a load allows any width, a store
  forces scalar code (it would become a broadcast store);
* allows width ``w`` when ``w`` divides the inner extent and every group of ``w`` consecutive points
  either reads one address (a broadcast) or ``w`` consecutive addresses starting at a multiple of
  ``w``; the search starts at ``gcd(inner extent, 128 / element bits)`` and halves.

TileLang proves these facts symbolically; every extent here is static, so they are checked exactly:
an offset affine in the loop vars from one row of the table (its profile along the inner axis is the
same in every row but for alignment, which the outer coefficients decide), any other offset from the
whole table, reduced once over the outer points.
Fragment and per-thread accesses are register traffic: when the loop also touches shared or global
memory they only cap the width when they cannot follow it.  The result divides
``gcd(128, inner extent)``.

>>> from layoutkit.algebra.layout import placeholder
>>> i, j = placeholder(0, 64), placeholder(1, 64)
>>> a = VectorAccess((i, j), (64, 64), 16, True, False)
>>> loop_vector_width((64, 64), (a,))
8
>>> loop_vector_width((64, 64), (a, VectorAccess((i, j), (64, 64), 32, True, True)))
4
>>> loop_vector_width((64, 64), (a, VectorAccess((j, i), (64, 64), 16, True, True)))
1
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..algebra.evaluate import evaluate_columns
from ..algebra.layout import Layout
from ..algebra.nodes import Expr, Var, linear
from ..algebra.shapes import placeholder
from ..caches import memoized

MAX_VECTOR_BITS = 128
"""Widest vector access in bits (TileLang's default ``MaxVectorLoadBits``)."""


@dataclass(frozen=True)
class VectorAccess:
    """One access of a loop: ``indices`` over the loop vars, the buffer ``shape`` (as inference sees
    it), element ``bits``, ``local`` (fragment or per-thread buffer), ``is_write`` and the buffer's
    ``layout`` when it has one (offsets are then physical)."""

    indices: tuple[Expr, ...]
    shape: tuple[int, ...]
    bits: int
    local: bool
    is_write: bool
    layout: Layout | None = None
    align: int = 0
    """A multiple every offset is known to be only up to: the part of the address the indices do not
    show (block or serial loop variables, a runtime stride known by ``T.assume(stride % 8 == 0)``);
    0 when the indices show the whole address."""


def _offsets(loop: tuple[int, ...], acc: VectorAccess) -> np.ndarray:
    """Element offset of every loop point, shaped ``[outer points, inner extent]``."""
    variables = tuple(placeholder(d, n) for d, n in enumerate(loop))
    cols = list(np.indices(loop).reshape(len(loop), -1))
    position = {v: d for d, v in enumerate(variables)}
    if all(e in position for e in acc.indices):  # plain loop vars: the grid's own columns
        coords = [cols[position[e]] for e in acc.indices]
    else:
        coords = list(evaluate_columns(tuple(acc.indices), variables, cols).T)
    # a pipeline stage dim the access does not name: stage 0
    coords = [np.zeros_like(cols[0])] * (len(acc.shape) - len(coords)) + coords
    layout = acc.layout
    if layout is not None and tuple(layout.input_shape) == tuple(acc.shape):
        # the layout's row-major physical offset, evaluated only at the points the loop touches
        # (its whole ``linear_table`` would cover every pipeline stage); coordinates are clipped to
        # the buffer as ``ravel_multi_index(mode="clip")`` would, unless their bounds need no clip
        bounds = [(0, 0)] * (len(acc.shape) - len(acc.indices)) + [(e.lo, e.hi) for e in acc.indices]
        coords = [c if 0 <= lo and hi <= n - 1 else np.clip(c, 0, n - 1)
                  for c, n, (lo, hi) in zip(coords, acc.shape, bounds)]
        outs = evaluate_columns(layout.forward_index, layout.forward_vars, coords).T
        strides = _row_major_strides(layout.output_shape)
        off = sum(o * s for o, s in zip(outs, strides))
    else:
        off = sum(c * s for c, s in zip(coords, _row_major_strides(acc.shape)))
    return np.asarray(off, dtype=np.int64).reshape(-1, loop[-1])


def _row_major_strides(shape) -> list[int]:
    return [math.prod(shape[d + 1:]) for d in range(len(shape))]


_NO_LOW_BIT = 1 << 62
"""The lowest set bit of 0 (every power of two divides it)."""


class _Profile:
    """What the width checks need of an offset table ``[outer points, inner extent]``, reduced over
    the outer points once (every check is then a pass over the inner extent, not the whole table).
    Widths are powers of two (they divide ``gcd(128, inner extent)``).

    ``same[k - 1]``: every row reads one address at ``k - 1`` and ``k``; ``step[k - 1]``: the next
    address; ``low[k]``: the lowest set bit of column ``k`` over the rows (see :func:`_lowest_bits`).

    >>> p = _Profile.of(np.array([[0, 1, 2, 3], [8, 9, 10, 11]]))
    >>> p.can_vectorize(4), p.invariant(2), p.independent()
    (True, False, False)
    >>> q = _Profile.of(np.array([[2, 3, 4, 5]]))
    >>> q.can_vectorize(4), q.can_vectorize(2)
    (False, True)
    """

    def __init__(self, n: int, same: np.ndarray, step: np.ndarray, low: np.ndarray):
        self.n, self.same, self.step, self.low = n, same, step, low
        self._inner = np.arange(1, n) if n > 1 else np.zeros(0, np.int64)

    @classmethod
    def of(cls, off: np.ndarray) -> _Profile:
        """The profile of an offset table."""
        return cls(off.shape[1], (off[:, 1:] == off[:, :-1]).all(axis=0), (off[:, 1:] - off[:, :-1] == 1).all(axis=0),
                   _lowest_bits(off).min(axis=0, initial=_NO_LOW_BIT))

    def invariant(self, width: int) -> bool:
        """Every point reads the address of the first point of its group of ``width`` (floor groups)."""
        return bool(self.same[self._inner % width != 0].all())

    def independent(self) -> bool:
        return bool(self.same.all())

    def can_vectorize(self, width: int) -> bool:
        """``IndicesCanVectorize`` (broadcasts allowed): a divisible extent and, per group, one address
        or ``width`` consecutive aligned addresses."""
        if width == 1:
            return True
        if self.n % width:
            return False
        if self.invariant(width):
            return True
        return bool((self.low[::width] >= width).all() and self.step[self._inner % width != 0].all())


def _lowest_bits(x: np.ndarray) -> np.ndarray:
    """The lowest set bit of each value (:data:`_NO_LOW_BIT` for 0): ``w`` divides ``x`` iff it is ``>= w``."""
    return np.where(x == 0, _NO_LOW_BIT, x & -x)


def _affine_offset(loop: tuple[int, ...], acc: VectorAccess) -> tuple[list[int], int] | None:
    """``(coefficient per loop var, constant)`` of the row-major offset when every index is a loop
    var sum plus a constant and the buffer has no layout of its own; else None."""
    has_layout = acc.layout is not None and tuple(acc.layout.input_shape) == tuple(acc.shape)
    if has_layout or len(acc.indices) > len(acc.shape):
        return None
    position = {placeholder(d, n): d for d, n in enumerate(loop)}
    coeffs, const = [0] * len(loop), 0
    strides = _row_major_strides(acc.shape)[len(acc.shape) - len(acc.indices):]  # a stage dim reads 0
    for e, stride in zip(acc.indices, strides):
        terms, c = linear(e)
        const += c * stride
        for atom, k in terms.items():
            d = position.get(atom) if isinstance(atom, Var) else None
            if d is None:
                return None
            coeffs[d] += k * stride
    return coeffs, const


def _profile(loop: tuple[int, ...], acc: VectorAccess) -> _Profile:
    """:func:`_index_profile`, its alignment capped by the access's ``align``.

    >>> from layoutkit.algebra.layout import placeholder
    >>> j = placeholder(0, 64)
    >>> loop_vector_width((64,), (VectorAccess((j,), (64,), 8, False, False, align=8),))
    8
    """
    prof = _index_profile(loop, acc)
    if acc.align:
        prof.low = np.minimum(prof.low, _lowest_bits(np.int64(acc.align)))
    return prof


def _index_profile(loop: tuple[int, ...], acc: VectorAccess) -> _Profile:
    """The access's :class:`_Profile`.  An affine offset ``c + sum a_d x_d`` needs no table: along
    the inner axis it changes by ``a_last`` everywhere, and the lowest set bit over the outer points
    is that of the first row's value or of an outer ``a_d`` (``x_d`` in ``{0, 1}`` reach both), so
    one row gives the exact profile of the whole table.

    >>> from layoutkit.algebra.layout import placeholder
    >>> i, j = placeholder(0, 64), placeholder(1, 64)
    >>> a = VectorAccess((i, j + 4), (64, 72), 16, False, False)
    >>> p, q = _index_profile((64, 64), a), _Profile.of(_offsets((64, 64), a))
    >>> all((p.same == q.same).tolist() + (p.step == q.step).tolist() + (p.low == q.low).tolist())
    True
    """
    affine = _affine_offset(loop, acc)
    if affine is None:
        return _Profile.of(_offsets(loop, acc))
    coeffs, const = affine
    n = loop[-1]
    outer = [int(_lowest_bits(np.int64(a))) for a, e in zip(coeffs[:-1], loop[:-1]) if e > 1]
    low = np.minimum(_lowest_bits(const + coeffs[-1] * np.arange(n, dtype=np.int64)), min(outer, default=_NO_LOW_BIT))
    return _Profile(n, np.full(n - 1, coeffs[-1] == 0), np.full(n - 1, coeffs[-1] == 1), low)


def _width(acc: VectorAccess, prof: _Profile, base: int, max_bits: int = MAX_VECTOR_BITS) -> int | None:
    """The width one access allows (``None``: it forces scalar code, a store to one address)."""
    lower = math.gcd(base, max(1, max_bits // acc.bits))
    width, invariant = lower, False
    trial = base
    while trial >= max(lower, 1):
        if prof.invariant(trial):
            width, invariant = trial, True
            break
        trial //= 2
    independent = prof.independent()
    if acc.is_write and (invariant or independent):
        return None
    if independent:
        return width
    while width > 1 and not prof.can_vectorize(width):
        width //= 2
    return width


@memoized(maxsize=4096)
def loop_vector_width(loop: tuple[int, ...], accesses: tuple[VectorAccess, ...],
                      max_bits: int = MAX_VECTOR_BITS) -> int:
    """The widest vector every access of the loop allows (1: scalar), an access at most ``max_bits`` wide
    (256 for a global-only loop on sm_100: the target says).  See the module doc."""
    base = math.gcd(max_bits, loop[-1])
    memory: list[int] = []
    deferred: list[tuple[int, _Profile]] = []
    for acc in accesses:
        prof = _profile(loop, acc)
        width = _width(acc, prof, base, max_bits)
        if width is None:
            return 1
        broadcast = not acc.is_write and prof.invariant(max_bits)
        if acc.local or broadcast:
            deferred.append((width, prof))
        else:
            memory.append(width)
    if memory:
        chosen = math.gcd(max_bits, *memory)
        for width, prof in deferred:
            if chosen > width and not prof.can_vectorize(chosen):
                chosen = math.gcd(chosen, width)
    else:
        chosen = math.gcd(max_bits, *(w for w, _ in deferred))
    return math.gcd(base, chosen)
