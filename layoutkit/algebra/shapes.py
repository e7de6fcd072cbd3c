"""Placeholders, shape, arity and coordinate checks, and row-major index helpers shared by layouts and
fragments.

>>> placeholder(0, 4), check_shape(8), positive_int(3, "factor")
(Var('_i', 4), (8,), 3)
>>> print(row_major_flat((2, 4)))
_i * 4 + _j
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import (
    CoordinateError,
    ExprError,
    LayoutError,
    LimitError,
    ShapeError,
    ShapeStrideError,
    UserFunctionError,
)
from .evaluate import grid
from .nodes import MAX_EXTENT, Const, Expr, Var, add, as_expr, floordiv, floormod, scale

_NAMES = "ijklmnopqrstuvwxyzabcdefgh"


def placeholder(dim: int, extent: int | None) -> Var:
    """The TileLang placeholder of input dim ``dim``: ``_i, _j, _k, _l, ...``.

    >>> placeholder(2, 8)
    Var('_k', 8)
    """
    return Var("_" + _NAMES[dim % len(_NAMES)] + ("" if dim < len(_NAMES) else str(dim // len(_NAMES))), extent)


MAX_RANK = 64
"""Most input dims of a layout."""
MAX_SIZE = MAX_EXTENT
"""Most coordinates of a domain (``prod(shape)``): row-major offsets stay inside int64."""


TABLE_LIMIT = 2**26
"""Most points (coordinates times replicas) a table, an output box or an enumeration evaluates (each
int64 column of such a table is 512 MiB); larger domains are refused with a LimitError instead of
allocating without bound."""


def check_table(shape: Sequence[int], what: str | Callable[[], str], copies: int = 1) -> None:
    """A :class:`~layoutkit.errors.LimitError` naming ``what`` when a table of ``shape`` with ``copies``
    values per coordinate has more than :data:`TABLE_LIMIT` points (checked before it is allocated; a
    callable ``what`` is called only then: describing a huge layout costs more than a small table).

    >>> check_table((1 << 13, 1 << 14), "a table")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    layoutkit.errors.LimitError: a table would evaluate 134217728 points; at most 2**26 are enumerated ...
    """
    points = math.prod(shape) * copies
    if points > TABLE_LIMIT:
        what = what if isinstance(what, str) else what()
        raise LimitError(f"{what} would evaluate {points} points; at most 2**26 are enumerated (a symbolic "
                         f"method, e.g. prove_bijective('isl'), works on larger domains)", TABLE_LIMIT, points)


def enumerable_grid(shape: Sequence[int], what: str | Callable[[], str], copies: int = 1
                    ) -> tuple[NDArray[np.int64], ...]:
    """:func:`~layoutkit.algebra.evaluate.grid` of ``shape`` after :func:`check_table`."""
    check_table(shape, what, copies)
    return grid(shape)


def coordinate_tuple(coord: object, rank: int, what: str) -> tuple[Any, ...]:
    """``coord`` as a tuple of ``rank`` entries, or a ShapeError naming ``what``."""
    if isinstance(coord, (str, bytes)) or not isinstance(coord, (Sequence, np.ndarray)):
        raise ShapeError(f"{what} takes a sequence of {rank} coordinates; found {type(coord).__name__} {coord!r}")
    out = tuple(coord)
    if len(out) != rank:
        raise ShapeError(f"{what} takes {rank} coordinates; found {len(out)}: {out}")
    return out


def check_shape(shape: object, what: str = "Layout input shape") -> tuple[int, ...]:
    """Validate a shape: a non-empty sequence of positive integers, at most :data:`MAX_RANK` of them,
    whose product is at most :data:`MAX_SIZE`.

    >>> check_shape([2**40, 2**40])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    layoutkit.errors.LimitError: Layout input shape (1099511627776, 1099511627776) has ... coordinates; at most ...
    """
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if isinstance(shape, (str, bytes, bytearray, memoryview, set, frozenset, dict)):
        # bytes iterate as integers, a set or a dict in no order the caller chose: none is a shape
        raise ShapeError(f"{what} must be a sequence of positive integers; found {type(shape).__name__} {shape!r:.60}")
    try:
        dims: tuple[object, ...] = tuple(shape)  # type: ignore[arg-type]
    except TypeError:
        raise ShapeError(f"{what} must be a sequence of positive integers; found {shape!r}") from None
    if not dims:
        raise ShapeError(f"{what} must have at least one dimension; found ()")
    out = []
    for d, e in enumerate(dims):
        if isinstance(e, bool) or not isinstance(e, (int, np.integer)):
            raise ShapeError(f"{what} must be positive integers; found {dims!r} (dim {d} is {e!r})")
        if e <= 0:
            raise ShapeError(f"{what} must be positive integers; found {dims!r} (dim {d} is {e})")
        out.append(int(e))
    if len(out) > MAX_RANK:
        raise LimitError(f"{what} has rank {len(out)}; at most {MAX_RANK} dims are supported", MAX_RANK, len(out))
    size = math.prod(out)
    if size > MAX_SIZE:
        raise LimitError(f"{what} {tuple(out)} has {size} coordinates; at most 2**62 are supported", MAX_SIZE, size)
    return tuple(out)


def positional_arity(fn: Callable[..., object]) -> tuple[int, int | None] | None:
    """``(required, most)`` positional arguments ``fn`` takes (``most`` None for ``*args``), or None
    when its signature cannot be read.

    >>> positional_arity(lambda i, j=0: i), positional_arity(lambda *a: 0)
    ((1, 2), (0, None))
    """
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    lo, hi = 0, 0
    for p in sig.parameters.values():
        if p.kind == p.VAR_POSITIONAL:
            return lo, None
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            hi += 1
            if p.default is p.empty:
                lo += 1
    return lo, hi


def call_index_fn(fn: Callable[..., object], args: Sequence[Expr], what: str) -> tuple[Expr, ...]:
    """Call a user index function with placeholder variables and normalise what it returns."""
    arity = positional_arity(fn)
    n = len(args)
    if arity is not None and not (arity[0] <= n and (arity[1] is None or n <= arity[1])):
        want = arity[0] if arity[0] == arity[1] else f"{arity[0]}..{arity[1]}"
        raise ShapeError(f"{what} must take {n} arguments (one per input dim); the function takes {want}")
    return normalize_outputs(call_user(fn, args, what), what)


def call_user(fn: Callable[..., object], args: Sequence[object], what: str) -> object:
    """``fn(*args)``; an exception the user code raises (other than a LayoutError, which the expression
    operators raise on purpose) becomes a :class:`UserFunctionError` chaining the original.

    >>> call_user(lambda i: i.nope, [0], "forward")
    Traceback (most recent call last):
    ...
    layoutkit.errors.UserFunctionError: forward raised AttributeError: 'int' object has no attribute 'nope'
    """
    try:
        return fn(*args)
    except LayoutError:
        raise
    except Exception as err:  # noqa: BLE001 - user code may raise anything
        text = " ".join(str(err).split())
        raise UserFunctionError(f"{what} raised {type(err).__name__}: {text[:200]}") from err


def sequence_arg(value: object, what: str) -> tuple[Any, ...]:
    """``value`` as a tuple when it is a list or tuple, else a :class:`~layoutkit.errors.ShapeError` naming
    ``what`` and what was found (a constructor argument that must be a sequence).

    >>> sequence_arg([1, 2], "repeats")
    (1, 2)
    >>> sequence_arg(None, "repeats")
    Traceback (most recent call last):
        ...
    layoutkit.errors.ShapeError: repeats: expected a list or tuple; found NoneType None
    """
    if not isinstance(value, (tuple, list)):
        raise ShapeError(f"{what}: expected a list or tuple; found {type(value).__name__} {value!r:.60}")
    return tuple(value)


def normalize_outputs(result: object, what: str) -> tuple[Expr, ...]:
    items = result if isinstance(result, (tuple, list)) else (result,)
    if not items:
        raise ShapeError(f"{what} returned no output expressions")
    out = []
    for k, item in enumerate(items):
        if isinstance(item, (np.ndarray,)) or item is None:
            raise ExprError(f"{what}: output {k} is {item!r}, expected an integer index expression")
        try:
            out.append(as_expr(item))
        except ExprError as err:
            raise ExprError(f"{what}: output {k}: {err}") from None
    return tuple(out)


def row_major_flat(shape: Sequence[int]) -> Expr:
    """``sum_d x_d * stride_d`` over the placeholders of ``shape`` (row-major)."""
    flat: Expr = Const(0)
    for d, (e, stride) in enumerate(zip(shape, _strides(shape))):
        flat = add(flat, scale(placeholder(d, e), stride))
    return flat


def unflatten_mapping(shape: Sequence[int], flat: Expr) -> dict[Var, Expr]:
    """Placeholders of ``shape`` as digits of a row-major flat index expression."""
    return {
        placeholder(d, e): floormod(floordiv(flat, Const(stride)), Const(e))
        for d, (e, stride) in enumerate(zip(shape, _strides(shape)))
    }


def reshape_mapping(old_shape: Sequence[int], new_shape: Sequence[int]) -> dict[Var, Expr]:
    """Substitution that re-expresses the placeholders of ``old_shape`` through those of
    ``new_shape`` (same element count, row-major on both sides)."""
    return unflatten_mapping(old_shape, row_major_flat(new_shape))


def _strides(shape: Sequence[int]) -> list[int]:
    return [math.prod(shape[d + 1 :]) for d in range(len(shape))]


def positive_int(value: object, what: str) -> int:
    """``value`` as an int when it is a positive integer (not a bool), else a ShapeError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ShapeError(f"{what} must be a positive integer; found {value!r}")
    return int(value)


def region_ranges(region: object, shape: tuple[int, ...], what: str) -> list[tuple[int, int]]:
    """``region`` (per dim a ``(lo, hi_exclusive)`` pair or a slice; open slice ends take the extent) as
    integer pairs, checked for type and rank (not yet for bounds).

    >>> region_ranges([(0, 2), slice(1, None)], (4, 4), "L")
    [(0, 2), (1, 4)]
    """
    if isinstance(region, (str, bytes)) or not isinstance(region, Sequence):
        raise ShapeError(f"region must be a sequence of (lo, hi) pairs or slices, one per dim; found {region!r}")
    if len(region) != len(shape):
        raise ShapeError(f"region {region} has {len(region)} ranges; {what} has rank {len(shape)}")
    out = []
    for d, r in enumerate(region):
        if isinstance(r, slice):
            if r.step not in (None, 1):
                raise ShapeError(f"region dim {d} must be a contiguous range: slices take no step; found {r}")
            pair: tuple[object, ...] = (0 if r.start is None else r.start, shape[d] if r.stop is None else r.stop)
        elif isinstance(r, Sequence) and not isinstance(r, (str, bytes)):
            pair = tuple(r)
        else:
            raise ShapeError(f"region dim {d} must be (lo, hi_exclusive) or a slice; found {r!r}")
        if len(pair) != 2 or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in pair):
            raise ShapeError(f"region dim {d} must be (lo, hi_exclusive) with integer bounds; found {r!r}")
        out.append((int(pair[0]), int(pair[1])))  # type: ignore[call-overload]
    return out


def check_coords(flat: NDArray[np.int64], shape: tuple[int, ...], describe: Callable[[], str]) -> None:
    """Raise CoordinateError naming the first coordinate outside the input ``shape`` (of the map
    ``describe()`` names).

    ``flat`` is ``[N, n]`` int64.  Viewed as unsigned, a negative coordinate is huge, so one max
    per column checks both bounds; a contiguous ``flat`` is first checked in a single pass against
    the smallest extent (exact for square shapes), columns only when that is inconclusive."""
    if not flat.size:
        return
    unsigned = flat.view(np.uint64)
    if flat.flags.c_contiguous and int(unsigned.reshape(-1).max()) < min(shape):
        return
    if all(int(unsigned[:, d].max()) < e for d, e in enumerate(shape)):
        return
    bad = np.flatnonzero(np.any((flat < 0) | (flat >= np.asarray(shape)), axis=1))[0]
    first = tuple(int(v) for v in flat[bad])
    raise CoordinateError(f"coordinate {first} is outside the input shape {shape} of {describe()}")

def flat_coords(
    coords: ArrayLike, shape: tuple[int, ...], describe: Callable[[], str]
) -> tuple[NDArray[np.int64], tuple[int, ...]]:
    """Checked ``[N, n]`` int64 view (no copy for int64 input) of a coordinate array for a map over
    ``shape``, and its leading shape; ``describe()`` names the map in errors (only called for one)."""
    try:
        arr = np.asarray(coords)
    except (ValueError, TypeError, OverflowError) as err:  # ragged nesting, unconvertible objects
        raise CoordinateError(f"coordinates must be a rectangular integer array; found {type(coords).__name__} "
                              f"({' '.join(str(err).split())[:80]})") from None
    if arr.dtype.kind not in "iuf":
        kind = "mixed, huge or non-numeric values" if arr.dtype.kind == "O" else "not integers"
        raise CoordinateError(f"coordinates must be integers; found dtype {arr.dtype} ({kind})")
    if arr.dtype.kind == "f":
        if arr.size and not (np.all(np.isfinite(arr)) and np.all(np.equal(np.mod(arr, 1), 0))):
            raise CoordinateError(f"coordinates must be integers; found dtype {arr.dtype} with fractional or "
                                  f"non-finite values")
        if arr.size and float(np.abs(arr).max()) >= 2.0**62:  # would not survive the int64 cast
            raise CoordinateError(f"coordinate value {float(np.abs(arr).max())} is outside the input shape "
                                  f"{shape} of {describe()}")
        arr = arr.astype(np.int64)
    n = len(shape)
    if arr.ndim == 0 or arr.shape[-1] != n:
        raise ShapeError(f"{describe()} needs coordinates of shape [..., {n}]; found {arr.shape}")
    flat = arr.reshape(-1, n).astype(np.int64, copy=False)
    check_coords(flat, shape, describe)
    return flat, arr.shape[:-1]


def check_not_shape_stride(input_shape: object, forward_fn: object) -> None:
    """Refuse ``Layout((2, 3), (3, 1))``: pycute's ``Layout(shape, stride)`` would otherwise build the
    constant map ``(3, 1)``.  A forward given as plain integers only (nested tuples included) is read
    as a stride; constant outputs are still written as a function (``lambda i, j: (3, 1)``).

    >>> check_not_shape_stride((2, 3), (3, 1))
    Traceback (most recent call last):
    ...
    layoutkit.errors.ShapeStrideError: Layout((2, 3), (3, 1)) looks like pycute's Layout(shape, stride), \
but lk.Layout takes an index function, e.g. lk.Layout([2, 3], lambda i, j: i * 3 + j * 1); for a shape and \
stride layout use layoutkit.tla.make_layout((2, 3), (3, 1)) (colexicographic, as CuTe)
    """
    if callable(forward_fn) or forward_fn is None or isinstance(forward_fn, (str, bytes)):
        return
    if not isinstance(forward_fn, (Sequence, int)) or not _plain_ints(forward_fn):
        return
    shape = list(input_shape) if isinstance(input_shape, Sequence) else [input_shape]
    strides = list(forward_fn) if isinstance(forward_fn, Sequence) else [forward_fn]
    flat = all(isinstance(v, int) for v in strides + shape) and len(shape) == len(strides) <= 6
    example = ("e.g. lk.Layout(" + str(shape) + ", lambda " + ", ".join("ijklmn"[: len(shape)]) + ": "
               + " + ".join(f"{v} * {s}" for v, s in zip("ijklmn", strides)) + ")") if flat else (
        "e.g. lk.Layout([4, 4], lambda i, j: i * 4 + j)")
    raise ShapeStrideError(
        f"Layout({input_shape!r}, {forward_fn!r}) looks like pycute's Layout(shape, stride), but lk.Layout takes "
        f"an index function, {example}; for a shape and stride layout use layoutkit.tla.make_layout("
        f"{input_shape!r}, {forward_fn!r}) (colexicographic, as CuTe)"
    )


def _plain_ints(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes)) and all(_plain_ints(v) for v in value)
