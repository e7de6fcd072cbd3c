"""TLA / CuTe layouts: ``(shape, stride, origin_shape)`` over nested IntTuples.

``layout(coord) = crd2offset(coord, shape, stride)``.  ``origin_shape`` is CATLASS's logical
extent of each top-level mode (what is valid data); it never changes addressing.  It defaults to
the product of each top-level mode.  Integer (1-D) indices into a layout are colexicographic, as
in CuTe; :meth:`Layout.offset_table` and :meth:`Layout.to_layout` use the logical rank-``rank``
coordinates (one per top-level mode) instead.

>>> from layoutkit import tla
>>> w2xh4 = tla.make_layout(tla.make_shape(tla._2, 4), tla.make_stride(tla._12, tla._1))
>>> str(w2xh4), w2xh4.origin_shape
('(_2,4):(_12,_1)', (2, 4))
>>> a = tla.make_layout(((4, 2), (4, 3)), ((4, 16), (1, 32)))
>>> a(1, 5), a.origin_shape, a.size, a.cosize
(37, (8, 12), 96, 96)
>>> print(tla.get_tile_layout(a, (4, 4), (6, 10)).origin_shape)
(2, 2)
>>> print(a.to_layout())
Layout((8, 12) -> (96,), transform: (_i, _j) -> (_j // 4 * 32 + _i * 4 + _j % 4,))

Coordinates and indices

Coordinates <-> indices over nested shapes (CuTe ``crd2idx`` / ``idx2crd``, TLA ``crd2offset``).

A coordinate is congruent to (a coarsening of) its shape: where the coordinate holds an integer
and the shape a tuple, the integer is split **colexicographically** over the sub-modes (first
sub-mode fastest) and the LAST sub-mode takes the remaining quotient with no modulo -- so a tile
layout accepts coordinates of its parent.  Leaves may be Python ints, numpy integer arrays
(vectorised) or :mod:`layoutkit.algebra` index expressions (symbolic).

>>> crd2offset((1, 5), ((4, 2), (4, 3)), ((4, 16), (1, 32)))
37
>>> idx2crd(17, ((2, 3), 4)), crd2idx(((1, 2), 2), ((2, 3), 4))
(((1, 2), 2), 17)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator
from typing import Any, TypeAlias, cast

import numpy as np
from numpy.typing import NDArray

from ..algebra.layout import Layout as LkLayout
from ..algebra.nodes import Expr
from ..algebra.overflow import INT64, narrow_int64
from ..algebra.shapes import TABLE_LIMIT, placeholder
from ..errors import CoordinateError, LayoutError, LimitError, ShapeError, UnsupportedError
from .int_tuple_arith import ceil_div, compact_col_major
from .int_tuple_check import MAX_NESTING, as_int_tuple, nesting_error, to_str
from .int_tuple_structure import congruent, depth, get, leaves, product, product_each
from .static_int import Int, is_int

Coord: TypeAlias = Any
"""A coordinate or index: an int, an integer numpy array or an index expression, or a nested tuple of
them.  Its arithmetic is whatever the leaves' is (numpy broadcasting, expression building), so it is
not narrowed further."""


def _leaf_ok(c: object) -> bool:
    if isinstance(c, bool):
        return False
    if isinstance(c, numbers.Integral):
        return True
    if isinstance(c, np.ndarray):
        return c.dtype.kind in "iu"
    return isinstance(c, Expr)


def check_coord(coord: object, what: str = "coordinate") -> Coord:
    """Normalise a coordinate (lists -> tuples, numpy scalars -> int) and reject negative or
    non-integer leaves with a :class:`CoordinateError` naming the leaf."""
    return _check(coord, coord, (), what)


def _check(c: Any, whole: object, path: tuple[int, ...], what: str) -> Coord:
    t = type(c)
    if t is int or t is Int:
        if c < 0:
            raise CoordinateError(f"{what} {_show(whole)}: leaf {path} is negative ({int(c)})")
        return c
    if isinstance(c, (tuple, list)):
        if len(path) >= MAX_NESTING:
            raise nesting_error(what, path)
        return tuple(_check(v, whole, path + (k,), what) for k, v in enumerate(c))
    if isinstance(c, np.ndarray) and c.ndim == 0:
        c = c.item() if c.dtype.kind in "iu" else c
    if not _leaf_ok(c):
        raise CoordinateError(
            f"{what} {_show(whole)}: leaf {path} is {type(c).__name__} {c!r}, expected a non-negative integer "
            "(or an integer numpy array / index expression)"
        )
    if isinstance(c, numbers.Integral):
        if c < 0:
            raise CoordinateError(f"{what} {_show(whole)}: leaf {path} is negative ({int(c)})")
        return c if isinstance(c, Int) else int(c)
    if isinstance(c, np.ndarray) and c.size and int(c.min()) < 0:
        raise CoordinateError(f"{what} {_show(whole)}: leaf {path} holds a negative value ({int(c.min())})")
    return c


def _show(x: object) -> str:
    if isinstance(x, (tuple, list)):
        return "(" + ",".join(_show(v) for v in x) + ")"
    if isinstance(x, np.ndarray):
        return f"array{list(x.shape)}"
    return str(x)


def _iprod(x: Any) -> int:
    """Product of a mode, static when every leaf is (cheaper than ``product``'s Int arithmetic)."""
    if type(x) is not tuple:
        return cast(int, x)
    p: int = 1
    static = True
    for v in leaves(x):
        p *= v
        static = static and type(v) is Int
    return Int(p) if static else p


class _Mismatch(Exception):
    def __init__(self, path: tuple[int, ...], message: str):
        super().__init__(message)
        self.path = path


def crd2idx(coord: object, shape: object, stride: object = None) -> Coord:
    """Index of ``coord`` in the layout ``shape:stride`` (``stride`` defaults to compact
    column-major, giving the colexicographic 1-D index).

    >>> crd2idx((1, 2), (4, 8), (8, 1)), crd2idx(13, (4, 8)), crd2idx((1, 3), (4, 8))
    (10, 13, 13)
    >>> crd2idx((1, 2, 3), (4, 8))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    layoutkit.errors.CoordinateError: coordinate (1,2,3) does not fit the shape (4,8): at mode () the coordinate ...
    """
    return _checked_crd2idx(coord, shape, stride, "crd2idx")


def _checked_shape(shape: object, stride: object, what: str) -> tuple[Any, Any]:
    """``shape`` (positive integer leaves) and ``stride`` (integer leaves, congruent; compact
    column-major when None), normalised, or a :class:`ShapeError` naming the bad leaf: a float or
    zero extent would give an offset of no coordinate (or divide by zero)."""
    s = as_int_tuple(shape, f"{what} shape", minimum=1)
    if _has_empty_mode(s):
        raise ShapeError(f"{what}: the shape {to_str(s)} has an empty mode (no extent to address)")
    if stride is None:
        return s, compact_col_major(s)
    d = as_int_tuple(stride, f"{what} stride")
    if not congruent(s, d):
        raise ShapeError(f"{what}: shape {to_str(s)} and stride {to_str(d)} are not congruent")
    return s, d


def _has_empty_mode(shape: object, level: int = 0) -> bool:
    """Whether ``shape`` (a shape argument, possibly nested lists) is or holds an empty tuple."""
    if isinstance(shape, (tuple, list)):
        if level >= MAX_NESTING:
            raise nesting_error("shape", (0,) * level)
        return not shape or any(_has_empty_mode(m, level + 1) for m in shape)
    return False


def _checked_crd2idx(coord: object, shape: object, stride: object, what: str) -> Coord:
    shape, stride = _checked_shape(shape, stride, what)
    c = check_coord(coord)
    if any(isinstance(v, np.ndarray) for v in leaves(c)):
        # numpy coordinates: the layout's evaluation proves int64 suffices or goes exact
        return Layout.from_modes(shape, stride)(c)
    try:
        return crd2idx_unchecked(c, shape, stride, ())
    except _Mismatch as err:
        raise CoordinateError(
            f"coordinate {_show(c)} does not fit the shape {to_str(shape)}: at mode {err.path} {err}"
        ) from None


def crd2offset(coord: object, shape: object, stride: object) -> Coord:
    """TLA ``crd2offset(coord, shape, stride)``: the memory offset of a logical coordinate.

    Same map as :func:`crd2idx` with an explicit stride; extents must be positive integers.

    >>> crd2offset((1, 5), ((4, 2), (4, 3)), ((4, 16), (1, 32)))
    37
    >>> crd2offset(1, (2.5, 4), (1, 2))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    layoutkit.errors.ShapeError: crd2offset shape must be an integer or a tuple of IntTuples; ... is float 2.5)
    """
    if stride is None:
        raise ShapeError("crd2offset needs a stride (crd2idx defaults it to compact column-major)")
    return _checked_crd2idx(coord, shape, stride, "crd2offset")


def crd2idx_unchecked(c: Any, s: Any, d: Any, path: tuple[int, ...]) -> Any:
    """``crd2idx`` of a checked coordinate ``c`` over shape ``s`` and stride ``d`` (``path``: the mode
    reached so far, for the error); the caller has checked the arguments, so no check is repeated."""
    if type(c) is tuple:
        if type(s) is not tuple:
            raise _Mismatch(path, f"the coordinate is a tuple of rank {len(c)} but the shape is the integer "
                                  f"{to_str(s)}")
        if len(c) != len(s):
            raise _Mismatch(path, f"the coordinate has rank {len(c)} but the shape has rank {len(s)}")
        total: Any = Int(0)
        for k, (ci, si, di) in enumerate(zip(c, s, d)):
            total = total + crd2idx_unchecked(ci, si, di, path + (k,))
        return total
    if type(s) is tuple:
        total = Int(0)
        last = len(s) - 1
        for k in range(last):
            p = _iprod(s[k])
            total = total + crd2idx_unchecked(c % p, s[k], d[k], path + (k,))
            c = c // p
        return total + crd2idx_unchecked(c, s[last], d[last], path + (last,))
    return c * d


def idx2crd(idx: object, shape: object, stride: object = None) -> Coord:
    """Split ``idx`` into a coordinate congruent to ``shape``.

    Without ``stride`` (C++ ``idx2crd(i, s)``): an integer is split colexicographically with the
    last mode unbounded; a tuple index is split mode by mode (pycute instead uses the global
    prefix strides for every mode of a tuple index, which is wrong).  With ``stride`` (C++
    ``idx2crd(i, s, d)``, compact layouts only): each leaf is ``(i // d) % s``.

    >>> idx2crd(17, (4, 2)), idx2crd((5, 1), ((2, 3), 4)), idx2crd(17, (4, 2), (1, 4))
    ((1, 4), ((1, 2), 1), (1, 0))
    """
    i = check_coord(idx, "index")
    strided = stride is not None
    shape, stride = _checked_shape(shape, stride, "idx2crd")
    try:
        if not strided:
            return _idx2crd(i, shape, ())
        return _idx2crd_strided(i, shape, stride, ())
    except _Mismatch as err:
        raise CoordinateError(
            f"index {_show(i)} does not fit the shape {to_str(shape)}: at mode {err.path} {err}"
        ) from None


def _idx2crd(i: Any, s: Any, path: tuple[int, ...]) -> Any:
    if type(i) is tuple:
        if type(s) is not tuple or len(i) != len(s):
            raise _Mismatch(path, f"the index has rank {len(i)} but the shape {to_str(s)} has rank "
                                  f"{len(s) if type(s) is tuple else 1}")
        return tuple(_idx2crd(ik, sk, path + (k,)) for k, (ik, sk) in enumerate(zip(i, s)))
    if type(s) is tuple:
        out = []
        last = len(s) - 1
        for k in range(last):
            p = _iprod(s[k])
            out.append(_idx2crd(_mod(i, p), s[k], path + (k,)))
            i = _div(i, p)
        out.append(_idx2crd(i, s[last], path + (last,)))
        return tuple(out)
    return i


def _idx2crd_strided(i: Any, s: Any, d: Any, path: tuple[int, ...]) -> Any:
    if type(i) is tuple:
        if type(s) is not tuple or len(i) != len(s):
            raise _Mismatch(path, f"the index has rank {len(i)} but the shape {to_str(s)} has rank "
                                  f"{len(s) if type(s) is tuple else 1}")
        return tuple(_idx2crd_strided(ik, sk, dk, path + (k,)) for k, (ik, sk, dk) in enumerate(zip(i, s, d)))
    if type(s) is tuple:
        return tuple(_idx2crd_strided(i, sk, dk, path + (k,)) for k, (sk, dk) in enumerate(zip(s, d)))
    if s == 1:
        return Int(0)
    if not (type(d) is int or type(d) is Int) or d <= 0:
        raise _Mismatch(path, f"the stride {to_str(d)} of an extent-{to_str(s)} mode is not positive; idx2crd "
                              "with strides needs a compact layout's positive strides")
    return _mod(_div(i, d), s)


def _div(i: Any, p: int) -> Any:
    """``i // p`` for a non-negative index; an int64 array divided by ``p >= 2**63`` is all zeros (numpy
    cannot take such a divisor)."""
    if isinstance(i, np.ndarray) and p >= INT64:
        return np.zeros_like(i)
    return i // p


def _mod(i: Any, p: int) -> Any:
    """``i % p`` for a non-negative index (``i`` itself when an int64 array cannot reach ``p``)."""
    if isinstance(i, np.ndarray) and p >= INT64:
        return i
    return i % p


def crd2crd(coord: object, src_shape: object, dst_shape: object) -> Coord:
    """Re-express a coordinate of ``src_shape`` as a coordinate of ``dst_shape`` through the
    colexicographic 1-D index (mode by mode where all three are tuples of one rank).

    >>> crd2crd(13, (4, 8), (2, 16)), crd2crd((1, 3), (4, 8), (2, 16))
    ((1, 6), (1, 3))
    """
    if type(coord) is tuple and type(src_shape) is tuple and type(dst_shape) is tuple:
        if not len(coord) == len(src_shape) == len(dst_shape):
            raise CoordinateError(
                f"crd2crd: ranks differ: coordinate {_show(coord)}, {to_str(src_shape)}, {to_str(dst_shape)}"
            )
        return tuple(crd2crd(c, s, d) for c, s, d in zip(coord, src_shape, dst_shape))
    return idx2crd(crd2idx(coord, src_shape), dst_shape)


class Layout:
    """An immutable, hashable ``shape:stride`` layout with a CATLASS ``origin_shape``.

    ``Layout(shape, stride=None, origin_shape=None)``: ``stride`` defaults to compact column-major
    (CuTe ``LayoutLeft``); ``origin_shape`` to the product of each top-level mode.

    >>> L = Layout((4, (2, 3)), (2, (1, 8)))
    >>> str(L), L.rank, L.depth, L(0, (1, 2)), L(5)
    ('(4,(2,3)):(2,(1,8))', 2, 2, 17, 3)
    """

    __slots__ = ("_tla_shape", "_stride", "_origin", "_hash")
    _tla_shape: object  # an IntTuple
    _stride: object  # an IntTuple congruent to the shape
    _origin: tuple[int, ...] | None
    _hash: int | None

    def __init__(self, shape: object, stride: object = None, origin_shape: object = None) -> None:
        shape = as_int_tuple(shape, "Layout shape", minimum=1)
        if _has_empty_mode(shape):
            raise ShapeError(f"Layout shape {to_str(shape)} has an empty mode (no extent to address)")
        if stride is None:
            stride = compact_col_major(shape)
        else:
            stride = as_int_tuple(stride, "Layout stride")
            if not congruent(shape, stride):
                raise ShapeError(
                    f"Layout shape {to_str(shape)} and stride {to_str(stride)} must be congruent (same nesting)"
                )
        origin = None if origin_shape is None else check_origin(origin_shape, shape)
        self._tla_shape = shape
        self._stride = stride
        self._origin = origin
        self._hash = None

    @classmethod
    def from_modes(cls, shape: object, stride: object, origin: tuple[int, ...] | None = None) -> Layout:
        """Trusted constructor for results of the algebra (no validation).

        Layouts are immutable: ``shape``, ``stride`` and ``origin_shape`` are read-only properties
        and ``__slots__`` forbids new attributes (the private slots are set only here)."""
        obj = object.__new__(cls)
        obj._tla_shape = shape
        obj._stride = stride
        obj._origin = origin
        obj._hash = None
        return obj

    # ---- accessors ------------------------------------------------------------------------------
    @property
    def shape(self) -> object:
        return self._tla_shape

    @property
    def stride(self) -> object:
        return self._stride

    @property
    def origin_shape(self) -> tuple[int, ...]:
        """Logical extent of each top-level mode (CATLASS ``originShape``)."""
        if self._origin is None:
            return tuple(int(v) for v in product_each(self._tla_shape))
        return self._origin

    @property
    def rank(self) -> int:
        s = self._tla_shape
        return len(s) if type(s) is tuple else 1

    @property
    def depth(self) -> int:
        return depth(self._tla_shape)

    @property
    def size(self) -> int:
        """Number of coordinates (``size(shape)``)."""
        return product(self._tla_shape)

    @property
    def cosize(self) -> int:
        """``max(layout(i)) + 1`` over the domain with absolute strides (C++ ``cosize``)."""
        total = 1
        for s, d in zip(leaves(self._tla_shape), leaves(self._stride)):
            total += (s - 1) * abs(d)
        return total

    def mode(self, *index: int) -> Layout:
        """The sub-layout ``get<I0, I1, ...>(layout)`` (default origin).

        >>> print(Layout(((4, 2), (4, 3)), ((4, 16), (1, 32))).mode(1))
        (4,3):(1,32)
        """
        s, d = self._tla_shape, self._stride
        if len(index) == 1 and type(s) is tuple and type(index[0]) is int and -len(s) <= index[0] < len(s):
            return Layout.from_modes(s[index[0]], cast("tuple[object, ...]", d)[index[0]])
        return Layout.from_modes(get(s, *index), get(d, *index))

    def __getitem__(self, index: int) -> Layout:
        return self.mode(index)

    def __len__(self) -> int:
        return self.rank

    def __iter__(self) -> Iterator[Layout]:
        return (self.mode(i) for i in range(self.rank))

    def with_origin_shape(self, origin_shape: object) -> Layout:
        """The same layout with another ``origin_shape``."""
        return Layout.from_modes(self._tla_shape, self._stride, check_origin(origin_shape, self._tla_shape))

    # ---- evaluation -----------------------------------------------------------------------------
    def __call__(self, *coord: object) -> object:
        """``layout(coord)`` = ``crd2offset(coord, shape, stride)``; ``layout(i, j)`` packs the
        arguments into one coordinate.  Integer leaves give an int; numpy integer arrays are
        evaluated element-wise; index expressions give an expression."""
        if not coord:
            raise CoordinateError(f"{self} needs a coordinate")
        fast = self._call_arrays(coord)
        if fast is not None:
            return fast
        c = coord[0] if len(coord) == 1 else coord
        c = check_coord(c)
        wide = False
        if any(isinstance(v, np.ndarray) for v in leaves(c)):
            # numpy arithmetic: exact only while no offset can leave int64 (integer leaves count too)
            top = max([int(v.max()) for v in leaves(c) if isinstance(v, np.ndarray) and v.size]
                      + [int(v) for v in leaves(c) if is_int(v)], default=0)
            wide = not self._fits_int64(top)
        try:
            value = crd2idx_unchecked(_as_objects(c) if wide else c, self._tla_shape, self._stride, ())
        except _Mismatch as err:
            raise CoordinateError(
                f"coordinate {_show(c)} does not fit the layout {self}: at mode {err.path} {err}"
            ) from None
        if wide:
            return narrow_int64(value, self)
        return int(value) if is_int(value) else value

    def _call_arrays(self, coord: tuple[object, ...]) -> NDArray[np.int64] | None:
        """``layout(m, n, ...)`` with one int64 array per top mode, in one pass per mode plus one
        reduction per array (its maximum viewed as unsigned: a negative value shows as >= 2**63, so one
        reduction checks both the sign and the int64 bound), accumulating in place.  None when the
        arguments are anything else, or a value is negative or could overflow: the general path then
        answers (and names the bad leaf)."""
        shape = self._tla_shape
        if type(shape) is not tuple or len(coord) != len(shape) or len(coord) < 2:
            return None
        if not all(type(v) is int for v in leaves(self._stride)):  # symbolic or special strides
            return None
        arrays: list[NDArray[np.int64]] = []
        for a in coord:
            if not (isinstance(a, np.ndarray) and type(a) is np.ndarray and a.dtype == np.int64 and a.size):
                return None
            if arrays and a.shape != arrays[0].shape:
                return None
            arrays.append(a)
        top = max(int(a.view(np.uint64).max()) for a in arrays)
        if top >= 1 << 63 or not self._fits_int64(top):
            return None
        total: NDArray[np.int64] | None = None
        strides = cast(tuple[Any, ...], self._stride)
        for k, (a, s, d) in enumerate(zip(arrays, shape, strides)):
            term = a * int(d) if type(s) is not tuple else np.asarray(crd2idx_unchecked(a, s, d, (k,)), dtype=np.int64)
            if total is None:
                total = term if term is not a else term.copy()
            else:
                np.add(total, term, out=total)
        return total

    def _fits_int64(self, top: int) -> bool:
        """Whether offsets of coordinates whose leaves are at most ``top`` stay inside int64 in numpy:
        every leaf's share of a coordinate is at most ``top``, so every partial sum is at most
        ``top * sum(|stride|)`` (and every stride must itself be an int64, even when ``top`` is 0)."""
        return max(top, 1) * sum(abs(int(d)) for d in leaves(self._stride)) < INT64 and self.size < INT64

    def table(self) -> NDArray[np.int64]:
        """``layout(i)`` for every colexicographic index ``i < size`` (int64 array; exact, or
        :class:`~layoutkit.errors.IntegerOverflowError` for an offset past int64).

        >>> make_layout((4,), (2**61,)).table().tolist()
        [0, 2305843009213693952, 4611686018427387904, 6917529027641081856]
        """
        check_table_size(self.size, f"{self}.table()")
        index: Any = np.arange(self.size, dtype=np.int64)
        wide = not self._fits_int64(self.size - 1)
        out = crd2idx_unchecked(index.astype(object) if wide else index, self._tla_shape, self._stride, ())
        exact = narrow_int64(out, self) if wide else np.asarray(out, dtype=np.int64)
        flat: NDArray[np.int64] = np.broadcast_to(exact, (self.size,)).copy()
        return flat

    def offset_table(self) -> NDArray[np.int64]:
        """Offsets over the logical ``origin_shape``: ``out[i, j, ...] = layout((i, j, ...))``
        (one coordinate per top-level mode; numpy indexing)."""
        origin = self.origin_shape
        check_table_size(math.prod(origin), f"{self}.offset_table()")
        modes = self._modes()
        wide = not self._fits_int64(max(origin, default=1) - 1)
        coords = tuple(
            np.arange(e, dtype=object if wide else np.int64).reshape([e if k == d else 1
                                                                      for k in range(len(origin))])
            for d, e in enumerate(origin)
        )
        total = crd2idx_unchecked(coords, modes[0], modes[1], ())
        exact = narrow_int64(total, self) if wide else np.asarray(total, dtype=np.int64)
        table: NDArray[np.int64] = np.broadcast_to(exact, origin).copy()
        return table

    def _modes(self) -> tuple[tuple[object, ...], tuple[object, ...]]:
        s, d = self._tla_shape, self._stride
        return (s, cast("tuple[object, ...]", d)) if type(s) is tuple else ((s,), (d,))

    def to_layout(self) -> LkLayout:
        """An ``lk.Layout`` over the logical ``origin_shape`` with one output, the offset, built
        from index expressions (symbolic, printable, provable).

        >>> from layoutkit import tla
        >>> print(tla.make_layout_from_tag("zN", "float16", 32, 32).to_layout())
        Layout((32, 32) -> (1024,), transform: (_i, _j) -> (_j // 16 * 512 + _i * 16 + _j % 16,))
        """
        origin = self.origin_shape
        if any(e <= 0 for e in origin):
            raise ShapeError(
                f"to_layout: the origin shape {to_str(origin)} of {self} has an empty dim "
                "(a tile past the end holds no valid elements)"
            )
        shape, stride = self._modes()
        variables = tuple(placeholder(d, int(e)) for d, e in enumerate(origin))
        offset = crd2idx_unchecked(variables, shape, stride, ())
        return LkLayout.from_exprs(tuple(int(e) for e in origin), (offset,))

    # ---- identity, printing ---------------------------------------------------------------------
    def _key(self) -> tuple[object, ...]:
        return (self._tla_shape, self._stride, self.origin_shape)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Layout):
            return NotImplemented
        return self._tla_shape == other._tla_shape and self._stride == other._stride and (
            self.origin_shape == other.origin_shape
        )

    def __hash__(self) -> int:
        h: int | None = self._hash
        if h is None:
            h = hash(("tla.Layout",) + self._key())
            self._hash = h
        return h

    def __reduce__(self) -> tuple[Any, ...]:
        return (Layout.from_modes, (self._tla_shape, self._stride, self._origin))

    def __str__(self) -> str:
        return f"{to_str(self._tla_shape)}:{to_str(self._stride)}"

    def __repr__(self) -> str:
        if self._origin is None or self._origin == tuple(product_each(self._tla_shape)):
            return str(self)
        return f"{self} (origin {to_str(self._origin)})"


def check_origin(origin: object, shape: object) -> tuple[int, ...]:
    """Validate an origin shape: a flat tuple (or an int for rank 1) of non-negative ints, one
    per top-level mode of ``shape``."""
    o = as_int_tuple(origin, "origin_shape", minimum=0)
    if type(o) is not tuple:
        o = (o,)
    r = len(shape) if type(shape) is tuple else 1
    if len(o) != r or any(type(v) is tuple for v in o):
        raise ShapeError(
            f"origin_shape must be a flat tuple with one extent per top-level mode of {to_str(shape)} "
            f"(rank {r}); found {to_str(o)}"
        )
    return tuple(int(cast(int, v)) for v in o)


def check_table_size(points: int, what: str) -> None:
    """Refuse, with a LimitError, a table of more than :data:`~layoutkit.algebra.shapes.TABLE_LIMIT` entries
    (a layout's size is exact at any magnitude; only enumerating it is bounded)."""
    if points > TABLE_LIMIT:
        raise LimitError(f"{what} would hold {points} entries; at most 2**26 are enumerated", TABLE_LIMIT, points)


def is_layout(x: object) -> bool:
    return isinstance(x, Layout)


def make_layout(*args: object, origin_shape: object = None) -> Layout:
    """Build a layout (CATLASS ``MakeLayout`` / CuTe ``make_layout``).

    * ``make_layout(shape, stride, origin_shape=None)``;
    * ``make_layout(shape)``: compact column-major strides (CuTe ``LayoutLeft``);
    * ``make_layout(n)`` with an integer: the TLA vector layout ``(n):(_1)``;
    * ``make_layout(layout0, layout1, ...)``: concatenate layouts as modes.

    >>> print(make_layout((16, 2), (1, 16)), make_layout(128), make_layout((4, 8)))
    (16,2):(1,16) (128):(_1) (4,8):(_1,4)
    >>> print(make_layout(make_layout(4, 2), make_layout((2, 2), (1, 8))))
    (4,(2,2)):(2,(1,8))
    """
    if args and all(isinstance(a, Layout) for a in args):
        if origin_shape is not None:
            raise ShapeError("make_layout of layouts takes no origin_shape")
        layouts = cast("tuple[Layout, ...]", args)
        return Layout.from_modes(tuple(a.shape for a in layouts), tuple(a.stride for a in layouts))
    if len(args) in (1, 2, 3) and _has_empty_mode(args[0]):
        # CuTe's rank-0 layout has no element to address; TLA refuses it, and so do we
        raise ShapeError(f"make_layout needs a shape with at least one extent in every mode; found "
                         f"{to_str(args[0]) if isinstance(args[0], (tuple, list)) else repr(args[0])}")
    if len(args) == 1:
        shape = args[0]
        if is_int(shape):
            n = as_int_tuple(shape, "vector length", minimum=1)
            return Layout((n,), (Int(1),), origin_shape)
        return Layout(shape, None, origin_shape)
    if len(args) == 2:
        return Layout(args[0], args[1], origin_shape)
    if len(args) == 3 and origin_shape is None:
        return Layout(args[0], args[1], args[2])
    raise ShapeError(
        f"make_layout takes (shape), (shape, stride), (shape, stride, origin_shape) or layouts; found {len(args)} "
        f"arguments: {', '.join(type(a).__name__ for a in args)}"
    )


def _as_objects(coord: Any) -> Any:
    """A coordinate with its array leaves as object arrays of Python ints (exact arithmetic)."""
    if type(coord) is tuple:
        return tuple(_as_objects(c) for c in coord)
    return coord.astype(object) if isinstance(coord, np.ndarray) else coord


def get_tile_layout(layout: Layout, tile_shape: object, coord: object) -> Layout:
    """CATLASS ``GetTileLayout``: the layout of the tile of ``tile_shape`` elements whose first
    element is at the logical element coordinate ``coord`` of ``layout``.

    The stride is unchanged.  A flat (depth <= 1) layout takes ``tile_shape`` as its shape; a mode
    ``(inner, outer)`` of a nested layout becomes ``(inner, ceil(tile / inner))`` (fractal round-up).
    ``origin[d] = min(tile[d], max(parent_origin[d] - coord[d], 0))``: clipped to what is left,
    0 past the end.

    >>> from layoutkit import tla
    >>> zn = tla.make_layout_from_tag("zN", "float16", 100, 100)
    >>> t = get_tile_layout(zn, (32, 48), (96, 64))
    >>> str(t), t.origin_shape
    ('((_16,2),(_16,3)):((_16,_256),(_1,1792))', (4, 36))
    """
    if not isinstance(layout, Layout):
        raise ShapeError(f"get_tile_layout expects a tla.Layout, found {type(layout).__name__}")
    tile = as_int_tuple(tile_shape, "tile_shape", minimum=1)
    crd = as_int_tuple(coord, "tile coordinate")
    if type(tile) is not tuple or depth(tile) != 1:
        raise ShapeError(f"get_tile_layout: tile_shape must be a flat tuple (depth 1); found {to_str(tile)}")
    if type(crd) is not tuple or depth(crd) != 1 or len(crd) != len(tile):
        raise CoordinateError(
            f"get_tile_layout: coord must be a flat tuple of rank {len(tile)} like tile_shape {to_str(tile)}; "
            f"found {to_str(crd)}"
        )
    flat_tile, flat_crd = cast("tuple[int, ...]", tile), cast("tuple[int, ...]", crd)  # depth 1, checked above
    if any(c < 0 for c in flat_crd):
        raise CoordinateError(f"get_tile_layout: coord {to_str(crd)} has a negative element")
    if len(tile) != layout.rank:
        raise ShapeError(
            f"get_tile_layout: tile_shape {to_str(tile)} has rank {len(tile)} but the layout {layout} has rank "
            f"{layout.rank}"
        )
    parent = layout.origin_shape
    origin = tuple(min(int(t), max(int(o) - int(c), 0)) for t, o, c in zip(flat_tile, parent, flat_crd))
    shape = layout.shape
    if type(shape) is not tuple:
        return Layout.from_modes(tile[0], layout.stride, origin)
    if depth(shape) <= 1:
        return Layout.from_modes(tile, layout.stride, origin)
    return Layout.from_modes(tuple(_tile_mode(m, t, layout) for m, t in zip(shape, flat_tile)), layout.stride, origin)


def _tile_mode(mode: object, extent: int, layout: Layout) -> object:
    if type(mode) is not tuple:
        return int(extent)
    if len(mode) == 2 and all(type(v) is not tuple for v in mode):
        inner = cast(int, mode[0])
        return (inner, int(ceil_div(int(extent), int(inner))))
    raise UnsupportedError(
        f"get_tile_layout: mode {to_str(mode)} of {layout} is neither an integer nor an (inner, outer) pair; "
        "CATLASS tiles only flat layouts and rank-2 fractal modes"
    )


def size(x: object) -> int:
    """Number of elements of a layout or a shape.

    >>> size(make_layout((4, 8))), size((2, (3, 4)))
    (32, 24)
    """
    if isinstance(x, (tuple, int)):
        return product(x)
    value = getattr(x, "size", None)
    if value is None:
        raise LayoutError(f"size needs a layout or a shape; found {type(x).__name__}")
    return cast(int, value)


def cosize(x: object) -> int:
    """``max(layout(i)) + 1`` (C++ ``cosize``).

    >>> cosize(make_layout((4, 8), (8, 1)))
    32
    """
    value = getattr(x, "cosize", None)
    if value is None:
        raise LayoutError(f"cosize needs a layout; found {type(x).__name__}")
    return cast(int, value)


def shape(x: Layout) -> object:
    return x.shape


def stride(x: Layout) -> object:
    return x.stride


def origin_shape(x: Layout) -> tuple[int, ...]:
    return x.origin_shape


__all__ = [
    "Layout",
    "is_layout",
    "make_layout",
    "get_tile_layout",
    "crd2offset",
    "size",
    "cosize",
    "shape",
    "stride",
    "origin_shape",
    "check_origin",
    "check_table_size",
    "check_coord",
    "crd2idx",
    "crd2idx_unchecked",
    "idx2crd",
    "crd2crd",
]
