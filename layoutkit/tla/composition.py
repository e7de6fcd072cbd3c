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
* a right-hand side with negative strides walks A backwards (C++ extends A to negative integers
  with truncating division, ``A(-k) == -A(k)``); the result is checked against ``A(B(i))``;
* a complement follows C++'s integer arithmetic, also where strides do not divide; its contract
  is stated on :func:`complement`.

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

from ..errors import LimitError, ShapeError, UnsupportedError
from .coalesce import as_layout, bw_coalesce, coalesce_shape, coalesce_x, concat, filtered, unwrap_modes
from .int_tuple_arith import ceil_div, compact_col_major
from .int_tuple_check import as_int_tuple, to_str
from .int_tuple_structure import leaves
from .layout import Layout, crd2idx_unchecked, idx2crd
from .static_int import Int, is_int
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
        self.shapes, self.strides = coalesce_x(A)
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
            # A is odd as C++ extends it to negative integers (truncating division): A(-k) == -A(k),
            # so s:-d composes to the negation of s:d (C++'s abs/signum walk gives the same strides)
            shape, stride = self.leaf(s, -d, path)
            return shape, _negate(stride)
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
        return unwrap_modes(out_s, out_d)

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


def _negate(x: object) -> object:
    if type(x) is tuple:
        return tuple(_negate(v) for v in x)
    return -cast(int, x)


def layout_at(A: Layout, idx: Any) -> Any:
    """``A(idx)`` for integer indices of any sign, as C++ evaluates a layout on an integer: the last
    mode is unbounded and division truncates, so ``A(-k) == -A(k)``.

    >>> layout_at(Layout((4, 4), (-1, 1)), np.array([-5, -1, 5, 17]))
    array([0, 1, 0, 3])
    """
    v = np.asarray(idx, dtype=np.int64)
    return np.sign(v) * np.asarray(crd2idx_unchecked(np.abs(v), A.shape, A.stride, ()), dtype=np.int64)


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
    if isinstance(b, Swizzle):
        return compose_swizzle(A, b)
    if isinstance(b, ComposedLayout):
        return _compose_composed(A, b)
    B = as_layout(b, "composition: right operand")
    composer = _Composer(A, B)
    shape, stride = composer.tree(B.shape, B.stride, ())
    result = Layout.from_modes(shape, stride)
    bad = composer.carries()
    if bad:
        _check_carries(A, B, result, bad, composer)
    elif min(leaves(B.stride)) < 0 and B.size > 1:
        _check_signed(A, B, result)
    return result


def _check_signed(A: Layout, B: Layout, R: Layout) -> None:
    """B walks backwards: the mode-by-mode result is exact only where A is additive across the
    signed digits (C++ does not check), so it is compared with ``A(B(i))`` everywhere."""
    _verify(A, B, R, "B has negative strides", "B's negative strides step across modes of A, so no layout of "
            "B's shape is A o B")


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
    _verify(A, B, R, where, f"{where}; the carry makes it no layout of B's shape")


def _verify(A: Layout, B: Layout, R: Layout, doubt: str, verdict: str) -> None:
    """``R`` is ``A(B(i))`` at every index of B, or a ShapeError naming the first index where it is not:
    ``doubt`` says why the mode-by-mode result is in question, ``verdict`` what a mismatch means."""
    if B.size > NUMERIC_CHECK_LIMIT:
        raise ShapeError(f"composition {A} o {B}: {doubt}; too large ({B.size}) to verify element by element")
    try:
        want = np.asarray(layout_at(A, B.table()))
        got = R.table()
    except OverflowError:  # numpy's int64 tables: an offset past 2**63 cannot be checked element-wise
        raise LimitError(f"composition {A} o {B}: {doubt}; the offsets pass 2**63 - 1, too large to verify "
                         f"element by element", limit=2**63 - 1) from None
    diff = np.flatnonzero(want != got)
    if diff.size:
        i = int(diff[0])
        raise ShapeError(f"composition {A} o {B}: {verdict}: at B's coordinate {to_str(idx2crd(i, B.shape))} "
                         f"(index {i}) A(B(.)) = {int(want[i])} but the mode-by-mode result {R} gives {int(got[i])}")


def make_swizzle(yyy: int, zzz: int) -> Swizzle:
    """The swizzle whose y-bits (xor sources) are the mask ``yyy`` and z-bits (xor targets) ``zzz``
    (C++ ``make_swizzle<Y, Z>``); the masks must be contiguous runs of equally many bits.

    >>> print(make_swizzle(0b1000, 0b0100), make_swizzle(0b11000000, 0b00000110))
    Sw<1,2,1> Sw<2,1,5>
    """
    yyy, zzz = int(yyy), int(zzz)
    if yyy < 0 or zzz < 0 or bin(yyy).count("1") != bin(zzz).count("1"):
        raise ShapeError(f"make_swizzle: the masks {yyy:#b} and {zzz:#b} must be non-negative with equally many bits")
    if yyy == 0:
        return Swizzle(0, 0, 0)
    ty, tz = (yyy & -yyy).bit_length() - 1, (zzz & -zzz).bit_length() - 1
    bits = bin(yyy).count("1")
    sw = Swizzle(bits, min(ty, tz), ty - tz)
    if (sw.yyy_mask | sw.zzz_mask) != (yyy | zzz):
        raise ShapeError(f"make_swizzle: the masks {yyy:#b} (y) and {zzz:#b} (z) are not two runs of {bits} "
                         f"contiguous bits; the nearest swizzle {sw} has y {sw.yyy_mask:#b} and z {sw.zzz_mask:#b}")
    return sw


def compose_swizzle(A: Layout, sw: Swizzle) -> object:
    """``A o sw`` as ``sw' o A`` (C++ ``composition(Layout, Swizzle)``): ``sw'`` xors the bits A
    maps the swizzle's y- and z-masks to, ``sw' = make_swizzle(A(yyy), A(zzz))``.

    C++ states this "works in simple cases"; layoutkit checks ``A(sw(i)) == sw'(A(i))`` for every
    ``i < size(A)`` and raises with a witness where A does not carry the swizzle's bits linearly.
    A swizzle of no bits gives A itself.

    >>> from layoutkit import tla
    >>> print(tla.composition(tla.make_layout((tla._8, tla._8), (tla._8, tla._1)), tla.Swizzle(3, 0, 3)))
    Sw<3,0,-3> o _0 o (_8,_8):(_8,_1)
    """
    if sw.bits == 0:
        return A
    yyy, zzz = layout_at(A, np.array([sw.yyy_mask, sw.zzz_mask]))
    try:
        new = make_swizzle(int(yyy), int(zzz))
    except ShapeError as err:
        raise ShapeError(f"composition {A} o {sw}: A maps the swizzle's masks {sw.yyy_mask:#b}, {sw.zzz_mask:#b} to "
                         f"{int(yyy)}, {int(zzz)}, which no swizzle xors ({err})") from None
    if A.size > NUMERIC_CHECK_LIMIT:
        raise ShapeError(f"composition {A} o {sw}: too large ({A.size}) to verify element by element")
    idx = np.arange(int(A.size), dtype=np.int64)
    want = layout_at(A, sw(idx))
    got = np.asarray(new(A.table()), dtype=np.int64)
    diff = np.flatnonzero(want != got)
    if diff.size:
        i = int(diff[0])
        raise ShapeError(f"composition {A} o {sw}: A does not carry the swizzle's bits linearly, so {new} o {A} "
                         f"is not A o {sw}: at index {i} A(sw(i)) = {int(want[i])} but {new}(A(i)) = {int(got[i])}")
    return A if new.bits == 0 else ComposedLayout(new, Int(0), A)


def _compose_composed(A: Layout, b: ComposedLayout) -> object:
    """``A o (f o 0 o g)`` = ``(A o f) o g`` (C++; the offset must be 0)."""
    if b.offset != 0:
        raise UnsupportedError(f"composition {A} o {b}: composing a layout with a composed layout needs offset 0 "
                               f"(found {to_str(b.offset)})")
    return composition(composition(A, b.outer), b.inner)


def _tiler_str(t: object) -> str:
    if type(t) is tuple:
        return "(" + ",".join(_tiler_str(v) for v in t) + ")"
    if t is None:
        return "_"
    return str(t) if not is_int(t) else to_str(t)


# ---- complement ----------------------------------------------------------------------------------


def complement(layout: object, cotarget: object = None) -> Layout:
    """The layout of the offsets ``layout`` misses, ordered, up to ``cotarget`` (C++ ``complement``).

    ``cotarget`` is a size or a shape (default: ``cosize(filter(layout))``).  The modes of
    ``filter(layout)`` are sorted by stride ``d_1 < d_2 < ...``; the result has a mode
    ``floor(d_k / c_k) : c_k`` before each (``c_1 = 1``, ``c_k = d_{k-1} * s_{k-1}``), then the rest up
    to ``cotarget``, coalesced -- exactly C++'s arithmetic, including its integer division where a
    stride is not a multiple of ``c_k`` (``complement((4,6):(1,6))`` is ``1:0``,
    ``complement((4,10):(1,10))`` is ``2:4``).

    Contract (what C++'s own tests check, and what the property tests here check), for ``R`` the
    result and ``F = filter(layout)``:

    * ordered: ``R(i-1) < R(i)`` for ``0 < i < size(R)``;
    * disjoint: ``R(i)`` is not a value of ``layout`` for ``0 < i < size(R)``;
    * ``(F, R)`` is injective, and ``cosize(R) <= round_up(size(cotarget), cosize(F))``;
    * complete when every stride divides: ``size(F) * size(R) >= size(cotarget)``, and then
      ``cosize((F, R)) >= size(cotarget)``.  Where a stride does not divide, the offsets between
      ``c_k * floor(d_k / c_k)`` and ``d_k`` are left out (C++ does the same), so the pair may cover
      fewer than ``cotarget`` offsets.

    A layout whose sorted modes overlap (``d_k < c_k``: not injective) raises
    :class:`~layoutkit.errors.ShapeError` (C++ refuses it statically); negative strides raise
    :class:`~layoutkit.errors.UnsupportedError` (C++ returns negative extents).

    >>> from layoutkit import tla
    >>> print(tla.complement(tla.make_layout((2, 2), (1, 6)), 24), tla.complement(tla.make_layout(4, 1), 24))
    (3,2):(2,12) 6:4
    >>> print(tla.complement(tla.make_layout((tla._4, tla._10), (tla._1, tla._10))))
    _2:_4
    >>> tla.complement(tla.make_layout((2, 2), (1, 1)))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    layoutkit.errors.ShapeError: complement of (2,2):(1,1): mode 2:1 overlaps the modes with smaller strides, ...
    """
    if isinstance(layout, ComposedLayout):
        inner = layout.inner
        if not isinstance(inner, Layout):
            raise UnsupportedError(f"complement of {layout}: the inner function is not a layout")
        return complement(inner, cotarget)
    L = as_layout(layout, "complement: layout")
    F = filtered(L)
    if cotarget is None:
        cotarget = F.cosize
    elif isinstance(cotarget, Layout):
        cotarget = cotarget.shape
    elif type(cotarget) is tuple or not is_int(cotarget) or cotarget < 1:
        cotarget = as_int_tuple(cotarget, "complement cotarget (a size or a shape)", minimum=1)
    shapes, strides = leaves(F.shape), leaves(F.stride)
    if strides == (0,):
        rest = coalesce_shape(cotarget)
        return Layout.from_modes(rest, compact_col_major(rest))
    if min(strides) < 0:
        raise UnsupportedError(f"complement of {L}: negative strides have no complement (C++ returns a layout of "
                               "negative extents)")
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
        res_s.append(d // covered)  # C++ integer division: a stride that does not divide leaves a gap
        if n < len(order) - 1:
            res_d.append(d * s)
    last = order[-1]
    new_stride = strides[last] * shapes[last]
    rest_shape = coalesce_shape(ceil_div(cotarget, new_stride))
    rest_stride = compact_col_major(rest_shape, new_stride)
    shape, stride = bw_coalesce(tuple(res_s) + leaves(rest_shape), tuple(res_d) + leaves(rest_stride))
    return Layout.from_modes(shape, stride)
