"""CuTe composition and complement with C++ CuTe semantics.  Coalesce and filter live in
:mod:`layoutkit.tla.coalesce`, right and left inverses in :mod:`layoutkit.tla.inverses`, divides and
products in :mod:`layoutkit.tla.tiling`.

Semantics follow C++ CuTe (CUTLASS ``include/cute/layout.hpp``) on layouts of static integers;
dynamic (plain) ints are treated by value the same way, so results never depend on whether an
int is static -- only their printing does.  Where C++ CuTe (and pycute) return a silently wrong
layout, layoutkit returns the exact answer or raises a typed error naming the offending modes:

* a composition whose right-hand mode steps across the boundary of a mode of the (coalesced)
  left-hand layout -- C++ checks only a weak divisibility condition -- raises
  :class:`~layoutkit.errors.ShapeError`; where the walk stays inside one mode the exact answer is
  returned even when C++ refuses it statically;
* right-hand modes that share a left-hand mode and carry into the next one are checked
  numerically: the per-mode result is returned only when it equals ``A(B(i))`` everywhere;
* a complement of a non-complementable layout (a stride that is not a multiple of the extent
  the smaller modes cover) raises instead of truncating.

>>> from layoutkit import tla
>>> A = tla.make_layout((tla._6, tla._2), (tla._8, tla._2))
>>> print(tla.composition(A, tla.make_layout((tla._4, tla._3), (tla._3, tla._1))))
((_2,_2),_3):((_24,_2),_8)
>>> print(tla.coalesce(tla.make_layout((tla._2, (tla._1, tla._6)), (tla._1, (tla._6, tla._2)))))
_12:_1
>>> print(tla.complement(tla.make_layout(tla._4, tla._2), tla._24))
(_2,_3):(_1,_8)
>>> print(tla.right_inverse(tla.make_layout((tla._2, tla._4, tla._4, tla._6), (tla._4, tla._1, tla._0, tla._8))))
(_4,_2,_6):(_2,_1,_32)
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ..errors import ShapeError, UnsupportedError
from .coalesce import _bw_coalesce, _coalesce_x, _filtered, _wrap, as_layout, coalesce_shape, concat
from .coord import _crd2idx, idx2crd
from .int_tuple import (
    Int,
    as_int_tuple,
    ceil_div,
    compact_col_major,
    is_int,
    leaves,
    to_str,
)
from .layout import Layout
from .swizzle import ComposedLayout, Swizzle

NUMERIC_CHECK_LIMIT = 1 << 22
"""Largest right-hand domain checked element by element when modes of a composition share a
left-hand mode (beyond it such a composition raises)."""


def _min(a: int, b: int) -> int:
    m = a if a <= b else b
    return m if type(a) is Int and type(b) is Int else int(m)


# ---- composition -------------------------------------------------------------------------------


class _Composer:
    """Composes every leaf ``s:d`` of B with the flat, coalesced A; records which digits of A
    each result mode uses so carries between leaves can be detected."""

    def __init__(self, A: Layout, B: Layout):
        self.A, self.B = A, B
        self.shapes, self.strides = _coalesce_x(A)
        self.usage: dict[int, list[tuple[tuple[int, ...], object, object, int]]] = {}

    def flat_a(self) -> str:
        return f"{_wrap_str(self.shapes)}:{_wrap_str(self.strides)}"

    def tree(self, s: object, d: object, path: tuple[int, ...]) -> tuple[object, object]:
        if type(s) is tuple:
            parts = [self.tree(si, di, path + (k,)) for k, (si, di) in enumerate(zip(s, cast("tuple[object, ...]", d)))]
            return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
        return self.leaf(cast(int, s), cast(int, d), path)

    def leaf(self, s: int, d: int, path: tuple[int, ...]) -> tuple[object, object]:
        if d == 0:
            return s, d
        if d < 0:
            raise UnsupportedError(
                f"composition {self.A} o {self.B}: mode {path} = {to_str(s)}:{to_str(d)} has a negative stride; "
                "layoutkit composes only non-negative right-hand strides"
            )
        shapes, strides = self.shapes, self.strides
        if len(shapes) == 1:
            return s, d * strides[0]
        out_s: list[Any] = []
        out_d: list[Any] = []
        rest_s, rest_d = s, d
        for k in range(len(shapes) - 1):
            a, x = shapes[k], strides[k]
            if rest_s == 1:
                rest_d = ceil_div(rest_d, a)
                continue
            if rest_d >= a:
                if rest_d % a:
                    self.straddle(path, s, d, k, f"its stride {rest_d} (in units of the modes before) is larger than "
                                  f"the mode's size {a} and not a multiple of it")
                rest_d = rest_d // a
                continue
            steps = ceil_div(a, rest_d)
            if rest_s <= steps:
                new = _min(steps, rest_s)
                out_s.append(new)
                out_d.append(rest_d * x)
                self.use(k, path, s, d, (rest_s - 1) * rest_d)
                rest_s = rest_s // new
                rest_d = ceil_div(rest_d, a)
                continue
            if a % rest_d:
                self.straddle(path, s, d, k, f"the mode's size {a} is not a multiple of the step {rest_d}, and "
                              f"{rest_s} steps do not fit in it (only {steps} do)")
            if rest_s % steps:
                self.straddle(path, s, d, k, f"{steps} steps fill the mode but the remaining extent {rest_s} is not "
                              f"a multiple of {steps}")
            new = _min(steps, rest_s)
            out_s.append(new)
            out_d.append(rest_d * x)
            self.use(k, path, s, d, (steps - 1) * rest_d)
            rest_s = rest_s // new
            rest_d = ceil_div(rest_d, a)
        if not out_s:
            return rest_s, rest_d * strides[-1]
        if rest_s != 1:
            out_s.append(rest_s)
            out_d.append(rest_d * strides[-1])
        return _wrap(out_s, out_d)

    def use(self, k: int, path: tuple[int, ...], s: object, d: object, top: int) -> None:
        self.usage.setdefault(k, []).append((path, s, d, int(top)))

    def straddle(self, path: tuple[int, ...], s: object, d: object, k: int, why: str) -> None:
        raise ShapeError(
            f"composition {self.A} o {self.B}: mode {path} = {to_str(s)}:{to_str(d)} of B steps across the boundary of "
            f"mode {k} ({to_str(self.shapes[k])}:{to_str(self.strides[k])}) of A coalesced to {self.flat_a()}: {why}. "
            "No layout of B's shape represents A(B(i)) (C++ CuTe refuses this or returns a layout that is not A o B)"
        )

    def carries(self) -> list[tuple[int, list[tuple[tuple[int, ...], object, object, int]]]]:
        """A-modes whose digits, summed over the B-leaves that use them, can overflow."""
        bad = []
        for k, uses in self.usage.items():
            if len(uses) > 1 and sum(u[3] for u in uses) >= self.shapes[k]:
                bad.append((k, uses))
        return bad


def _wrap_str(items: tuple[object, ...]) -> str:
    return to_str(items[0]) if len(items) == 1 else to_str(items)


def composition(a: object, b: object) -> object:
    """``R = A o B`` with ``R(c) == A(B(c))`` for every coordinate ``c`` of B, ``R`` shaped like B.

    ``b`` may be a layout, an integer ``n`` (``n:_1``), a tuple tiler of those (composed mode by
    mode; modes of A past the tiler are dropped, as in C++; ``None`` keeps a mode) or ``None``.
    A :class:`Swizzle` on the left gives a :class:`ComposedLayout`.

    >>> from layoutkit import tla
    >>> print(tla.composition(tla.make_layout((10, 2), (16, 4)), tla.make_layout((5, 4), (1, 5))))
    (5,(2,2)):(16,(80,4))
    >>> tla.composition(tla.make_layout((4, 6), (1, 5)), tla.make_layout(6, 1))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    layoutkit.errors.ShapeError: composition (4,6):(1,5) o 6:1: mode () = 6:1 of B steps across the boundary ...
    """
    if b is None:
        return a if isinstance(a, (Swizzle, ComposedLayout)) else as_layout(a, "composition: left operand")
    if isinstance(a, Swizzle):
        if isinstance(b, Layout):
            return ComposedLayout(a, Int(0), b)
        raise UnsupportedError(f"composition of {a} with {type(b).__name__}: compose a Swizzle with a tla.Layout")
    if isinstance(a, ComposedLayout):
        return a.with_inner(composition(a.inner, b))
    A = as_layout(a, "composition: left operand")
    if isinstance(b, list):
        b = tuple(b)
    if type(b) is tuple:
        if not b:
            raise ShapeError(f"composition: the tiler () has no modes; compose {A} with a layout, an integer or a "
                             "non-empty tuple of them")
        if len(b) > A.rank:
            raise ShapeError(f"composition: the tiler {_tiler_str(b)} has {len(b)} modes but {A} has rank {A.rank}")
        return concat([composition(A.mode(i), bi) for i, bi in enumerate(b)])
    if isinstance(b, (Swizzle, ComposedLayout)):
        raise UnsupportedError(f"composition {A} o {b}: a layout composed with a swizzle is not supported")
    B = as_layout(b, "composition: right operand")
    composer = _Composer(A, B)
    shape, stride = composer.tree(B.shape, B.stride, ())
    result = Layout._make(shape, stride)
    bad = composer.carries()
    if bad:
        _check_carries(A, B, result, bad, composer)
    return result


def _check_carries(
    A: Layout, B: Layout, R: Layout, bad: list[tuple[int, list[tuple[tuple[int, ...], object, object, int]]]],
    composer: _Composer,
) -> None:
    k, uses = bad[0]
    modes = ", ".join(f"{u[0]} = {to_str(u[1])}:{to_str(u[2])} (digits up to {u[3]})" for u in uses)
    where = (
        f"modes {modes} of B all land in mode {k} ({to_str(composer.shapes[k])}:{to_str(composer.strides[k])}) of A "
        f"coalesced to {composer.flat_a()}, and their digits can add up past its size {to_str(composer.shapes[k])}"
    )
    if B.size > NUMERIC_CHECK_LIMIT:
        raise ShapeError(f"composition {A} o {B}: {where}; too large ({B.size}) to verify element by element")
    want = _crd2idx(B.table(), A.shape, A.stride, ())
    got = R.table()
    diff = np.flatnonzero(np.asarray(want) != got)
    if diff.size:
        i = int(diff[0])
        raise ShapeError(
            f"composition {A} o {B}: {where}; the carry makes it no layout of B's shape: at B's coordinate "
            f"{to_str(idx2crd(i, B.shape))} (index {i}) A(B(.)) = {int(np.asarray(want)[i])} but the mode-by-mode "
            f"result {R} gives {int(got[i])}"
        )


def _tiler_str(t: object) -> str:
    if type(t) is tuple:
        return "(" + ",".join(_tiler_str(v) for v in t) + ")"
    if t is None:
        return "_"
    return str(t) if not is_int(t) else to_str(t)


# ---- complement ----------------------------------------------------------------------------------


def complement(layout: object, cotarget: object = None) -> Layout:
    """The layout of the offsets ``layout`` misses, ordered, up to ``cotarget`` (C++ ``complement``).

    ``cotarget`` is a size or a shape (default: ``cosize(filter(layout))``).  Requires the
    layout to be injective and complementable: after sorting its modes by stride, each stride is
    a multiple of the extent the smaller modes cover.

    >>> from layoutkit import tla
    >>> print(tla.complement(tla.make_layout((2, 2), (1, 6)), 24), tla.complement(tla.make_layout(4, 1), 24))
    (3,2):(2,12) 6:4
    >>> tla.complement(tla.make_layout((2, 2), (1, 3)))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    layoutkit.errors.ShapeError: complement of (2,2):(1,3): mode 2:3 has stride 3, not a multiple of 2, ...
    """
    if isinstance(layout, ComposedLayout):
        inner = layout.inner
        if not isinstance(inner, Layout):
            raise UnsupportedError(f"complement of {layout}: the inner function is not a layout")
        return complement(inner, cotarget)
    L = as_layout(layout, "complement: layout")
    F = _filtered(L)
    if cotarget is None:
        cotarget = F.cosize
    elif isinstance(cotarget, Layout):
        cotarget = cotarget.shape
    elif type(cotarget) is tuple or not is_int(cotarget) or cotarget < 1:
        cotarget = as_int_tuple(cotarget, "complement cotarget (a size or a shape)", minimum=1)
    shapes, strides = leaves(F.shape), leaves(F.stride)
    if strides == (0,):
        rest = coalesce_shape(cotarget)
        return Layout._make(rest, compact_col_major(rest))
    if min(strides) < 0:
        raise UnsupportedError(f"complement of {L}: negative strides are not supported")
    order = sorted(range(len(strides)), key=strides.__getitem__)
    res_s: list[Any] = []
    res_d: list[Any] = [Int(1)]
    for n, i in enumerate(order):
        s, d = shapes[i], strides[i]
        covered = res_d[-1]
        if d < covered:
            raise ShapeError(
                f"complement of {L}: mode {to_str(s)}:{to_str(d)} overlaps the modes with smaller strides, which "
                f"cover {covered} offsets (filtered layout {F}); a non-injective layout has no complement"
            )
        if d % covered:
            raise ShapeError(
                f"complement of {L}: mode {to_str(s)}:{to_str(d)} has stride {d}, not a multiple of {covered}, the "
                f"extent the modes with smaller strides cover (filtered layout {F}); the layout has no complement"
            )
        res_s.append(d // covered)
        if n < len(order) - 1:
            res_d.append(d * s)
    last = order[-1]
    new_stride = strides[last] * shapes[last]
    rest_shape = coalesce_shape(ceil_div(cotarget, new_stride))
    rest_stride = compact_col_major(rest_shape, new_stride)
    shape, stride = _bw_coalesce(tuple(res_s) + leaves(rest_shape), tuple(res_d) + leaves(rest_stride))
    return Layout._make(shape, stride)
