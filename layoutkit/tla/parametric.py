"""Parametric TLA / CuTe layouts: ``shape:stride`` whose extents and strides are symbols (``M``, ``N``
with assumptions) or polynomials in them, optionally under a :class:`~layoutkit.tla.Swizzle`.

A :class:`ParametricTlaLayout` binds to a concrete :class:`~layoutkit.tla.Layout` (or a
``Swizzle o 0 o layout`` composed layout) for each admissible assignment, and bridges exactly to a
:class:`~layoutkit.algebra.parametric.ParametricLayout` over its logical coordinates (one per
top-level mode, each mode's leaves its colexicographic digits, as ``to_layout()`` does for a
concrete layout).  Proofs go through that bridge, so they hold for every value of the symbols.  A
swizzle is a bijection of the non-negative integers (an involution) that only rewrites the bits of
its destination field, so it keeps every block ``[k*B, (k+1)*B)`` with ``B`` the power of two above
that field (:func:`swizzle_block`): the swizzled layout is injective exactly when the layout is, and
bijective onto ``[0, size)`` when the layout is and its size is a multiple of ``B`` for every value.

>>> from layoutkit import tla
>>> from layoutkit.algebra.parametric import Symbol
>>> M, N = Symbol("M"), Symbol("N")
>>> rm = ParametricTlaLayout((M, N), (N, 1))                     # row-major over symbolic (M, N)
>>> str(rm), bool(rm.prove_bijective()), rm.apply((2, 3), {"M": 4, "N": 5})
('(M,N):(N,1)', True, 13)
>>> print(rm.bind({"M": 4, "N": 5}))
(4,5):(5,1)
>>> R = Symbol("R", lo=8, multiple=8)                            # 128B swizzle of R rows of 64 halves
>>> sw = ParametricTlaLayout((R, 64), (64, 1), swizzle=tla.Swizzle(3, 3, 3))
>>> bool(sw.prove_bijective()), sw.apply((1, 0), {"R": 16}), sw.inverse(72, {"R": 16})
(True, 72, (1, 0))
>>> narrow = ParametricTlaLayout((Symbol("K"), 32), (32, 1), swizzle=tla.Swizzle(3, 3, 3))   # 32 halves a row
>>> p = narrow.prove_bijective()
>>> bool(p), p.witness
(False, {'values': {'K': 9}, 'unreachable': (256,)})
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import sympy

from ..algebra.forall import (
    Symbol,
    bind_symbols,
    bound_int,
    bounded_expand,
    check_extents,
    check_known,
    check_parametric,
    enumeration_budget,
    extent_expr,
    first_missing,
    search_assignment,
    symbols_of,
)
from ..algebra.parametric import ParametricLayout
from ..algebra.proof import Proof
from ..errors import ShapeError, UnsupportedError
from .layout import Layout
from .swizzle import ComposedLayout, Swizzle


def _exprs(x: Any) -> Any:
    return tuple(_exprs(y) for y in x) if isinstance(x, (tuple, list)) else extent_expr(x)


def _leaves(x: Any) -> list[Any]:
    return [leaf for y in x for leaf in _leaves(y)] if isinstance(x, tuple) else [x]


def _congruent(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_congruent(x, y) for x, y in zip(a, b))
    return not isinstance(a, tuple) and not isinstance(b, tuple)


def _col_major(shape: Any, current: sympy.Expr) -> tuple[Any, sympy.Expr]:
    if isinstance(shape, tuple):
        out = []
        for s in shape:
            stride, current = _col_major(s, current)
            out.append(stride)
        return tuple(out), current
    return current, current * shape


def _bind(x: Any, sub: Mapping[sympy.Symbol, int], what: str) -> Any:
    return tuple(_bind(y, sub, what) for y in x) if isinstance(x, tuple) else bound_int(x, sub, what)


def _text(x: Any) -> str:
    return "(" + ",".join(_text(y) for y in x) + ")" if isinstance(x, tuple) else str(x).replace(" ", "")


class ParametricTlaLayout:
    """``shape:stride`` over symbolic extents (see the module docstring).  ``stride`` defaults to the
    compact column-major strides (CuTe ``LayoutLeft``); ``symbols`` defaults to the :class:`Symbol`
    objects in ``shape`` and ``stride`` (give them for derived extents such as ``M.sym / 8``)."""

    def __init__(self, shape: Any, stride: Any = None, *, swizzle: Swizzle | None = None,
                 symbols: Sequence[Symbol] | None = None) -> None:
        self.symbols = tuple(symbols) if symbols is not None else symbols_of((shape,), (stride,) if stride else ())
        self.shape = _exprs(shape) if isinstance(shape, (tuple, list)) else (extent_expr(shape),)
        self.stride = _col_major(self.shape, sympy.Integer(1))[0] if stride is None else (
            _exprs(stride) if isinstance(stride, (tuple, list)) else (extent_expr(stride),))
        if not _congruent(self.shape, self.stride):
            raise ShapeError(f"shape {_text(self.shape)} and stride {_text(self.stride)} must be congruent")
        if swizzle is not None and not isinstance(swizzle, Swizzle):
            raise ShapeError(f"swizzle must be a tla.Swizzle; found {type(swizzle).__name__}")
        self.swizzle = swizzle
        check_known(_leaves(self.shape) + _leaves(self.stride), self.symbols)
        check_parametric(len(_leaves(self.shape)), self.symbols, "ParametricTlaLayout")
        check_extents(_leaves(self.shape), self.symbols, "ParametricTlaLayout")
        self._proofs: dict[str, Proof] = {}  # the layout never changes: each proof is decided once
        self._bridge: ParametricLayout | None = None

    @classmethod
    def from_parametric_layout(cls, layout: ParametricLayout) -> ParametricTlaLayout:
        """The TLA form of an atom-free parametric layout (one top-level mode per input dim)."""
        if layout.atom is not None:
            raise UnsupportedError("from_parametric_layout: a layout with an atom has no shape:stride form")
        shape = tuple(tuple(e for e, _ in dd) if len(dd) > 1 else dd[0][0] for dd in layout.digits)
        stride = tuple(tuple(s for _, s in dd) if len(dd) > 1 else dd[0][1] for dd in layout.digits)
        return cls(shape, stride, symbols=layout.symbols)

    def __str__(self) -> str:
        text = f"{_text(self.shape)}:{_text(self.stride)}"
        return f"{self.swizzle} o 0 o {text}" if self.swizzle is not None else text

    def __repr__(self) -> str:
        return f"ParametricTlaLayout({self}; symbols {[s.name for s in self.symbols]})"

    def _key(self) -> tuple[object, ...]:
        return (self.shape, self.stride, self.swizzle, self.symbols)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ParametricTlaLayout) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    @property
    def rank(self) -> int:
        return len(self.shape)

    def size(self) -> sympy.Expr:
        """The number of coordinates, a polynomial in the symbols."""
        return bounded_expand(sympy.Mul(*_leaves(self.shape)), "ParametricTlaLayout.size")

    def cosize(self) -> sympy.Expr:
        """``1 + sum (extent - 1) * stride`` (the last offset plus one, strides taken as non-negative)."""
        return bounded_expand(1 + sum(((e - 1) * s for e, s in zip(_leaves(self.shape), _leaves(self.stride))),
                                      sympy.Integer(0)), "ParametricTlaLayout.cosize")

    # ---- binding -----------------------------------------------------------------------------------
    def bind(self, values: Mapping[str, int]) -> Layout | ComposedLayout:
        """The concrete TLA layout for one assignment (``Swizzle o 0 o layout`` with a swizzle)."""
        sub = bind_symbols(self.symbols, values)
        layout = Layout(_bind(self.shape, sub, "extent"), _bind(self.stride, sub, "stride"))
        return layout if self.swizzle is None else ComposedLayout(self.swizzle, 0, layout)

    def apply(self, coord: Any, values: Mapping[str, int]) -> int:
        """The offset of ``coord`` (one coordinate per top-level mode, nested ones allowed, or a
        colexicographic 1-D index) with the symbols bound to ``values``."""
        bound = self.bind(values)
        args = tuple(coord) if isinstance(coord, (tuple, list)) else (coord,)
        return int(bound(*args))  # type: ignore[arg-type]

    def to_parametric_layout(self) -> ParametricLayout:
        """The exact :class:`ParametricLayout` over the logical coordinates (no swizzle)."""
        if self.swizzle is not None:
            raise UnsupportedError("to_parametric_layout: a swizzled layout is not a strided map; "
                                   "prove through this object instead")
        reps = tuple(tuple(_leaves(m)) if isinstance(m, tuple) else m for m in self.shape)
        strides = tuple(tuple(_leaves(m)) if isinstance(m, tuple) else m for m in self.stride)
        return ParametricLayout(self.symbols, None, reps, strides)

    def _strided(self) -> ParametricLayout:
        """The unswizzled bridge, built once (it keeps its own proofs)."""
        if self._bridge is None:
            self._bridge = ParametricTlaLayout(self.shape, self.stride, symbols=self.symbols).to_parametric_layout()
        return self._bridge

    def table(self, values: Mapping[str, int]) -> np.ndarray:
        """Every offset over the logical coordinates (shape: one extent per top-level mode)."""
        t = self._strided().table(values)
        return self.swizzle(t) if self.swizzle is not None else t

    # ---- proofs -------------------------------------------------------------------------------------
    def prove_injective(self) -> Proof:
        """Injective for every admissible assignment (a swizzle never breaks or makes a collision)."""
        return self._strided().prove_injective()

    def prove_bijective(self) -> Proof:
        """A bijection onto ``[0, size)`` for every admissible assignment, or a refuting assignment."""
        if "bijective" not in self._proofs:
            self._proofs["bijective"] = self._prove_bijective()
        return self._proofs["bijective"]

    def _prove_bijective(self) -> Proof:
        proof = self._strided().prove_bijective()
        if not proof or self.swizzle is None:
            return proof
        claim, block = "bijective for all values", swizzle_block(self.swizzle)
        if _divisible(self.size(), block, self.symbols):
            return Proof(claim, True, f"{proof.method}+structural", detail=f"size a multiple of {block}")
        return self._not_divisible(claim, block)

    def _not_divisible(self, claim: str, block: int) -> Proof:
        size = self.size()

        def fails(values: dict[str, int]) -> bool:
            flat = self.table(values).reshape(-1)
            return not np.array_equal(np.sort(flat), np.arange(flat.size))

        checked = enumeration_budget(fails, lambda values: math.prod(self._strided().bound_digits(values)[0]), claim)
        used = {v for x in _leaves(self.shape) + _leaves(self.stride) for v in x.free_symbols}
        found = search_assignment(self.symbols, lambda sub: int(size.subs(sub)) % block != 0
                                  and checked({str(k): int(v) for k, v in sub.items()}), used)
        if found is None:
            raise UnsupportedError(f"{claim}: the size {size} is not a multiple of the swizzle's {block} for every "
                                   "value, and no searched assignment breaks the bijection")
        flat = self.table(found).reshape(-1)
        missing = first_missing(flat, flat.size)
        return Proof(claim, False, "structural", {"values": found, "unreachable": (missing,)})

    def contains(self, offset: int) -> Proof:
        """``offset`` is a value of the layout for every admissible assignment (a bijective layout)."""
        if not self.prove_bijective():
            raise UnsupportedError("contains: the layout is not proved bijective, so its image is not [0, size)")
        return self._strided().contains(offset)

    def inverse(self, offset: int, values: Mapping[str, int]) -> tuple[int, ...]:
        """The logical coordinate (one per top-level mode) of ``offset``, for a layout proved bijective
        for every value."""
        if not self.prove_bijective():
            raise UnsupportedError("inverse: the layout is not proved bijective for all values")
        o = int(offset) if self.swizzle is None else int(self.swizzle(int(offset)))  # a swizzle is an involution
        return self._strided().inverse(o, values)


def swizzle_block(swizzle: Swizzle) -> int:
    """The power of two above the swizzle's destination field: every block ``[k*B, (k+1)*B)`` maps
    onto itself.

    >>> swizzle_block(Swizzle(3, 3, 3)), swizzle_block(Swizzle(2, 4, -3))
    (64, 512)
    """
    return 1 << int(swizzle.zzz_mask).bit_length()


def _divisible(e: sympy.Expr, block: int, symbols: Sequence[Symbol]) -> bool:
    """``e % block == 0`` for every admissible assignment: each symbol ``s = smallest + multiple*u``
    (``u >= 0``) and every coefficient of the polynomial in the ``u`` divisible by ``block``."""
    syms = [s for s in symbols if s.sym in e.free_symbols]
    u = [sympy.Symbol(f"u_{s.name}", integer=True, nonnegative=True) for s in syms]
    bounded_expand(e, f"the proof that {block} divides the size for all values", shift=True)
    shifted = sympy.expand(e.subs({s.sym: s.smallest() + s.multiple * v for s, v in zip(syms, u)}))
    coeffs = sympy.Poly(shifted, *u).coeffs() if u else [shifted]
    return all(c.is_integer and int(c) % block == 0 for c in coeffs)


__all__ = ["ParametricTlaLayout", "Symbol", "swizzle_block"]
