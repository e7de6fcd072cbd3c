"""The CuTe layout algebra with C++ CuTe semantics: coalesce, filter, composition, complement,
right and left inverses.  Divides and products live in :mod:`layoutkit.tla.tiling`.

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

from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from ..errors import ShapeError, UnsupportedError
from .coord import _crd2idx, idx2crd
from .int_tuple import (
    Int,
    as_int_tuple,
    ceil_div,
    compact_col_major,
    is_int,
    is_static,
    leaves,
    product,
    to_str,
)
from .layout import Layout
from .swizzle import ComposedLayout, Swizzle

NUMERIC_CHECK_LIMIT = 1 << 22
"""Largest right-hand domain checked element by element when modes of a composition share a
left-hand mode (beyond it such a composition raises)."""


def as_layout(x: object, what: str = "layout") -> Layout:
    """A :class:`Layout` as is; an integer ``n`` as ``n:_1`` (CuTe's integral tiler)."""
    if isinstance(x, Layout):
        return x
    if is_int(x):
        if x < 1:
            raise ShapeError(f"{what}: an integer tiler must be positive; found {x}")
        return Layout._make(x if type(x) is Int else int(x), Int(1))
    raise ShapeError(f"{what} must be a tla.Layout or an integer; found {type(x).__name__} {x!r}")


def concat(modes: Sequence[Any]) -> Layout:
    """``make_layout(l0, l1, ...)``: layouts as the modes of one layout (mode-wise results of the
    algebra, typed ``object`` where they may also be composed layouts)."""
    return Layout._make(tuple(m.shape for m in modes), tuple(m.stride for m in modes))


def _wrap(shapes: list[Any], strides: list[Any]) -> tuple[object, object]:
    """One mode as integers, several as tuples (C++ ``unwrap``)."""
    if len(shapes) == 1:
        return shapes[0], strides[0]
    return tuple(shapes), tuple(strides)


def _min(a: int, b: int) -> int:
    m = a if a <= b else b
    return m if type(a) is Int and type(b) is Int else int(m)


# ---- coalesce and filter ------------------------------------------------------------------------


def _bw_coalesce(
    shapes: tuple[Any, ...], strides: tuple[Any, ...], last_shape: int | None = None
) -> tuple[object, object]:
    """C++ ``bw_coalesce`` over flat modes, from the last mode to the first: skip size-1 modes,
    replace a leading size-1, merge ``s:d`` into a front ``s':s*d``, else prepend."""
    out_s = [shapes[-1] if last_shape is None else last_shape]
    out_d = [strides[-1]]
    for i in range(len(shapes) - 2, -1, -1):
        s, d = shapes[i], strides[i]
        if s == 1:
            continue
        if len(out_s) == 1 and out_s[0] == 1:
            out_s[0], out_d[0] = s, d
        elif s * d == out_d[-1]:
            out_s[-1] = s * out_s[-1]
            out_d[-1] = d
        else:
            out_s.append(s)
            out_d.append(d)
    if len(out_s) == 1 and out_s[0] == 1:
        return Int(1), Int(0)
    out_s.reverse()
    out_d.reverse()
    return _wrap(out_s, out_d)


def coalesce(layout: object, profile: object = None) -> object:
    """Flatten and merge modes without changing ``layout(i)`` for ``i < size`` (C++ ``coalesce``).

    ``profile`` (a tuple) coalesces mode by mode at its terminals instead.

    >>> from layoutkit import tla
    >>> print(tla.coalesce(tla.make_layout((2, 1, 3), (1, 5, 2))), tla.coalesce(tla.make_layout((4, 1), (1, 0))))
    6:1 4:1
    >>> print(tla.coalesce(tla.make_layout(((2, 2), (2, 2)), ((1, 4), (2, 8))), (1, 1)))
    ((2,2),(2,2)):((1,4),(2,8))
    """
    if isinstance(layout, ComposedLayout):
        return layout.with_inner(coalesce(layout.inner, profile))
    L = as_layout(layout, "coalesce: layout")
    if type(profile) is tuple:
        if len(profile) > L.rank:
            raise ShapeError(f"coalesce: profile {to_str(profile)} has more modes than {L} (rank {L.rank})")
        modes = [coalesce(L.mode(i), p) for i, p in enumerate(profile)]
        return concat(modes + [L.mode(i) for i in range(len(profile), L.rank)])
    shape, stride = _bw_coalesce(leaves(L.shape), leaves(L.stride))
    return Layout._make(shape, stride)


def coalesced_shape(L: Layout) -> object:
    """``shape(coalesce(L))``."""
    return _bw_coalesce(leaves(L.shape), leaves(L.stride))[0]


def _coalesce_x(L: Layout) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """C++ ``detail::coalesce_x``: like coalesce but a trailing size-1 mode keeps its stride (as a
    dummy size 2), so the function outside the domain -- the unbounded last mode -- is preserved."""
    shapes, strides = leaves(L.shape), leaves(L.stride)
    last = Int(2) if shapes[-1] == 1 else None
    shape, stride = _bw_coalesce(shapes, strides, last)
    return leaves(shape), leaves(stride)


def filter_zeros(layout: Layout) -> Layout:
    """Replace the size of every stride-0 mode by ``_1``.

    >>> print(filter_zeros(Layout((4, 2), (0, 3))))
    (_1,2):(0,3)
    """
    L = as_layout(layout, "filter_zeros: layout")
    shape = _map2(L.shape, L.stride, lambda s, d: Int(1) if d == 0 else s)
    return Layout._make(shape, L.stride)


def _map2(a: object, b: object, fn: Callable[[Any, Any], object]) -> object:
    if type(a) is tuple:
        return tuple(_map2(x, y, fn) for x, y in zip(a, cast("tuple[object, ...]", b)))
    return fn(a, b)


def _filtered(L: Layout) -> Layout:
    """``filter(L)`` without the dispatch: zero-stride modes dropped, then coalesced."""
    strides = leaves(L.stride)
    shapes = tuple(Int(1) if d == 0 else s for s, d in zip(leaves(L.shape), strides))
    shape, stride = _bw_coalesce(shapes, strides)
    return Layout._make(shape, stride)


def filter(layout: object, profile: object = None) -> object:  # noqa: A001 - CuTe name
    """Drop stride-0 and size-1 modes, then coalesce (``1:0`` when nothing is left).

    >>> from layoutkit import tla
    >>> print(tla.filter(tla.make_layout((4, 2, 3), (0, 1, 2))))
    6:1
    """
    if isinstance(layout, ComposedLayout):
        return layout.with_inner(filter(layout.inner, profile))
    L = as_layout(layout, "filter: layout")
    if type(profile) is tuple:
        if len(profile) > L.rank:
            raise ShapeError(f"filter: profile {to_str(profile)} has more modes than {L} (rank {L.rank})")
        modes = [filter(L.mode(i), p) for i, p in enumerate(profile)]
        return concat(modes + [L.mode(i) for i in range(len(profile), L.rank)])
    return _filtered(L)


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
        return a
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


def coalesce_shape(shape: object) -> object:
    """C++ ``coalesce(Shape)``: flatten and multiply neighbouring modes of equal staticness.

    >>> print(to_str(coalesce_shape(((Int(2), Int(4)), 3, 5))))
    (_8,15)
    """
    flat = leaves(shape)
    out = [flat[0]]
    for v in flat[1:]:
        if (type(v) is Int) == (type(out[-1]) is Int):
            out[-1] = out[-1] * v
        else:
            out.append(v)
    return out[0] if len(out) == 1 else tuple(out)


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


# ---- inverses ------------------------------------------------------------------------------------


def _exchange_order(keys: tuple[Any, ...]) -> list[int]:
    """Indices ordered by key with C++ CuTe's ``detail::SortByKey`` (an exchange sort, which is
    not stable: among equal strides the tie order matters for non-injective layouts).

    >>> _exchange_order((4, 4, 1))
    [2, 1, 0]
    """
    pairs = [(k, i) for i, k in enumerate(keys)]
    n = len(pairs)
    for i in range(n):
        for j in range(i + 1, n):
            if pairs[j][0] < pairs[i][0]:
                pairs[i], pairs[j] = pairs[j], pairs[i]
    return [i for _, i in pairs]


def _prefix(shapes: tuple[Any, ...]) -> list[Any]:
    out = [Int(1)]
    for s in shapes:
        out.append(out[-1] * s)
    return out


def _invert_parts(layout: Swizzle | ComposedLayout | None, inverse: Callable[[object], object]) -> object:
    """``inverse`` of the non-plain layouts both C++ inverses accept: ``None`` stays ``None``, a swizzle
    is its own inverse, a composed layout (offset 0) inverts each of its parts."""
    if layout is None or isinstance(layout, Swizzle):
        return layout
    if layout.offset != 0:
        raise UnsupportedError(f"{inverse.__name__} of {layout}: needs offset 0")
    return ComposedLayout(inverse(layout.inner), Int(0), inverse(layout.outer))


def right_inverse(layout: object) -> object:
    """``R`` with ``layout(R(i)) == i`` for every ``i < size(R)`` (C++ ``right_inverse``).

    Modes are followed from stride 1 upwards, skipping any that do not continue the chain -- so a
    stride-0 mode does not hide the others (pycute stops at the first mismatch and returns
    ``1:0`` for ``(2,4,4,6):(4,1,0,8)``; C++ returns ``(4,2,6):(2,1,32)``).

    >>> from layoutkit import tla
    >>> print(tla.right_inverse(tla.make_layout((4, 8), (8, 1))), tla.right_inverse(tla.make_layout(4, 2)))
    (8,4):(4,_1) _1:_0
    """
    if layout is None or isinstance(layout, (Swizzle, ComposedLayout)):
        return _invert_parts(layout, right_inverse)
    L = as_layout(layout, "right_inverse: layout")
    c = cast(Layout, coalesce(L))  # a plain layout coalesces to a plain layout
    shapes, strides = leaves(c.shape), leaves(c.stride)
    pre = _prefix(shapes)
    res_s: list[Any] = [Int(1)]
    res_d: list[Any] = [Int(0)]
    curr: int = Int(1)
    for i in _exchange_order(strides):
        if strides[i] == curr:
            res_s.append(shapes[i])
            res_d.append(pre[i])
            curr = shapes[i] * strides[i]
    return coalesce(Layout._make(tuple(res_s), tuple(res_d)))


def left_inverse(layout: object) -> object:
    """``R`` with ``R(layout(i)) == i`` for every ``i < size`` when ``layout`` is injective, and
    ``layout(R(layout(i))) == layout(i)`` always (C++ ``left_inverse``, a quasi-inverse).

    C++ requires each sorted stride to be a multiple of the previous one (else: ShapeError).  For
    layouts whose modes overlap, C++'s construction is not always a quasi-inverse (``(2,2):(1,1)``
    gives ``2:2``); layoutkit verifies it and raises with a witness when it fails.

    >>> from layoutkit import tla
    >>> print(tla.left_inverse(tla.make_layout((4, 2), (2, 1))), tla.left_inverse(tla.make_layout(4, 2)))
    (2,4):(4,_1) (2,4):(_0,_1)
    """
    if layout is None or isinstance(layout, (Swizzle, ComposedLayout)):
        return _invert_parts(layout, left_inverse)
    L = as_layout(layout, "left_inverse: layout")
    c = cast(Layout, coalesce(L))  # a plain layout coalesces to a plain layout
    shapes, strides = leaves(c.shape), leaves(c.stride)
    if any(d < 0 for d in strides):
        raise UnsupportedError(f"left_inverse of {L}: negative strides are not supported")
    pre = _prefix(shapes)
    order = _exchange_order(strides)
    res_s: list[Any] = []
    res_d: list[Any] = [Int(0)]
    for i in order:
        d = strides[i]
        if d == 0:
            continue
        covered = product(tuple(res_s))
        if d % covered:
            raise ShapeError(
                f"left_inverse of {L}: mode {to_str(shapes[i])}:{to_str(d)} of the coalesced layout {c} has stride "
                f"{d}, not a multiple of {covered} (the extent below it); no layout inverts it"
            )
        res_s.append(d // covered)
        res_d.append(pre[i])
    res_s.append(shapes[order[-1]])
    result = coalesce(Layout._make(tuple(res_s), tuple(res_d)))
    if not _disjoint_modes(shapes, strides, order):
        _check_quasi_inverse(L, result)  # type: ignore[arg-type]
    return result


def _disjoint_modes(shapes: tuple[Any, ...], strides: tuple[Any, ...], order: list[int]) -> bool:
    """Stride-sorted nonzero modes each start at or past the extent the smaller ones cover and
    at a multiple of it: the layout is injective on them and the left inverse is exact."""
    covered = 1
    for i in order:
        d = strides[i]
        if d == 0:
            continue
        if d < covered or d % covered:
            return False
        covered = d * shapes[i]
    return True


def _check_quasi_inverse(L: Layout, R: Layout) -> None:
    """C++ promises ``L(R(L(i))) == L(i)`` for every layout; for overlapping modes it does not
    hold in general, so check it and refuse with a witness instead of returning a wrong layout."""
    if L.size > NUMERIC_CHECK_LIMIT:
        raise ShapeError(f"left_inverse of {L}: its modes overlap and it is too large ({L.size}) to verify")
    t = L.table()
    idx = np.asarray(_crd2idx(t, R.shape, R.stride, ()))
    back = np.asarray(_crd2idx(idx, L.shape, L.stride, ()))
    bad = np.flatnonzero((back != t) | (idx >= L.size))
    if bad.size:
        i = int(bad[0])
        raise ShapeError(
            f"left_inverse of {L}: its modes overlap (it is not injective) and C++'s construction {R} is no "
            f"quasi-inverse: at index {i}, L(i) = {int(t[i])} goes back to index {int(idx[i])} "
            f"(of {L.size}), where L is {int(back[i])}"
        )


def nullspace(layout: Layout) -> Layout:
    """The coordinates a layout sends to 0 (its stride-0 modes), C++ ``nullspace``.

    >>> print(nullspace(Layout((2, 4, 3), (1, 0, 2))))
    4:2
    """
    L = as_layout(layout, "nullspace: layout")
    shapes, strides = leaves(L.shape), leaves(L.stride)
    pre = _prefix(shapes)
    idx = [i for i, d in enumerate(strides) if d == 0]
    if not idx:
        return Layout._make(Int(1), Int(0))
    s, d = _wrap([shapes[i] for i in idx], [pre[i] for i in idx])
    return Layout._make(s, d)


def max_common_vector(a: Layout, b: Layout) -> int:
    """Largest ``N`` such that ``a`` and ``b`` agree on a contiguous run of ``N`` elements
    (C++ ``max_common_vector``).

    >>> max_common_vector(Layout((4, 8), (1, 4)), Layout((4, 8), (1, 8)))
    4
    """
    common = cast(Layout, coalesce(composition(as_layout(a), right_inverse(as_layout(b)))))
    shapes, strides = leaves(common.shape), leaves(common.stride)
    return shapes[0] if strides[0] == 1 else Int(1)


def is_static_layout(layout: Layout) -> bool:
    """Shape and stride are all static ints."""
    return is_static(layout.shape) and is_static(layout.stride)


__all__ = [
    "NUMERIC_CHECK_LIMIT",
    "as_layout",
    "concat",
    "coalesce",
    "coalesce_shape",
    "filter_zeros",
    "filter",
    "composition",
    "complement",
    "right_inverse",
    "left_inverse",
    "nullspace",
    "max_common_vector",
    "is_static_layout",
]
