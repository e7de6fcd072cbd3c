"""IntTuples: an integer, or a tuple of IntTuples (CuTe and CATLASS TLA).

An integer is *static* (:class:`Int`, CuTe's ``Int<3>{}``, printed ``_3``; ``tla._3``) or *dynamic*
(a plain Python int, printed ``3``).  Arithmetic between two static ints stays static; anything that
touches a dynamic int is dynamic -- as in C++.  Values decide every algebra result; staticness only
travels along for printing.

>>> from layoutkit import tla
>>> s = tla.make_shape(tla.make_shape(16, tla._2), tla._8)
>>> tla.to_str(s), tla.rank(s), tla.depth(s), tla.product(s)
('((16,_2),_8)', 2, 2, 256)
>>> tla.flatten(s), tla.get(s, 0, 1)
((16, _2, _8), _2)
>>> print(tla.to_str(tla._4 * tla._2), tla.to_str(tla._4 * 2))
_8 8
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, TypeAlias, TypeVar, cast, overload

from ..errors import LimitError, ShapeError
from .static_int import Int, is_int, is_static, is_tuple, static

IntTuple: TypeAlias = "int | tuple[IntTuple, ...]"
"""An integer or a (nested) tuple of IntTuples (leaves may be static :class:`Int`)."""

MAX_NESTING = 32
"""Deepest nesting of an IntTuple (shape, stride, coordinate) the TLA layer accepts; real layouts nest
two or three levels, and the recursive algebra must not run out of stack on a hostile one."""

_F = TypeVar("_F", bound=Callable[..., Any])


def bounded_nesting(fn: _F) -> _F:
    """Turn a RecursionError inside ``fn`` (an argument nested past any real IntTuple) into a
    :class:`~layoutkit.errors.LimitError` naming ``fn``."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RecursionError:
            raise nesting_error(fn.__name__) from None

    return cast(_F, wrapper)


def nesting_error(what: str, path: tuple[int, ...] = ()) -> LimitError:
    """The error for an IntTuple argument of ``what`` nested past :data:`MAX_NESTING` (a tuple at
    ``path``, when known)."""
    where = f" (found a tuple at depth {len(path)})" if path else ""
    return LimitError(f"{what}: an argument nests deeper than the {MAX_NESTING} levels an IntTuple may have{where}",
                      MAX_NESTING, len(path) or None)


def _int_leaf(x: object, what: str) -> int:
    """``x`` when it is an integer leaf, else a ShapeError naming ``what``."""
    if not is_int(x):
        raise ShapeError(f"{what} needs integer leaves (an IntTuple); found {type(x).__name__} {x!r}")
    return x


# ---- validation -----------------------------------------------------------------------------------


def as_int_tuple(x: object, what: str = "IntTuple", minimum: int | None = None) -> IntTuple:
    """Validate and normalise an IntTuple: lists become tuples, numpy integers become ints
    (static :class:`Int` leaves stay static).  ``minimum`` bounds every leaf from below.

    >>> as_int_tuple([4, (2, Int(3))])
    (4, (2, _3))
    >>> as_int_tuple((4, 0), "shape", minimum=1)
    Traceback (most recent call last):
        ...
    layoutkit.errors.ShapeError: shape must have integer leaves >= 1; found (4,0) (leaf (1,) is 0)
    """
    return _normalise(x, what, minimum, x, ())


def _normalise(x: object, what: str, minimum: int | None, whole: object, path: tuple[int, ...]) -> IntTuple:
    t = type(x)
    if (t is int or t is Int) and (minimum is None or x >= minimum):  # type: ignore[operator]
        return x  # type: ignore[return-value]
    if isinstance(x, (tuple, list)):
        if len(path) >= MAX_NESTING:
            raise nesting_error(what, path)
        return tuple(_normalise(v, what, minimum, whole, path + (k,)) for k, v in enumerate(x))
    if not is_int(x):
        raise ShapeError(
            f"{what} must be an integer or a tuple of IntTuples; found {_text(whole)} "
            f"(leaf {path} is {type(x).__name__} {x!r})"
        )
    value = x if type(x) is Int else int(x)
    if minimum is not None and value < minimum:
        raise ShapeError(f"{what} must have integer leaves >= {minimum}; found {_text(whole)} (leaf {path} is {value})")
    return value


def _text(x: object) -> str:
    try:
        return to_str(x)
    except Exception:  # noqa: BLE001 - only used inside error messages
        return repr(x)


# ---- structure ------------------------------------------------------------------------------------


def _shape_of(x: object) -> object:
    """The shape of a TLA layout (anything with ``_tla_shape``), else ``x`` itself."""
    return getattr(x, "_tla_shape", x)


def rank(x: object) -> int:
    """Number of top-level modes; an integer has rank 1 (a Layout: the rank of its shape).

    >>> rank((2, (3, 4))), rank(7)
    (2, 1)
    """
    x = _shape_of(x)
    return len(x) if type(x) is tuple else 1


@bounded_nesting
def depth(x: object) -> int:
    """Nesting depth: 0 for an integer, 1 + the deepest mode for a tuple.

    >>> depth(4), depth((4, 2)), depth(((16, 7), (16, 7)))
    (0, 1, 2)
    """
    return _depth(_shape_of(x))


def _depth(x: object) -> int:
    if type(x) is not tuple:
        return 0
    deepest = 0
    for v in x:
        if type(v) is tuple:
            d = _depth(v)
            if d > deepest:
                deepest = d
    return deepest + 1


def get(x: object, *index: int) -> object:
    """``get<I0, I1, ...>(x)``: walk down the modes; ``get(int, 0)`` is the int itself (CuTe).

    >>> get(((16, 7), (16, 7)), 1, 0)
    16
    >>> get((2, 3), 2)
    Traceback (most recent call last):
        ...
    layoutkit.errors.ShapeError: get: mode index 2 is out of range for (2,3) of rank 2
    """
    from .layout import Layout

    if isinstance(x, Layout):
        return x.mode(*index)
    cur = x
    for i in index:
        if type(cur) is tuple:
            if not (is_int(i) and -len(cur) <= i < len(cur)):
                raise ShapeError(f"get: mode index {i!r} is out of range for {_text(cur)} of rank {len(cur)}")
            cur = cur[i]
        elif i != 0:
            raise ShapeError(f"get: mode index {i!r} is out of range for the integer {_text(cur)} (rank 1)")
    return cur


def product(x: object) -> int:
    """Product of every leaf (``size`` of a shape); ``()`` has product 1.

    >>> product(((16, 7), (16, 7))), product(Int(4))
    (12544, _4)
    """
    try:
        return _product(x)
    except RecursionError:
        raise nesting_error("product") from None


def _product(x: object) -> int:
    if type(x) is tuple:
        result: int = Int(1)
        for v in x:
            result = result * _product(v)
        return result
    return _int_leaf(x, "product")


size = product


@bounded_nesting
def product_each(x: object) -> tuple[int, ...]:
    """The product of each top-level mode (an integer counts as one mode).

    >>> product_each(((16, 7), (16, 7))), product_each(8)
    ((112, 112), (8,))
    """
    if type(x) is tuple:
        return tuple(product(v) for v in x)
    return (_int_leaf(x, "product_each"),)


@bounded_nesting
def flatten(x: object) -> object:
    """Leaves in order: a tuple for a tuple, the integer itself for an integer (C++ ``flatten``).

    >>> flatten(((4, 2), (4, (3, 5)))), flatten(6)
    ((4, 2, 4, 3, 5), 6)
    """
    if type(x) is tuple:
        return leaves(x)
    return x


def leaves(x: object) -> tuple[Any, ...]:
    """Leaves in order, always as a tuple.

    >>> leaves(6), leaves((1, (2, 3)))
    ((6,), (1, 2, 3))
    """
    if type(x) is tuple:
        out: list[Any] = []  # the leaves of shapes are ints; of coordinates also arrays or Exprs
        for v in x:
            if type(v) is tuple:
                out.extend(leaves(v))
            else:
                out.append(v)
        return tuple(out)
    return (x,)


@bounded_nesting
def unflatten(flat: tuple[object, ...], profile: object) -> object:
    """Fold a flat tuple back into the nesting of ``profile`` (same number of leaves).

    >>> unflatten((1, 2, 3), ((0, 0), 0))
    ((1, 2), 3)
    """
    if not isinstance(flat, (tuple, list)):
        raise ShapeError(f"unflatten: the values must be a tuple; found {type(flat).__name__} {flat!r}")
    flat = tuple(flat)
    if len(flat) != len(leaves(profile)):
        raise ShapeError(
            f"unflatten: {len(flat)} values do not fit the {len(leaves(profile))} leaves of {_text(profile)}"
        )
    it = iter(flat)

    def build(p: object) -> object:
        return tuple(build(v) for v in p) if type(p) is tuple else next(it)

    return build(profile)


@bounded_nesting
def profile(x: object) -> object:
    """The nesting of ``x`` with every leaf replaced by 0 (CuTe ``repeat_like(x, _0)``).

    >>> profile((4, (2, 3)))
    (0, (0, 0))
    """
    if type(x) is tuple:
        return tuple(profile(v) for v in x)
    return 0


@bounded_nesting
def congruent(a: object, b: object) -> bool:
    """Same nesting (profile).

    >>> congruent((4, (2, 3)), (1, (8, 4))), congruent((4, 6), (4, (2, 3)))
    (True, False)
    """
    if type(a) is tuple:
        if type(b) is not tuple or len(a) != len(b):
            return False
        for x, y in zip(a, b):
            if not congruent(x, y):
                return False
        return True
    return type(b) is not tuple


@bounded_nesting
def weakly_congruent(a: object, b: object) -> bool:
    """``a``'s nesting is a coarsening of ``b``'s (an integer in ``a`` may stand for a tuple in ``b``).

    >>> weakly_congruent((4, 6), (4, (2, 3))), weakly_congruent((4, (2, 3)), (4, 6))
    (True, False)
    """
    if type(a) is tuple:
        return type(b) is tuple and len(a) == len(b) and all(weakly_congruent(x, y) for x, y in zip(a, b))
    return True


@bounded_nesting
def compatible(a: object, b: object) -> bool:
    """Every coordinate of shape ``a`` is a coordinate of shape ``b`` (same size at each leaf of ``a``).

    >>> compatible(24, (4, 6)), compatible((4, 6), (4, (2, 3))), compatible((4, 6), (6, 4))
    (True, True, False)
    """
    if type(a) is tuple:
        return type(b) is tuple and len(a) == len(b) and all(compatible(x, y) for x, y in zip(a, b))
    return a == product(b)


# ---- arithmetic on shapes --------------------------------------------------------------------------


@overload
def ceil_div(a: int, b: int) -> int: ...
@overload
def ceil_div(a: object, b: object) -> object: ...
def ceil_div(a: object, b: object) -> object:
    """C++ ``ceil_div``: int/int rounds up; tuple/int folds ``b`` across the modes of ``a``;
    tuple/tuple works mode by mode (missing modes of ``b`` are 1); int/tuple divides by ``product(b)``.

    >>> ceil_div(10, 4), ceil_div((6, 4), 4), ceil_div((128, 128), (16, 16))
    (3, (2, 4), (8, 8))
    """
    try:
        return _ceil_div(a, b)
    except RecursionError:
        raise nesting_error("ceil_div") from None


def _ceil_div(a: object, b: object) -> object:
    if type(a) is tuple:
        if type(b) is tuple:
            if len(b) > len(a):
                raise ShapeError(f"ceil_div: {_text(b)} has more modes than {_text(a)}")
            return tuple(_ceil_div(x, b[i] if i < len(b) else Int(1)) for i, x in enumerate(a))
        out = []
        for x in a:
            out.append(_ceil_div(x, b))
            b = _ceil_div(b, x)
        return tuple(out)
    if type(b) is tuple:
        return _ceil_div(a, _product(b))
    num, den = _int_leaf(a, "ceil_div"), _int_leaf(b, "ceil_div")
    if den <= 0:
        raise ShapeError(f"ceil_div: the divisor must be a positive integer; found {den}")
    return (num + den - Int(1)) // den


def round_up(a: int, b: int) -> int:
    """Round ``a`` up to a multiple of ``b``.

    >>> round_up(100, 16)
    112
    """
    return ceil_div(_int_leaf(a, "round_up"), _int_leaf(b, "round_up")) * b


@bounded_nesting
def compact_col_major(shape: object, current: int = Int(1)) -> object:
    """CuTe ``LayoutLeft`` strides: exclusive prefix products, congruent to ``shape``.

    >>> compact_col_major((4, (2, 3)))
    (_1, (4, 8))
    >>> compact_col_major((Int(4), Int(8)))
    (_1, _4)
    """
    if type(shape) is tuple:
        out = []
        for s in shape:
            out.append(compact_col_major(s, current))
            current = current * product(s)
        return tuple(out)
    _int_leaf(shape, "compact_col_major")
    return current


@bounded_nesting
def compact_row_major(shape: object, current: int = Int(1)) -> object:
    """CuTe ``LayoutRight`` strides: the last mode is fastest.

    >>> compact_row_major((4, (2, 3)))
    (6, (3, _1))
    """
    if type(shape) is tuple:
        out = []
        for s in reversed(shape):
            out.append(compact_row_major(s, current))
            current = current * product(s)
        return tuple(reversed(out))
    _int_leaf(shape, "compact_row_major")
    return current


@bounded_nesting
def inner_product(a: object, b: object) -> int:
    """Sum of leaf-wise products of two congruent IntTuples.

    >>> inner_product((1, (2, 3)), (4, (5, 6)))
    32
    """
    if type(a) is tuple:
        if type(b) is not tuple or len(a) != len(b):
            raise ShapeError(f"inner_product needs two congruent IntTuples; found {_text(a)} and {_text(b)}")
        total: int = Int(0)
        for x, y in zip(a, b):
            total = total + inner_product(x, y)
        return total
    if type(b) is tuple:
        raise ShapeError(f"inner_product needs two congruent IntTuples; found {_text(a)} and {_text(b)}")
    return _int_leaf(a, "inner_product") * _int_leaf(b, "inner_product")


@bounded_nesting
def transform_leaf(x: object, fn: Callable[[Any], object]) -> object:
    """Apply ``fn`` to every leaf, keeping the nesting.

    >>> transform_leaf((1, (2, 3)), lambda v: v * 10)
    (10, (20, 30))
    """
    if type(x) is tuple:
        return tuple(transform_leaf(v, fn) for v in x)
    return fn(x)


def make_static(x: object) -> object:
    """Every leaf as a static :class:`Int`.

    >>> print(to_str(make_static((4, (2, 3)))))
    (_4,(_2,_3))
    """
    return transform_leaf(x, Int)


def make_dynamic(x: object) -> object:
    """Every leaf as a plain (dynamic) int.

    >>> make_dynamic((Int(4), Int(2)))
    (4, 2)
    """
    return transform_leaf(x, lambda v: int(_int_leaf(v, "make_dynamic")))


# ---- construction ---------------------------------------------------------------------------------


def make_int_tuple(*items: object) -> tuple[IntTuple, ...]:
    """A tuple of the given IntTuples (validated; lists become tuples).

    >>> make_int_tuple(2, (3, 4))
    (2, (3, 4))
    """
    return as_int_tuple(items, "IntTuple")  # type: ignore[return-value]


def make_shape(*items: object) -> tuple[IntTuple, ...]:
    """``MakeShape(...)``: a tuple shape (leaves >= 0: origin shapes of tiles past the end are 0).

    >>> make_shape(make_shape(16, 2), make_shape(16, 3))
    ((16, 2), (16, 3))
    """
    return as_int_tuple(items, "shape", minimum=0)  # type: ignore[return-value]


def make_stride(*items: object) -> tuple[IntTuple, ...]:
    """``MakeStride(...)``: a tuple stride (any integers).

    >>> make_stride(Int(12), Int(1))
    (_12, _1)
    """
    return as_int_tuple(items, "stride")  # type: ignore[return-value]


def make_coord(*items: object) -> tuple[IntTuple, ...]:
    """``MakeCoord(...)``: a tuple coordinate (leaves >= 0).

    >>> make_coord(1, 5)
    (1, 5)
    """
    return as_int_tuple(items, "coordinate", minimum=0)  # type: ignore[return-value]


# ---- printing -------------------------------------------------------------------------------------


def to_str(x: object) -> str:
    """CuTe print form: static ints as ``_N``, no spaces, a 1-tuple as ``(N)``.

    >>> to_str((Int(2), 4)), to_str(((16, 2), (16, 3))), to_str((Int(8),))
    ('(_2,4)', '((16,2),(16,3))', '(_8)')
    """
    try:
        return _to_str(x)
    except RecursionError:
        raise nesting_error("to_str") from None


def _to_str(x: object) -> str:
    if type(x) is tuple:
        return "(" + ",".join(_to_str(v) for v in x) + ")"
    if type(x) is Int:
        return "_" + int.__repr__(x)
    return str(x)


def gcd(a: int, b: int) -> int:
    """Greatest common divisor of two ints.

    >>> gcd(12, 18)
    6
    """
    return math.gcd(int(a), int(b))


__all__ = [
    "Int",
    "static",
    "is_int",
    "is_tuple",
    "is_static",
    "as_int_tuple",
    "rank",
    "depth",
    "get",
    "product",
    "size",
    "product_each",
    "flatten",
    "leaves",
    "unflatten",
    "profile",
    "congruent",
    "weakly_congruent",
    "compatible",
    "ceil_div",
    "round_up",
    "compact_col_major",
    "compact_row_major",
    "inner_product",
    "transform_leaf",
    "make_static",
    "make_dynamic",
    "make_int_tuple",
    "make_shape",
    "make_stride",
    "make_coord",
    "to_str",
]
