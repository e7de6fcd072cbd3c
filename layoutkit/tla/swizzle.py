"""CuTe ``Swizzle<B, M, S>`` and composed (swizzled) layouts ``outer o offset o inner``.

``Swizzle(b, m, s)(x) = x ^ ((x & yyy) >> s)`` with ``yyy = (2**b - 1) << (m + max(0, s))``: the
``b`` bits starting at ``m + max(0, s)`` are xor-ed into the ``b`` bits starting at ``m - min(0, s)``
(``s < 0`` shifts left).  ``|s| >= b`` keeps the two bit fields apart, so a swizzle is its own
inverse.

>>> from layoutkit import tla
>>> sw = tla.Swizzle(3, 3, 3)
>>> sw(9), sw(sw(9)), sw.size
(9, 9, 512)
>>> S = tla.composition(sw, tla.make_layout((tla._8, tla._64), (tla._64, tla._1)))
>>> str(S), S(3, 9)
('Sw<3,3,3> o _0 o (_8,_64):(_64,_1)', 209)
>>> print(S.to_layout())
Layout((8, 64) -> (512,), transform: (_i, _j) -> (_i * 64 + _j ^ (_i * 64 + _j & 448) // 8,))
"""

from __future__ import annotations

import numbers
from typing import Any, overload

import numpy as np
from numpy.typing import NDArray

from ..algebra.layout import Layout as LkLayout
from ..algebra.nodes import Expr
from ..algebra.overflow import INT64
from ..errors import CoordinateError, IntegerOverflowError, LimitError, ShapeError
from .int_tuple_check import to_str
from .layout import Coord, Layout, check_coord, check_table_size, crd2idx_unchecked
from .static_int import Int

MAX_SWIZZLE_BITS = 62
"""Highest bit (``bits + base + |shift|``) a swizzle may touch."""


def _shiftr(x: Any, s: int) -> Any:
    return x >> s if s >= 0 else x << -s


class Swizzle:
    """``Swizzle(bits, base, shift)``: xor ``bits`` bits from ``base + max(0, shift)`` into the
    ``bits`` bits at ``base - min(0, shift)``.

    >>> Swizzle(2, 0, 3).yyy_mask, Swizzle(2, 0, 3).zzz_mask
    (24, 3)
    >>> Swizzle(3, 0, 2)
    Traceback (most recent call last):
        ...
    layoutkit.errors.ShapeError: Swizzle(3, 0, 2): |shift| must be >= bits so the xor-ed bit fields do not overlap
    """

    __slots__ = ("_b", "_m", "_s", "_yyy", "_zzz")
    _b: int
    _m: int
    _s: int
    _yyy: int
    _zzz: int

    def __init__(self, bits: int, base: int, shift: int):
        for name, v in (("bits", bits), ("base", base), ("shift", shift)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise ShapeError(f"Swizzle {name} must be an integer; found {v!r}")
        bits, base, shift = int(bits), int(base), int(shift)
        if bits < 0 or base < 0:
            raise ShapeError(f"Swizzle({bits}, {base}, {shift}): bits and base must be >= 0")
        if abs(shift) < bits:
            raise ShapeError(
                f"Swizzle({bits}, {base}, {shift}): |shift| must be >= bits so the xor-ed bit fields do not overlap"
            )
        if bits + base + abs(shift) > MAX_SWIZZLE_BITS:
            # numpy evaluates swizzles in int64: every bit field must stay below the sign bit
            raise LimitError(f"Swizzle({bits}, {base}, {shift}): bits + base + |shift| = {bits + base + abs(shift)} "
                             f"is past {MAX_SWIZZLE_BITS}, the highest bit an int64 offset can swizzle",
                             MAX_SWIZZLE_BITS, bits + base + abs(shift))
        mask = (1 << bits) - 1
        object.__setattr__(self, "_b", bits)
        object.__setattr__(self, "_m", base)
        object.__setattr__(self, "_s", shift)
        object.__setattr__(self, "_yyy", mask << (base + max(0, shift)))
        object.__setattr__(self, "_zzz", mask << (base - min(0, shift)))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Swizzle is immutable")

    @property
    def bits(self) -> int:
        return self._b

    @property
    def base(self) -> int:
        return self._m

    @property
    def shift(self) -> int:
        return self._s

    @property
    def yyy_mask(self) -> int:
        """The source bits."""
        return self._yyy

    @property
    def zzz_mask(self) -> int:
        """The destination bits."""
        return self._zzz

    @property
    def size(self) -> int:
        """The smallest power of two the swizzle maps onto itself (C++ ``size``)."""
        return 1 << (self._b + self._m + abs(self._s))

    cosize = size

    @overload
    def __call__(self, offset: int) -> int: ...
    @overload
    def __call__(self, offset: NDArray[np.integer[Any]]) -> NDArray[np.integer[Any]]: ...
    @overload
    def __call__(self, offset: Expr) -> Expr: ...
    def __call__(self, offset: Any) -> Any:
        """Swizzle an int, a numpy integer array or an index expression."""
        if isinstance(offset, np.ndarray) and offset.ndim == 0 and offset.dtype.kind in "iu":
            offset = offset.item()
        if isinstance(offset, bool) or not isinstance(offset, (numbers.Integral, np.ndarray, Expr)) or (
                isinstance(offset, numbers.Integral) and offset < 0):
            raise CoordinateError(f"{self}: offsets must be non-negative integers (or integer numpy arrays or index "
                                  f"expressions); found {type(offset).__name__} {offset!r}")
        if isinstance(offset, np.ndarray) and (offset.dtype.kind not in "iu" or (offset.size and offset.min() < 0)):
            raise CoordinateError(f"{self}: offsets must be non-negative integers; found an array of dtype "
                                  f"{offset.dtype} (least value {offset.min() if offset.size else None})")
        if isinstance(offset, numbers.Integral):
            offset = int(offset)
        return offset ^ _shiftr(offset & self._yyy, self._s)

    def inverse(self) -> Swizzle:
        """A swizzle is an involution."""
        return self

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Swizzle) and (self._b, self._m, self._s) == (other._b, other._m, other._s)

    def __hash__(self) -> int:
        return hash(("Swizzle", self._b, self._m, self._s))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Swizzle, (self._b, self._m, self._s))

    def __str__(self) -> str:
        return f"Sw<{self._b},{self._m},{self._s}>"

    def __repr__(self) -> str:
        return f"Swizzle({self._b},{self._m},{self._s})"


class ComposedLayout:
    """``outer o offset o inner``: ``x -> outer(offset + inner(x))`` (C++ ``ComposedLayout``).

    ``outer`` and ``inner`` are each a :class:`Swizzle` or a :class:`~layoutkit.tla.Layout`; the
    domain (shape, rank, size, origin) is the inner layout's.
    """

    __slots__ = ("_outer", "_offset", "_inner")
    _outer: Swizzle | Layout
    _offset: int
    _inner: Swizzle | Layout

    def __init__(self, outer: object, offset: int, inner: object) -> None:
        if not isinstance(outer, (Swizzle, Layout)) or not isinstance(inner, (Swizzle, Layout)):
            raise ShapeError(
                f"ComposedLayout needs a Swizzle or tla.Layout on both sides; found {type(outer).__name__} and "
                f"{type(inner).__name__}"
            )
        if isinstance(offset, bool) or not isinstance(offset, numbers.Integral):
            raise ShapeError(f"ComposedLayout offset must be an integer; found {offset!r}")
        object.__setattr__(self, "_outer", outer)
        object.__setattr__(self, "_offset", offset if type(offset) is Int else int(offset))
        object.__setattr__(self, "_inner", inner)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("ComposedLayout is immutable")

    @property
    def outer(self) -> Swizzle | Layout:
        return self._outer

    @property
    def offset(self) -> int:
        return self._offset

    @property
    def inner(self) -> Swizzle | Layout:
        return self._inner

    layout_a = outer
    layout_b = inner

    def with_inner(self, inner: object) -> ComposedLayout:
        return ComposedLayout(self._outer, self._offset, inner)

    def _domain(self) -> Layout:
        if isinstance(self._inner, Layout):
            return self._inner
        if isinstance(self._outer, Layout):
            return self._outer
        raise ShapeError(f"{self} has no layout to take a shape from")

    @property
    def _tla_shape(self) -> object:
        return self._domain().shape

    shape = _tla_shape

    @property
    def origin_shape(self) -> tuple[int, ...]:
        return self._domain().origin_shape

    @property
    def rank(self) -> int:
        return self._domain().rank

    @property
    def depth(self) -> int:
        return self._domain().depth

    @property
    def size(self) -> int:
        return self._domain().size if isinstance(self._inner, Layout) else self._inner.size

    @property
    def cosize(self) -> int:
        return int(self.table().max()) + 1

    def mode(self, *index: int) -> ComposedLayout:
        if not isinstance(self._inner, Layout):
            raise ShapeError(f"{self}: the inner function has no modes")
        return self.with_inner(self._inner.mode(*index))

    def __getitem__(self, index: int) -> ComposedLayout:
        return self.mode(index)

    def __len__(self) -> int:
        return self.rank

    def __call__(self, *coord: object) -> Coord:
        c = coord[0] if len(coord) == 1 else coord
        inner: Coord = self._inner(c) if isinstance(self._inner, Layout) else self._inner(check_coord(c))
        if isinstance(inner, np.ndarray):
            return self._outer_table(inner)
        out = self._outer(self._offset + inner)
        return int(out) if isinstance(out, numbers.Integral) else out

    def table(self) -> NDArray[np.int64]:
        """``self(i)`` for every colexicographic index ``i < size``."""
        base: NDArray[np.integer[Any]]
        if isinstance(self._inner, Layout):
            base = self._inner.table()
        else:
            check_table_size(self.size, f"{self}.table()")
            base = self._inner(np.arange(self.size, dtype=np.int64))
        return self._outer_table(base)

    def offset_table(self) -> NDArray[np.int64]:
        """Offsets over the inner layout's logical ``origin_shape`` (numpy indexing)."""
        if not isinstance(self._inner, Layout):
            return self.table()
        return self._outer_table(self._inner.offset_table())

    def _outer_table(self, base: NDArray[np.integer[Any]]) -> NDArray[np.int64]:
        """``outer(offset + base)`` element-wise, exact: the shifted offsets must be int64 coordinates of
        the outer function (which then evaluates exactly or raises)."""
        offset = int(self._offset)
        if base.size and not (-INT64 <= offset and int(base.max()) + offset < INT64):
            raise IntegerOverflowError(f"{self}: offset {offset} + inner value {int(base.max())} is past int64",
                                       {"offset": offset, "value": int(base.max()) + offset})
        return np.asarray(self._outer(base + offset), dtype=np.int64)

    def to_layout(self) -> LkLayout:
        """An ``lk.Layout`` over the inner layout's ``origin_shape``; xor swizzles stay symbolic."""
        if not isinstance(self._inner, Layout):
            raise ShapeError(f"{self}: to_layout needs a tla.Layout as the inner function")
        base = self._inner.to_layout()
        expr = self._offset + base.forward_index[0]
        if isinstance(self._outer, Swizzle):
            expr = self._outer(expr)
        else:
            expr = crd2idx_unchecked(expr, self._outer.shape, self._outer.stride, ())
        return LkLayout.from_exprs(base.input_shape, (expr,))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposedLayout) and (self._outer, self._offset, self._inner) == (
            other._outer,
            other._offset,
            other._inner,
        )

    def __hash__(self) -> int:
        return hash(("ComposedLayout", self._outer, int(self._offset), self._inner))

    def __reduce__(self) -> tuple[Any, ...]:
        return (ComposedLayout, (self._outer, self._offset, self._inner))

    def __str__(self) -> str:
        return f"{self._outer} o {to_str(self._offset)} o {self._inner}"

    __repr__ = __str__


def make_composed_layout(outer: object, offset: int, inner: object) -> ComposedLayout:
    """``outer o offset o inner``.

    >>> print(make_composed_layout(Swizzle(2, 0, 2), 0, Layout((4, 4), (4, 1))))
    Sw<2,0,2> o 0 o (4,4):(4,1)
    """
    return ComposedLayout(outer, offset, inner)


__all__ = ["Swizzle", "ComposedLayout", "make_composed_layout"]
