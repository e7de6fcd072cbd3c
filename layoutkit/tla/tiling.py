"""CuTe divides and products (C++ semantics): logical / zipped / tiled / flat divide and product,
blocked and raked products.

A *tiler* is a layout, an integer ``n`` (``n:_1``), ``None`` (keep the mode) or a tuple of tilers
applied mode by mode (modes of the layout past the tiler are kept).

>>> from layoutkit import tla
>>> A = tla.make_layout((tla._128, tla._128))
>>> print(tla.zipped_divide(A, (tla._16, tla._16)))
((_16,_16),(_8,_8)):((_1,_128),(_16,_2048))
>>> print(tla.blocked_product(tla.make_layout((tla._2, tla._2)), tla.make_layout((tla._3, tla._4))))
((_2,_3),(_2,_4)):((_1,_4),(_2,_12))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ..errors import ShapeError
from .coalesce import as_layout, coalesced_shape, concat
from .composition import NUMERIC_CHECK_LIMIT, complement, composition, layout_at, make_swizzle
from .int_tuple_check import to_str
from .layout import Layout
from .static_int import Int
from .swizzle import ComposedLayout, Swizzle


def _by_mode(op: Callable[[Layout, object], object], A: Layout, tiler: tuple[object, ...], name: str) -> Layout:
    if not tiler:
        raise ShapeError(f"{name}: the tiler () has no modes; use a layout, an integer, None or a non-empty tuple")
    if len(tiler) > A.rank:
        raise ShapeError(f"{name}: the tiler has {len(tiler)} modes but {A} has rank {A.rank}")
    modes = [op(A.mode(i), t) for i, t in enumerate(tiler)]
    return concat(modes + [A.mode(i) for i in range(len(tiler), A.rank)])


def logical_divide(layout: object, tiler: object) -> object:
    """``A o (B, complement(B, shape(coalesce(A))))``: mode 0 is the tile, mode 1 the tiles.

    >>> from layoutkit import tla
    >>> print(tla.logical_divide(tla.make_layout((4, 2, 3), (2, 1, 8)), tla.make_layout(4, 2)))
    ((2,2),(2,3)):((4,1),(2,8))
    """
    if isinstance(layout, ComposedLayout):
        return layout if tiler is None else layout.with_inner(logical_divide(layout.inner, tiler))
    A = as_layout(layout, "logical_divide: layout")
    if tiler is None:
        return A
    if isinstance(tiler, list):
        tiler = tuple(tiler)
    if type(tiler) is tuple:
        return _by_mode(logical_divide, A, tiler, "logical_divide")
    B = as_layout(tiler, "logical_divide: tiler")
    return composition(A, concat((B, complement(B, coalesced_shape(A)))))


def zip2_by(t: object, guide: object) -> object:
    """Gather the rank-2 results of a by-mode divide/product into ``((tiles...), (rests..., extra...))``.

    >>> zip2_by(((4, 8), (2, 3), 5), (0, 0))
    ((4, 2), (8, 3, 5))
    """
    if isinstance(guide, list):
        guide = tuple(guide)
    if type(guide) is tuple:
        if type(t) is not tuple or len(t) < len(guide):
            raise ShapeError(f"zip2_by: {to_str(t)} has fewer modes than the tiler ({len(guide)})")
        split = [cast("tuple[Any, ...]", zip2_by(t[i], g)) for i, g in enumerate(guide)]
        return tuple(s[0] for s in split), tuple(s[1] for s in split) + tuple(t[len(guide):])
    if type(t) is not tuple or len(t) != 2:
        raise ShapeError(f"zip2_by: expected a rank-2 (tile, rest) mode at a terminal of the tiler; found {to_str(t)}")
    return t


def tile_unzip(layout: Layout, tiler: object) -> Layout:
    """Zip the rank-2 modes at the terminals of ``tiler`` (C++ ``tile_unzip``)."""
    return Layout.from_modes(zip2_by(layout.shape, tiler), zip2_by(layout.stride, tiler))


def zipped_divide(layout: object, tiler: object) -> object:
    """``((tile modes...), (rest modes...))``.

    >>> from layoutkit import tla
    >>> print(tla.zipped_divide(tla.make_layout((8, 6)), (2, 3)))
    ((2,3),(4,2)):((_1,8),(2,24))
    """
    if isinstance(layout, ComposedLayout):
        return layout.with_inner(zipped_divide(layout.inner, tiler))
    return tile_unzip(logical_divide(layout, tiler), tiler)  # type: ignore[arg-type]


def _unpack(layout: Layout, first: bool, second: bool) -> Layout:
    """Splice the sub-modes of mode 0 and/or mode 1 of a rank-2 layout into the top level (C++
    slicing with ``repeat<R>(_)``: a mode of rank 1 -- an int or a 1-tuple -- stays as it is)."""
    out_s: list[Any] = []
    out_d: list[Any] = []
    for k, flat in ((0, first), (1, second)):
        s, d = layout.shape[k], layout.stride[k]  # type: ignore[index]
        if flat and type(s) is tuple and len(s) > 1:
            out_s.extend(s)
            out_d.extend(d)
        else:
            out_s.append(s)
            out_d.append(d)
    return Layout.from_modes(tuple(out_s), tuple(out_d))


def tiled_divide(layout: object, tiler: object) -> object:
    """``((tile modes...), rest0, rest1, ...)``.

    >>> from layoutkit import tla
    >>> print(tla.tiled_divide(tla.make_layout((8, 6)), (2, 3)))
    ((2,3),4,2):((_1,8),2,24)
    """
    if isinstance(layout, ComposedLayout):
        return layout.with_inner(tiled_divide(layout.inner, tiler))
    return _unpack(zipped_divide(layout, tiler), False, True)  # type: ignore[arg-type]


def flat_divide(layout: object, tiler: object) -> object:
    """``(tile0, tile1, ..., rest0, rest1, ...)``.

    >>> from layoutkit import tla
    >>> print(tla.flat_divide(tla.make_layout((8, 6)), (2, 3)))
    (2,3,4,2):(_1,8,2,24)
    """
    if isinstance(layout, ComposedLayout):
        return layout.with_inner(flat_divide(layout.inner, tiler))
    return _unpack(zipped_divide(layout, tiler), True, True)  # type: ignore[arg-type]


def logical_product(block: object, tiler: object) -> object:
    """``(A, complement(A, size(A) * cosize(B)) o B)``: the block, repeated as B lays out copies.

    >>> from layoutkit import tla
    >>> print(tla.logical_product(tla.make_layout((2, 2), (1, 2)), tla.make_layout(3, 1)))
    ((2,2),3):((1,2),4)
    """
    if isinstance(block, ComposedLayout):
        return block if tiler is None else block.with_inner(logical_product(block.inner, tiler))
    A = as_layout(block, "logical_product: block")
    if tiler is None:
        return A
    if isinstance(tiler, list):
        tiler = tuple(tiler)
    if type(tiler) is tuple:
        return _by_mode(logical_product, A, tiler, "logical_product")
    if isinstance(tiler, ComposedLayout):
        return _product_by_swizzled(A, tiler)
    B = as_layout(tiler, "logical_product: tiler")
    return concat((A, composition(complement(A, A.size * B.cosize), B)))


def _product_by_swizzled(A: Layout, tiler: ComposedLayout) -> object:
    """``logical_product(A, Sw o L)`` as C++ builds it: the product with ``L``, under the swizzle that
    moves ``Sw``'s active bits through ``L`` and the product (C++ ``logical_product(Layout,
    ComposedLayout<Swizzle>)``); checked against ``(A, complement(A) o Sw o L)`` element by element."""
    sw, L = tiler.outer, tiler.inner
    if not isinstance(sw, Swizzle) or not isinstance(L, Layout) or tiler.offset != 0:
        raise ShapeError(f"logical_product: a composed tiler must be Swizzle o 0 o Layout; found {tiler}")
    new = cast(Layout, logical_product(A, L))
    if sw.bits == 0:
        return new
    b, m, s = sw.bits, sw.base, abs(sw.shift)
    zy = Layout.from_modes((Int(1 << m), Int(1 << b), Int(1 << (s - b)), Int(1 << b), Int(1)),
                      (Int(0), Int(1 << m), Int(0), Int(1 << (m + s)), Int(0)))
    only_zy = cast(Layout, composition(zy, L))
    active = int(layout_at(only_zy, np.array([int(only_zy.size) - 1]))[0])
    through = layout_at(L, np.array([active & sw.zzz_mask, active & sw.yyy_mask]))
    new_z, new_y = (int(v) for v in layout_at(new.mode(1), through))
    result = ComposedLayout(make_swizzle(new_y, new_z), Int(0), new)
    if new.size > NUMERIC_CHECK_LIMIT:
        raise ShapeError(f"logical_product: {A} x {tiler} is too large ({new.size}) to verify element by element")
    rest = complement(A, A.size * L.cosize)
    want = (A.table()[None, :] + layout_at(rest, sw(L.table()))[:, None]).reshape(-1)
    got = result.table()
    diff = np.flatnonzero(want != got)
    if diff.size:
        i = int(diff[0])
        raise ShapeError(f"logical_product: {A} x {tiler}: C++'s swizzled product {result} is not the product: at "
                         f"index {i} it gives {int(got[i])}, (A, complement(A) o Sw o L) gives {int(want[i])}")
    return result


def zipped_product(block: object, tiler: object) -> object:
    """``((block modes...), (product modes...))``."""
    if isinstance(block, ComposedLayout):
        return block.with_inner(zipped_product(block.inner, tiler))
    return tile_unzip(logical_product(block, tiler), tiler)  # type: ignore[arg-type]


def tiled_product(block: object, tiler: object) -> object:
    """``((block modes...), product0, product1, ...)``."""
    if isinstance(block, ComposedLayout):
        return block.with_inner(tiled_product(block.inner, tiler))
    return _unpack(zipped_product(block, tiler), False, True)  # type: ignore[arg-type]


def flat_product(block: object, tiler: object) -> object:
    """``(block0, block1, ..., product0, product1, ...)``."""
    if isinstance(block, ComposedLayout):
        return block.with_inner(flat_product(block.inner, tiler))
    return _unpack(zipped_product(block, tiler), True, True)  # type: ignore[arg-type]


def append_rank(layout: Layout, rank: int) -> Layout:
    """The layout as a tuple of ``rank`` modes, padded with ``_1:_0`` (C++ ``append<R>``; an
    integer-shaped layout counts as one mode).

    >>> print(append_rank(Layout(4, 2), 3))
    (4,_1,_1):(2,_0,_0)
    """
    s, d = layout.shape, layout.stride
    s = s if type(s) is tuple else (s,)
    d = d if type(d) is tuple else (d,)
    pad = max(rank - len(s), 0)
    return Layout.from_modes(s + (Int(1),) * pad, d + (Int(0),) * pad)


def _rank_product(block: object, tiler: object, name: str) -> tuple[Layout, Layout]:
    """``logical_product`` of the block and the tiler padded to the same rank; returns the two
    halves, each a tuple of that many modes (mode ``i`` of the second is the tiler's mode ``i``)."""
    A = as_layout(block, f"{name}: block")
    B = as_layout(tiler, f"{name}: tiler")
    r = max(A.rank, B.rank)
    result = logical_product(append_rank(A, r), append_rank(B, r))
    return cast(Layout, result).mode(0), cast(Layout, result).mode(1)


def _zip_modes(first: Layout, second: Layout) -> Layout:
    fs, ss = cast("tuple[Any, ...]", first.shape), cast("tuple[Any, ...]", second.shape)
    fd, sd = cast("tuple[Any, ...]", first.stride), cast("tuple[Any, ...]", second.stride)
    return Layout.from_modes(tuple(zip(fs, ss)), tuple(zip(fd, sd)))


def blocked_product(block: object, tiler: object) -> object:
    """Rank-sensitive product: mode ``i`` is ``(block_i, tiler_i)`` -- whole blocks laid out by
    the tiler (C++ ``blocked_product``; no coalescing, as in current CUTLASS).

    >>> from layoutkit import tla
    >>> print(tla.blocked_product(tla.make_layout((2, 2), (2, 1)), tla.make_layout((2, 3), (3, 1))))
    ((2,2),(2,3)):((2,12),(1,4))
    """
    if isinstance(block, ComposedLayout):
        return block.with_inner(blocked_product(block.inner, tiler))
    a, b = _rank_product(block, tiler, "blocked_product")
    return _zip_modes(a, b)


def raked_product(block: object, tiler: object) -> object:
    """Rank-sensitive product: mode ``i`` is ``(tiler_i, block_i)`` -- the blocks interleaved
    (C++ ``raked_product``).

    >>> from layoutkit import tla
    >>> print(tla.raked_product(tla.make_layout((2, 2), (2, 1)), tla.make_layout((2, 3), (3, 1))))
    ((2,2),(3,2)):((12,2),(4,1))
    """
    if isinstance(block, ComposedLayout):
        return block.with_inner(raked_product(block.inner, tiler))
    a, b = _rank_product(block, tiler, "raked_product")
    return _zip_modes(b, a)


__all__ = [
    "logical_divide",
    "zipped_divide",
    "tiled_divide",
    "flat_divide",
    "logical_product",
    "zipped_product",
    "tiled_product",
    "flat_product",
    "blocked_product",
    "raked_product",
    "zip2_by",
    "tile_unzip",
    "append_rank",
]
