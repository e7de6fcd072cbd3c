"""CuTe thread-value (TV) layouts as :class:`~layoutkit.Fragment` s.

A TV layout (CuTe's ``tv_layout_A`` of a tiled MMA, ``layout_tv_tiled`` of a tiled copy) is a rank-2
``tla.Layout`` ``(thread, value) -> index`` whose image is the colexicographic index ``i + M*j`` of an
``M x N`` tile.  Its Fragment maps the tile's row-major coordinate ``(i, j)`` back to ``(thread,
value)``: the same placement read the other way.

Law: for every thread ``t`` and value ``v``, ``F.map_forward_index(c) == (v,)`` and ``t`` is one of
the threads of ``F.map_forward_thread(c, r)`` (over the replicas ``r``), where ``c`` is the tile
coordinate whose colexicographic index is ``tv(t, v)``.  Thread modes of stride 0 (threads that hold
the same elements, as the warps of a tiled MMA along N do for A) become the fragment's replicas;
the other modes must cover the tile once (a bijection), else a typed error names a witness.

>>> from layoutkit import tla
>>> tv = tla.make_layout(((2, 4), 2), ((8, 1), 4))       # 8 threads x 2 values over a 4 x 4 tile
>>> F = tv_fragment(tv, (4, 4))
>>> print(F)
Fragment((4, 4) -> (2,), replicate: 1, thread: 8, forward_thread: _i * 2 + _j // 2, forward_index: (_j % 2,))
>>> tv(5, 1), F.map_forward_thread([2, 3]), F.map_forward_index([2, 3])    # index 14 is (2, 3)
(14, 5, (1,))

:func:`fragment_tv` goes back: ``fragment_tv(tv_fragment(tv, tile))`` is ``tv`` up to the grouping of
its modes (the same function), and a layoutkit Fragment whose placement is strided gets a TV layout
CuTe can partition with.

>>> print(fragment_tv(F))
((2,4),2):((8,1),4)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..algebra.nodes import Const, Expr
from ..algebra.shapes import placeholder
from ..errors import NotBijectiveError, ShapeError, UnsupportedError
from ..fragment.fragment import Fragment, rep_var
from .int_tuple_structure import flatten
from .layout import Layout
from .layout import size as tla_size


def _modes(x: Layout) -> tuple[tuple[int, int], ...]:
    """``(extent, stride)`` of every leaf of a TV mode, colexicographic order."""
    shape, stride = flatten(x.shape), flatten(x.stride)
    if not isinstance(shape, tuple) or not isinstance(stride, tuple):
        return ((int(shape), int(stride)),)  # type: ignore[call-overload]  # a leaf: an int or tla.Int
    return tuple((int(s), int(d)) for s, d in zip(shape, stride))


def _digits(value: Expr, modes: Sequence[tuple[int, int]]) -> list[Expr]:
    """The colexicographic digits of ``value`` over the extents of ``modes``."""
    out, below = [], 1
    for extent, _ in modes:
        out.append(value // below % extent if extent > 1 else Const(0))
        below *= extent
    return out


def tv_fragment(tv: Layout, tile_shape: Sequence[int]) -> Fragment:
    """The Fragment over ``tile_shape`` (row-major coordinates) of the TV layout ``tv`` (module doc).

    Raises :class:`~layoutkit.errors.ShapeError` when ``tv`` is not a rank-2 ``tla.Layout`` or its
    image is not the tile's index range, and :class:`~layoutkit.errors.NotBijectiveError` (witness: two
    ``(thread, value)`` slots of one element, or an element no slot holds) when the non-replicated
    modes do not cover the tile exactly once; :class:`~layoutkit.errors.UnsupportedError` for a value
    mode of stride 0 (a thread holding one element in two registers, which a Fragment cannot say).

    >>> from layoutkit import tla
    >>> tv = tla.make_layout(((4, 2), 2), ((1, 0), 4))      # threads 4..7 repeat threads 0..3
    >>> F = tv_fragment(tv, (8,))
    >>> F.replicate_size, F.map_forward_thread([5], 0), F.map_forward_thread([5], 1), F.map_forward_index([5])
    (2, 1, 5, (1,))
    """
    if not isinstance(tv, Layout) or tv.rank != 2:
        raise ShapeError(f"tv_fragment: expected a rank-2 tla.Layout (thread, value) -> index; found {tv!r}")
    tile = tuple(int(e) for e in tile_shape)
    if not tile or any(e < 1 for e in tile):
        raise ShapeError(f"tv_fragment: tile_shape must be positive extents; found {tuple(tile_shape)}")
    threads, values = _modes(tv[0]), _modes(tv[1])
    if any(d == 0 and e > 1 for e, d in values):
        raise UnsupportedError(f"tv_fragment: {tv} has a value mode of stride 0 (one thread holds an element in "
                               "two registers); a Fragment gives each element one register")
    weights = np.cumprod([1] + [e for e, _ in threads])[:-1]
    kept = [(e, d, int(w)) for (e, d), w in zip(threads, weights) if d != 0 and e > 1]
    reps = [(e, int(w)) for (e, d), w in zip(threads, weights) if d == 0 and e > 1]
    value_weights = np.cumprod([1] + [e for e, _ in values])[:-1]
    used = [(e, d, int(w)) for (e, d), w in zip(values, value_weights) if e > 1]
    _check_cover(tv, tile, math.prod(e for e, _, _ in kept + used), [(e, w) for e, w in reps])
    coords = [placeholder(k, e) for k, e in enumerate(tile)]
    offset: Expr = Const(0)
    below = 1
    for c, e in zip(coords, tile):  # the tile's colexicographic index, as CuTe reads the TV image
        offset = offset + c * below
        below *= e
    replicate = math.prod(e for e, _ in reps)
    thread: Expr = Const(0)
    for e, d, w in kept:
        thread = thread + offset // d % e * w
    for digit, (_, w) in zip(_digits(rep_var(replicate), [(e, 0) for e, _ in reps]), reps):
        thread = thread + digit * w
    index: Expr = Const(0)
    for e, d, w in used:
        index = index + offset // d % e * w
    return Fragment.from_exprs(tile, (index,), thread, replicate=replicate)


def _check_cover(tv: Layout, tile: tuple[int, ...], slots: int, reps: list[tuple[int, int]]) -> None:
    """Refuse unless the slots of replica 0 (every stride-0 thread digit 0) hold each tile index once."""
    size = math.prod(tile)
    if slots > size:
        raise ShapeError(f"tv_fragment: {tv} has {slots} (thread, value) slots besides replicas; tile {tile} has "
                         f"{size} elements")
    threads = tla_size(tv[0])
    flat = np.arange(tla_size(tv), dtype=np.int64)
    first = np.ones(flat.size, dtype=bool)
    for e, w in reps:
        first &= flat % threads // w % e == 0
    where = flat[first]
    image = tv.table()[first]
    outside = (image < 0) | (image >= size)
    if outside.any():
        k = int(np.flatnonzero(outside)[0])
        raise ShapeError(f"tv_fragment: {tv} puts value {where[k] // threads} of thread {where[k] % threads} at index "
                         f"{int(image[k])}, outside the {size} indices of tile {tile}")
    order = np.argsort(image, kind="stable")
    twice = np.flatnonzero(image[order][1:] == image[order][:-1])
    if twice.size:
        a, b = (int(where[order[twice[0] + d]]) for d in (0, 1))
        hit = int(image[order[twice[0]]])
        raise NotBijectiveError(f"tv_fragment: {tv} puts tile index {hit} in thread {a % threads} value "
                                f"{a // threads} and thread {b % threads} value {b // threads}",
                                {"collision": ((a % threads, a // threads), (b % threads, b // threads), hit)})
    if image.size < size:
        missing = int(np.flatnonzero(np.bincount(image, minlength=size) == 0)[0])
        raise NotBijectiveError(f"tv_fragment: {tv} holds {image.size} of the {size} elements of tile {tile}; none "
                                f"holds index {missing}", {"unreachable": missing})


def _fit(values: np.ndarray) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The (extents, strides), colexicographic, of a strided map ``k -> values[k]`` with ``values[0] == 0``:
    each mode's stride is the value at the first index it moves, its extent the longest run of multiples of
    that stride which divides what is left (the caller checks the whole map)."""
    n, below = values.size, 1
    extents: list[int] = []
    strides: list[int] = []
    while below < n:
        stride = int(values[below])
        steps = np.arange(n // below, dtype=np.int64)
        bad = np.flatnonzero(values[steps * below] != steps * stride)
        run = int(bad[0]) if bad.size else n // below
        extent = max(e for e in range(1, run + 1) if (n // below) % e == 0)
        if extent == 1:
            break  # no mode fits: the caller's check refuses the map
        extents.append(extent)
        strides.append(stride)
        below *= extent
    return tuple(extents) or (1,), tuple(strides) or (0,)


def _mode(extents: tuple[int, ...], strides: tuple[int, ...]) -> tuple[object, object]:
    return (extents[0], strides[0]) if len(extents) == 1 else (extents, strides)


def fragment_tv(fragment: Fragment) -> Layout:
    """The CuTe TV layout ``(thread, value) -> i + M*j`` (colexicographic over the fragment's input shape) of
    ``fragment``: every replica's thread holds its element at the same value index.

    Raises :class:`~layoutkit.errors.UnsupportedError` when a ``(thread, register)`` slot holds no element
    or two (witness: the slot), or when the placement is not strided (no ``shape:stride`` gives it).

    >>> import layoutkit as lk
    >>> F = lk.Fragment([4, 8], forward_thread_fn=lambda i, j: i * 4 + j // 2, forward_index_fn=lambda i, j: j % 2)
    >>> print(fragment_tv(F))
    ((4,4),2):((8,1),4)
    """
    if not isinstance(fragment, Fragment):
        raise UnsupportedError(f"fragment_tv: expected an lk.Fragment; found {type(fragment).__name__}")
    tile = fragment.input_shape
    threads, values = fragment.thread_extent, math.prod(fragment.output_shape)
    thread = np.asarray(fragment.thread_table(), dtype=np.int64).reshape(fragment.replicate_size, -1)
    index = np.asarray(fragment.index_table(), dtype=np.int64).reshape(-1)
    # the colexicographic (CuTe) index of every element, in the fragment's row-major order
    colex = np.ravel_multi_index(np.unravel_index(np.arange(fragment.size), tile), tile, order="F")
    slot = (thread * values + index[None, :]).reshape(-1)
    table = np.full(threads * values, -1, dtype=np.int64)
    order = np.argsort(slot, kind="stable")
    twice = np.flatnonzero(slot[order][1:] == slot[order][:-1])
    if twice.size:
        k = int(slot[order[twice[0]]])
        raise UnsupportedError(f"fragment_tv: {fragment.describe()} puts two elements in thread {k // values} "
                               f"register {k % values}")
    table[slot] = np.tile(colex, fragment.replicate_size)
    if (table < 0).any():
        k = int(np.flatnonzero(table < 0)[0])
        raise UnsupportedError(f"fragment_tv: {fragment.describe()} leaves thread {k // values} register "
                               f"{k % values} empty; a CuTe TV layout fills every (thread, value) slot")
    grid = table.reshape(threads, values)
    tv = Layout(*zip(_mode(*_fit(grid[:, 0] - grid[0, 0])), _mode(*_fit(grid[0, :] - grid[0, 0]))))
    if grid[0, 0] != 0 or not np.array_equal(tv.table(), grid.T.reshape(-1)):
        raise UnsupportedError(f"fragment_tv: the placement of {fragment.describe()} is not strided: no CuTe "
                               "shape:stride maps (thread, value) to it")
    return tv


__all__ = ["fragment_tv", "tv_fragment"]
