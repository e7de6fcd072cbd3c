"""CuTe right and left inverses with C++ semantics, and what is built on them (nullspace,
max_common_vector).

>>> from layoutkit import tla
>>> print(tla.right_inverse(tla.make_layout((tla._2, tla._4, tla._4, tla._6), (tla._4, tla._1, tla._0, tla._8))))
(_4,_2,_6):(_2,_1,_32)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ..errors import ShapeError, UnsupportedError
from .coalesce import as_layout, coalesce, unwrap_modes
from .composition import NUMERIC_CHECK_LIMIT, composition
from .int_tuple_check import to_str
from .int_tuple_structure import leaves, product
from .layout import Layout, crd2idx_unchecked
from .static_int import Int, is_static
from .swizzle import ComposedLayout, Swizzle


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
    return coalesce(Layout.from_modes(tuple(res_s), tuple(res_d)))


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
    result = coalesce(Layout.from_modes(tuple(res_s), tuple(res_d)))
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
    idx = np.asarray(crd2idx_unchecked(t, R.shape, R.stride, ()))
    back = np.asarray(crd2idx_unchecked(idx, L.shape, L.stride, ()))
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
        return Layout.from_modes(Int(1), Int(0))
    s, d = unwrap_modes([shapes[i] for i in idx], [pre[i] for i in idx])
    return Layout.from_modes(s, d)


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
