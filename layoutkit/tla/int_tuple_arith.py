"""Arithmetic on IntTuples that builds new ones: ``ceil_div`` and ``round_up``, compact strides
(CuTe's ``LayoutLeft`` / ``LayoutRight``), ``inner_product``, leaf-wise transforms and ``gcd``.

Static ints stay static through these (``Int`` arithmetic), dynamic ones dynamic.  Separate from the
structure queries (:mod:`~layoutkit.tla.int_tuple_structure`) it builds on; re-exported from
:mod:`layoutkit.tla.int_tuple`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, overload

from ..errors import ShapeError
from .int_tuple_check import bounded_nesting, int_leaf, nesting_error, safe_text, to_str  # noqa: F401 - to_str: doctests
from .int_tuple_structure import leaf_product, product
from .static_int import Int

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
                raise ShapeError(f"ceil_div: {safe_text(b)} has more modes than {safe_text(a)}")
            return tuple(_ceil_div(x, b[i] if i < len(b) else Int(1)) for i, x in enumerate(a))
        out = []
        for x in a:
            out.append(_ceil_div(x, b))
            b = _ceil_div(b, x)
        return tuple(out)
    if type(b) is tuple:
        return _ceil_div(a, leaf_product(b))
    num, den = int_leaf(a, "ceil_div"), int_leaf(b, "ceil_div")
    if den <= 0:
        raise ShapeError(f"ceil_div: the divisor must be a positive integer; found {den}")
    return (num + den - Int(1)) // den


def round_up(a: int, b: int) -> int:
    """Round ``a`` up to a multiple of ``b``.

    >>> round_up(100, 16)
    112
    """
    return ceil_div(int_leaf(a, "round_up"), int_leaf(b, "round_up")) * b


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
    int_leaf(shape, "compact_col_major")
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
    int_leaf(shape, "compact_row_major")
    return current


@bounded_nesting
def inner_product(a: object, b: object) -> int:
    """Sum of leaf-wise products of two congruent IntTuples.

    >>> inner_product((1, (2, 3)), (4, (5, 6)))
    32
    """
    if type(a) is tuple:
        if type(b) is not tuple or len(a) != len(b):
            raise ShapeError(f"inner_product needs two congruent IntTuples; found {safe_text(a)} and {safe_text(b)}")
        total: int = Int(0)
        for x, y in zip(a, b):
            total = total + inner_product(x, y)
        return total
    if type(b) is tuple:
        raise ShapeError(f"inner_product needs two congruent IntTuples; found {safe_text(a)} and {safe_text(b)}")
    return int_leaf(a, "inner_product") * int_leaf(b, "inner_product")


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
    return transform_leaf(x, lambda v: int(int_leaf(v, "make_dynamic")))


def gcd(a: int, b: int) -> int:
    """Greatest common divisor of two ints.

    >>> gcd(12, 18)
    6
    """
    return math.gcd(int(a), int(b))


__all__ = ["ceil_div", "compact_col_major", "compact_row_major", "gcd", "inner_product", "make_dynamic", "make_static",
           "round_up", "transform_leaf"]
