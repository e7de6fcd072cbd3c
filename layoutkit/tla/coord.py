"""Coordinates <-> indices over nested shapes (CuTe ``crd2idx`` / ``idx2crd``, TLA ``crd2offset``).

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

import numbers
from typing import Any, TypeAlias, cast

import numpy as np

from ..algebra.nodes import Expr
from ..algebra.overflow import INT64
from ..errors import CoordinateError, ShapeError
from .int_tuple import MAX_NESTING, Int, as_int_tuple, compact_col_major, congruent, leaves, nesting_error, to_str

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
        from .layout import Layout  # numpy coordinates: the layout's evaluation proves int64 suffices or goes exact

        return Layout._make(shape, stride)(c)
    try:
        return _crd2idx(c, shape, stride, ())
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


def _crd2idx(c: Any, s: Any, d: Any, path: tuple[int, ...]) -> Any:
    if type(c) is tuple:
        if type(s) is not tuple:
            raise _Mismatch(path, f"the coordinate is a tuple of rank {len(c)} but the shape is the integer "
                                  f"{to_str(s)}")
        if len(c) != len(s):
            raise _Mismatch(path, f"the coordinate has rank {len(c)} but the shape has rank {len(s)}")
        total: Any = Int(0)
        for k, (ci, si, di) in enumerate(zip(c, s, d)):
            total = total + _crd2idx(ci, si, di, path + (k,))
        return total
    if type(s) is tuple:
        total = Int(0)
        last = len(s) - 1
        for k in range(last):
            p = _iprod(s[k])
            total = total + _crd2idx(c % p, s[k], d[k], path + (k,))
            c = c // p
        return total + _crd2idx(c, s[last], d[last], path + (last,))
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


__all__ = ["check_coord", "crd2idx", "crd2offset", "idx2crd", "crd2crd"]
