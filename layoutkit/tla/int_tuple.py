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

The functions live in modules by what they do: the static integers (:mod:`~layoutkit.tla.static_int`),
the type, validation, nesting bound and print form (:mod:`~layoutkit.tla.int_tuple_check`), structure
queries (:mod:`~layoutkit.tla.int_tuple_structure`) and arithmetic that builds new IntTuples
(:mod:`~layoutkit.tla.int_tuple_arith`).  This module holds the constructors ``make_shape`` /
``make_stride`` / ``make_coord`` / ``make_int_tuple``.
"""

from __future__ import annotations

from .int_tuple_check import IntTuple, as_int_tuple

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

    >>> from layoutkit.tla.static_int import Int
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


__all__ = ["make_int_tuple", "make_shape", "make_stride", "make_coord"]
