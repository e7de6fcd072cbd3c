"""Static and dynamic integers, the leaves of IntTuples.

A static integer (:class:`Int`, CuTe's ``Int<3>{}``) prints ``_3``; a dynamic one is a plain Python
int.  Arithmetic between two static ints stays static; anything that touches a dynamic int is
dynamic -- as in C++.

>>> Int(4) * Int(2), Int(4) * 2, is_static((Int(2), 4))
(_8, 8, False)
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any, TypeGuard

from ..errors import ShapeError


def _static_binary(name: str) -> Callable[..., Any]:
    base = getattr(int, name)

    def op(self: int, other: object) -> object:
        result = base(self, other)
        if type(other) is Int and result is not NotImplemented:
            return int.__new__(Int, result)
        return result

    op.__name__ = name
    op.__doc__ = f"``int.{name}``; static when both operands are static."
    return op


def _static_unary(name: str) -> Callable[..., Any]:
    base = getattr(int, name)

    def op(self: int) -> Int:
        return int.__new__(Int, base(self))

    op.__name__ = name
    return op


class Int(int):
    """A static integer (CuTe / TLA ``Int<N>{}``), printed ``_N``; equal and hashed like ``int(N)``.

    >>> Int(3), Int(3) == 3, Int(3) + Int(4), Int(3) + 4
    (_3, True, _7, 7)
    >>> type(Int(6) // Int(4)).__name__, type(-Int(2)).__name__
    ('Int', 'Int')
    """

    __slots__ = ()

    def __new__(cls, value: object = 0) -> Int:
        if type(value) is int or type(value) is Int:
            return int.__new__(cls, value)
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ShapeError(f"a static integer needs an int value; found {type(value).__name__} {value!r}")
        return int.__new__(cls, int(value))

    def __repr__(self) -> str:
        return "_" + int.__repr__(self)

    __str__ = __repr__

    def __reduce__(self) -> tuple[Any, ...]:
        return (Int, (int(self),))

    __add__ = _static_binary("__add__")
    __radd__ = _static_binary("__radd__")
    __sub__ = _static_binary("__sub__")
    __rsub__ = _static_binary("__rsub__")
    __mul__ = _static_binary("__mul__")
    __rmul__ = _static_binary("__rmul__")
    __floordiv__ = _static_binary("__floordiv__")
    __rfloordiv__ = _static_binary("__rfloordiv__")
    __mod__ = _static_binary("__mod__")
    __rmod__ = _static_binary("__rmod__")
    __lshift__ = _static_binary("__lshift__")
    __rshift__ = _static_binary("__rshift__")
    __and__ = _static_binary("__and__")
    __rand__ = _static_binary("__rand__")
    __or__ = _static_binary("__or__")
    __ror__ = _static_binary("__ror__")
    __xor__ = _static_binary("__xor__")
    __rxor__ = _static_binary("__rxor__")
    __neg__ = _static_unary("__neg__")
    __pos__ = _static_unary("__pos__")
    __abs__ = _static_unary("__abs__")


def static(value: int) -> Int:
    """``Int(value)``; the function form of ``tla._N``.

    >>> static(16)
    _16
    """
    return Int(value)


# ---- predicates --------------------------------------------------------------------------------


def is_int(x: object) -> TypeGuard[int]:
    """An integer leaf (static or dynamic; not a bool).

    >>> is_int(3), is_int(Int(3)), is_int((3,)), is_int(True)
    (True, True, False, False)
    """
    t = type(x)
    if t is int or t is Int:
        return True
    return isinstance(x, numbers.Integral) and t is not bool


def is_tuple(x: object) -> bool:
    """A tuple (a nested IntTuple).

    >>> is_tuple((1, 2)), is_tuple(3)
    (True, False)
    """
    return isinstance(x, tuple)


def is_static(x: object) -> bool:
    """Every leaf is a static :class:`Int`.

    >>> is_static((Int(2), Int(4))), is_static((Int(2), 4))
    (True, False)
    """
    if type(x) is tuple:
        return all(is_static(v) for v in x)
    return type(x) is Int
