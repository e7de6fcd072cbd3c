"""CuTe coalesce and filter with C++ semantics, and the helpers the rest of the algebra shares
(integer tilers as layouts, modes concatenated into one layout).

>>> from layoutkit import tla
>>> print(tla.coalesce(tla.make_layout((tla._2, (tla._1, tla._6)), (tla._1, (tla._6, tla._2)))))
_12:_1
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from ..errors import ShapeError
from .int_tuple_check import as_int_tuple, to_str
from .int_tuple_structure import leaves
from .layout import Layout
from .static_int import Int, is_int
from .swizzle import ComposedLayout


def as_layout(x: object, what: str = "layout") -> Layout:
    """A :class:`Layout` as is; an integer ``n`` as ``n:_1`` (CuTe's integral tiler)."""
    if isinstance(x, Layout):
        return x
    if is_int(x):
        if x < 1:
            raise ShapeError(f"{what}: an integer tiler must be positive; found {x}")
        return Layout.from_modes(x if type(x) is Int else int(x), Int(1))
    raise ShapeError(f"{what} must be a tla.Layout or an integer; found {type(x).__name__} {x!r}")


def check_profile(profile: object, what: str) -> object:
    """A coalesce/filter profile: None, an integer (this mode as a whole) or a tuple of profiles."""
    if profile is None or is_int(profile):
        return profile
    if not isinstance(profile, (tuple, list)):
        raise ShapeError(f"{what}: profile must be None, an integer or a tuple of profiles; found "
                         f"{type(profile).__name__} {profile!r}")
    return as_int_tuple(profile, f"{what} profile")


def concat(modes: Sequence[Any]) -> Layout:
    """``make_layout(l0, l1, ...)``: layouts as the modes of one layout (mode-wise results of the
    algebra, typed ``object`` where they may also be composed layouts)."""
    return Layout.from_modes(tuple(m.shape for m in modes), tuple(m.stride for m in modes))


def unwrap_modes(shapes: list[Any], strides: list[Any]) -> tuple[object, object]:
    """One mode as integers, several as tuples (C++ ``unwrap``)."""
    if len(shapes) == 1:
        return shapes[0], strides[0]
    return tuple(shapes), tuple(strides)


# ---- coalesce and filter ------------------------------------------------------------------------


def bw_coalesce(
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
    return unwrap_modes(out_s, out_d)


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
    profile = check_profile(profile, "coalesce")
    if type(profile) is tuple:
        if len(profile) > L.rank:
            raise ShapeError(f"coalesce: profile {to_str(profile)} has more modes than {L} (rank {L.rank})")
        modes = [coalesce(L.mode(i), p) for i, p in enumerate(profile)]
        return concat(modes + [L.mode(i) for i in range(len(profile), L.rank)])
    shape, stride = bw_coalesce(leaves(L.shape), leaves(L.stride))
    return Layout.from_modes(shape, stride)


def coalesced_shape(L: Layout) -> object:
    """``shape(coalesce(L))``."""
    return bw_coalesce(leaves(L.shape), leaves(L.stride))[0]


def coalesce_x(L: Layout) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """C++ ``detail::coalesce_x``: like coalesce but a trailing size-1 mode keeps its stride (as a
    dummy size 2), so the function outside the domain -- the unbounded last mode -- is preserved."""
    shapes, strides = leaves(L.shape), leaves(L.stride)
    last = Int(2) if shapes[-1] == 1 else None
    shape, stride = bw_coalesce(shapes, strides, last)
    return leaves(shape), leaves(stride)


def filter_zeros(layout: Layout) -> Layout:
    """Replace the size of every stride-0 mode by ``_1``.

    >>> print(filter_zeros(Layout((4, 2), (0, 3))))
    (_1,2):(0,3)
    """
    L = as_layout(layout, "filter_zeros: layout")
    shape = _map2(L.shape, L.stride, lambda s, d: Int(1) if d == 0 else s)
    return Layout.from_modes(shape, L.stride)


def _map2(a: object, b: object, fn: Callable[[Any, Any], object]) -> object:
    if type(a) is tuple:
        return tuple(_map2(x, y, fn) for x, y in zip(a, cast("tuple[object, ...]", b)))
    return fn(a, b)


def filtered(L: Layout) -> Layout:
    """``filter(L)`` without the dispatch: zero-stride modes dropped, then coalesced."""
    strides = leaves(L.stride)
    shapes = tuple(Int(1) if d == 0 else s for s, d in zip(leaves(L.shape), strides))
    shape, stride = bw_coalesce(shapes, strides)
    return Layout.from_modes(shape, stride)


def filter(layout: object, profile: object = None) -> object:  # noqa: A001 - CuTe name
    """Drop stride-0 and size-1 modes, then coalesce (``1:0`` when nothing is left).

    >>> from layoutkit import tla
    >>> print(tla.filter(tla.make_layout((4, 2, 3), (0, 1, 2))))
    6:1
    """
    if isinstance(layout, ComposedLayout):
        return layout.with_inner(filter(layout.inner, profile))
    L = as_layout(layout, "filter: layout")
    profile = check_profile(profile, "filter")
    if type(profile) is tuple:
        if len(profile) > L.rank:
            raise ShapeError(f"filter: profile {to_str(profile)} has more modes than {L} (rank {L.rank})")
        modes = [filter(L.mode(i), p) for i, p in enumerate(profile)]
        return concat(modes + [L.mode(i) for i in range(len(profile), L.rank)])
    return filtered(L)


def coalesce_shape(shape: object) -> object:
    """C++ ``coalesce(Shape)``: flatten and multiply neighbouring modes of equal staticness.

    >>> print(to_str(coalesce_shape(((Int(2), Int(4)), 3, 5))))
    (_8,15)
    """
    flat = leaves(as_int_tuple(shape, "coalesce_shape: shape", minimum=0))
    if not flat:
        raise ShapeError("coalesce_shape: the shape has no extent; found ()")
    out = [flat[0]]
    for v in flat[1:]:
        if (type(v) is Int) == (type(out[-1]) is Int):
            out[-1] = out[-1] * v
        else:
            out.append(v)
    return out[0] if len(out) == 1 else tuple(out)
