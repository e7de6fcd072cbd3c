"""Parametric layouts: extents that are symbols (``M``, ``N``) with stated assumptions, and proofs that
hold for every value of the symbols -- or a counterexample assignment.

A :class:`ParametricLayout` is a strided map over symbolic extents, optionally on top of a finite
*atom* (a concrete one-output ``lk.Layout``, e.g. a swizzle atom) that handles the low digits of each
input dim:

    ``offset(x) = atom(x % atom_shape) + sum_d sum_k digit_dk(x_d // atom_shape_d) * stride_dk``

(no atom: ``atom_shape`` is all ones and the atom term is 0).  Each dim ``d`` has one or more
*digits* above the atom, ``(extent_dk, stride_dk)``, lowest first: the quotient ``q = x_d //
atom_shape_d`` is split colexicographically, ``digit_dk = (q // prod_{i<k} extent_di) % extent_dk``
(one digit per dim is the common case: ``repeats[d]`` and ``strides[d]`` plain extents; a tuple of
them gives several, as a hierarchical CuTe mode does).  Extents and strides are polynomials in the
symbols.  The offset is then a mixed-radix number whose digits are the atom's offset (extent
``size(atom)``, stride 1) and the ``digit_dk``.  With the digits sorted by stride (the order at a
generic admissible assignment):

* injective for every value when each stride is at least the extent the smaller digits cover
  (``stride_k >= 1 + sum_{i<k} (extent_i - 1) * stride_i``) for every admissible assignment;
* bijective onto ``[0, size)`` when, in addition, the atom is a bijection onto ``[0, size(atom))`` and
  every stride equals that cover exactly (``stride_k == prod_{i<k} extent_i``) as polynomials.

Each "for every value" is decided by islpy where the inequality is linear in the symbols (a
parametric integer set: the assumptions and the negated inequality, empty or a sample point), and
otherwise structurally (substituting ``s = lo + m*u`` with ``u >= 0``, all coefficients non-negative);
see :mod:`layoutkit.algebra.forall`.  When a condition fails, the admissible assignment that breaks
it is checked by enumerating the bound layout; a refuted claim carries that assignment and the
colliding coordinates as its witness.

>>> M, N = Symbol("M"), Symbol("N")
>>> rm = ParametricLayout.strided((M, N), (N, 1))             # row-major over symbolic (M, N)
>>> bool(rm.prove_bijective()), rm.apply((2, 3), {"M": 4, "N": 5})
(True, 13)
>>> pitch = ParametricLayout.strided((M, N), (16, 1))          # a fixed row pitch of 16
>>> p = pitch.prove_injective()
>>> bool(p), p.witness["values"]
(False, {'M': 2, 'N': 17})

Two digits in one dim: rows ``(8, M)`` at strides ``(1, 8N)``, a column-major 8-row panel repeated
over ``M`` panels (``x_0 = r + 8*p``):

>>> panels = ParametricLayout((M, N), None, ((8, M), N), ((1, 8 * N.sym), 8))
>>> bool(panels.prove_bijective()), panels.apply((9, 2), {"M": 2, "N": 3}), panels.inverse(41, {"M": 2, "N": 3})
(True, 41, (9, 2))
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import sympy

from ..errors import ShapeError, UnsupportedError
from .forall import (
    SEARCH_VALUES,
    Extent,
    Symbol,
    bind_symbols,
    bound_int,
    bounded_expand,
    check_extents,
    check_known,
    check_parametric,
    check_span,
    extent_expr,
    first_collision,
    first_missing,
    prove_for_all,
    radix_conditions,
    sort_digits,
    symbols_of,
)
from .layout import Layout
from .proof import Proof
from .shapes import check_table, sequence_arg

Digits = tuple[tuple[sympy.Expr, sympy.Expr], ...]


def dim_digits(repeat: Extent | Sequence[Extent], stride: Extent | Sequence[Extent], what: str) -> Digits:
    """The ``(extent, stride)`` digits of one dim: plain values give one digit, equal-length tuples several."""
    if isinstance(repeat, (tuple, list)) or isinstance(stride, (tuple, list)):
        if not (isinstance(repeat, (tuple, list)) and isinstance(stride, (tuple, list))) or len(repeat) != len(stride):
            raise ShapeError(f"{what}: expected as many strides as repeats; found {repeat!r} and {stride!r}")
        return tuple((extent_expr(r), extent_expr(s)) for r, s in zip(repeat, stride))
    return ((extent_expr(repeat), extent_expr(stride)),)


def digit_values(q: Any, extents: Sequence[int]) -> list[Any]:
    """``q`` (an int or an int array) split colexicographically over ``extents``."""
    out, below = [], 1
    for e in extents:
        out.append((q // below) % e)
        below *= e
    return out


class ParametricLayout:
    """See the module docstring.  Build with :meth:`strided` or :meth:`tiled`, or directly with the
    symbols for derived extents (``ParametricLayout((M, N, P), None, (M, N), (N.sym + P.sym, 1))``)."""

    def __init__(self, symbols: Sequence[Symbol], atom: Any, repeats: Sequence[Any], strides: Sequence[Any]):
        self.symbols = sequence_arg(symbols, "ParametricLayout symbols")
        if any(not isinstance(s, Symbol) for s in self.symbols):
            raise ShapeError(f"ParametricLayout symbols must be Symbols; found {self.symbols!r:.80}")
        if atom is not None and not isinstance(atom, Layout):
            raise ShapeError(f"ParametricLayout atom must be a Layout or None; found {type(atom).__name__}")
        repeats = sequence_arg(repeats, "ParametricLayout repeats")
        strides = sequence_arg(strides, "ParametricLayout strides")
        self.atom = atom if atom is None or len(atom.output_shape) == 1 else atom.linearized()
        self.atom_shape = tuple(int(e) for e in atom.input_shape) if atom is not None else (1,) * len(repeats)
        if len(self.atom_shape) != len(repeats) or len(repeats) != len(strides):
            raise ShapeError(f"expected one repeat and one stride per input dim; found {len(repeats)} repeats, "
                             f"{len(strides)} strides for {len(self.atom_shape)} dims")
        self.digits = tuple(dim_digits(r, s, f"dim {d}") for d, (r, s) in enumerate(zip(repeats, strides)))
        check_parametric(sum(len(dd) for dd in self.digits), self.symbols, "ParametricLayout")
        self.repeats = tuple(sympy.Mul(*[e for e, _ in dd]) for dd in self.digits)
        self.strides = tuple(dd[0][1] if len(dd) == 1 else tuple(s for _, s in dd) for dd in self.digits)
        check_known([x for dd in self.digits for pair in dd for x in pair], self.symbols)
        check_extents([e for dd in self.digits for e, _ in dd], self.symbols, "ParametricLayout")
        self._proofs: dict[str, Proof] = {}  # the layout never changes: each proof is decided once

    @classmethod
    def strided(cls, shape: Sequence[Any], strides: Sequence[Any]) -> ParametricLayout:
        """``offset = sum_d x_d * stride_d`` over ``shape`` (row-major coordinates); a dim given as a
        tuple of extents (with a tuple of strides) is split colexicographically, as a CuTe mode."""
        return cls(symbols_of(shape, strides), None, shape, strides)

    @classmethod
    def tiled(cls, atom: Any, repeats: Sequence[Any], strides: Sequence[Any]) -> ParametricLayout:
        """``atom`` (a concrete one-output ``lk.Layout``) repeated ``repeats[d]`` times along dim ``d`` at
        ``strides[d]``: input extent ``atom_shape[d] * repeats[d]``."""
        return cls(symbols_of(repeats, strides), atom, repeats, strides)

    # ---- binding -----------------------------------------------------------------------------------
    def bound_digits(self, values: Mapping[str, int]) -> tuple[tuple[int, ...], tuple[tuple[tuple[int, int], ...],
                                                                                       ...]]:
        """``(input_shape, digits)`` as ints for one assignment."""
        sub = bind_symbols(self.symbols, values)
        digits = tuple(tuple((bound_int(e, sub, "extent"), bound_int(s, sub, "stride")) for e, s in dd)
                       for dd in self.digits)
        for dd in digits:
            if any(e < 1 for e, _ in dd):
                raise ShapeError(f"extents {[e for e, _ in dd]} for {dict(values)}: expected every extent >= 1")
        atom_span = int(self.atom.output_shape[0]) if self.atom is not None else 0
        check_span([pair for dd in digits for pair in dd], atom_span, f"ParametricLayout at {dict(values)}")
        shape = tuple(a * math.prod(e for e, _ in dd) for a, dd in zip(self.atom_shape, digits))
        return shape, digits

    def bound(self, values: Mapping[str, int]) -> tuple[tuple[int, ...], tuple[int, ...], tuple[Any, ...]]:
        """``(input_shape, repeats, strides)`` as ints for one assignment (a multi-digit dim's stride
        is the tuple of its digits' strides)."""
        shape, digits = self.bound_digits(values)
        reps = tuple(math.prod(e for e, _ in dd) for dd in digits)
        strides = tuple(dd[0][1] if len(dd) == 1 else tuple(s for _, s in dd) for dd in digits)
        return shape, reps, strides

    def apply(self, coord: Sequence[int], values: Mapping[str, int]) -> int:
        """The offset of ``coord`` with the symbols bound to ``values``."""
        shape, digits = self.bound_digits(values)
        if len(coord) != len(shape) or any(not 0 <= int(c) < e for c, e in zip(coord, shape)):
            raise ShapeError(f"coordinate {tuple(coord)} is outside {shape}")
        low = tuple(int(c) % a for c, a in zip(coord, self.atom_shape))
        out = int(self.atom.table()[low][0]) if self.atom is not None else 0
        for c, a, dd in zip(coord, self.atom_shape, digits):
            out += sum(v * s for v, (_, s) in zip(digit_values(int(c) // a, [e for e, _ in dd]), dd))
        return out

    def table(self, values: Mapping[str, int]) -> np.ndarray:
        """Every offset (shape ``input_shape``) for one assignment."""
        shape, digits = self.bound_digits(values)
        check_table(shape, f"ParametricLayout.table for {dict(values)}")
        reps = tuple(s // a for s, a in zip(shape, self.atom_shape))
        atom = self.atom.table()[..., 0] if self.atom is not None else np.zeros(self.atom_shape, dtype=np.int64)
        out = np.tile(atom, reps).astype(np.int64)
        for d, (a, dd) in enumerate(zip(self.atom_shape, digits)):
            q = np.arange(shape[d], dtype=np.int64) // a
            # a digit of extent 1 adds nothing: its stride (which may pass int64) is never multiplied
            part = sum((v * s for v, (e, s) in zip(digit_values(q, [e for e, _ in dd]), dd) if e > 1),
                       np.zeros_like(q))
            out = out + part.reshape([-1 if k == d else 1 for k in range(len(shape))])
        return out

    # ---- proofs --------------------------------------------------------------------------------------
    def _digits(self) -> list[tuple[sympy.Expr, sympy.Expr]]:
        """``(extent, stride)`` of every digit, the atom's first, sorted by stride at a generic assignment."""
        digits = [(extent_expr(math.prod(self.atom_shape)), sympy.Integer(1))] if self.atom is not None else []
        digits += [pair for dd in self.digits for pair in dd]
        return sort_digits(digits, self.symbols)

    def prove_injective(self) -> Proof:
        """Injective for every admissible assignment, or a refuting assignment and collision."""
        if "injective" not in self._proofs:
            self._proofs["injective"] = self._prove_injective()
        return self._proofs["injective"]

    def _prove_injective(self) -> Proof:
        if self.atom is not None:
            flat = self.atom.table()[..., 0].reshape(-1)
            pair = first_collision(flat)
            if pair is not None:  # the atom is concrete and small: enumerate it
                where = [tuple(int(v) for v in np.unravel_index(k, self.atom_shape)) for k in pair]
                return Proof("injective for all values", False, "enumerate",
                             {"atom": str(self.atom), "collision": (*where, int(flat[pair[0]]))})
        injective, _ = radix_conditions(self._digits())
        return self._forall(injective, [], "injective for all values")

    def prove_bijective(self) -> Proof:
        """A bijection onto ``[0, size)`` for every admissible assignment, or a refuting assignment."""
        if "bijective" not in self._proofs:
            self._proofs["bijective"] = self._prove_bijective()
        return self._proofs["bijective"]

    def _prove_bijective(self) -> Proof:
        if self.atom is not None and not self.atom.prove_bijective():
            return Proof("bijective for all values", False, "enumerate", {"atom": str(self.atom)})
        _, exact = radix_conditions(self._digits())
        return self._forall([], exact, "bijective for all values")

    def size(self) -> sympy.Expr:
        """The number of coordinates, a polynomial in the symbols."""
        return bounded_expand(sympy.Mul(*[e for e, _ in self._digits()]), "ParametricLayout.size")

    def contains(self, offset: int) -> Proof:
        """``offset`` is a value of the layout for every admissible assignment (needs a bijective
        layout: the image is then ``[0, size)``)."""
        if not self.prove_bijective():
            raise UnsupportedError("contains: the layout is not proved bijective, so its image is not [0, size)")
        return self._forall([self.size() - 1 - int(offset)], [], f"contains {int(offset)} for all values")

    def inverse(self, offset: int, values: Mapping[str, int]) -> tuple[int, ...]:
        """The coordinate of ``offset`` (a bijective layout, proved for all values first)."""
        if not self.prove_bijective():
            raise UnsupportedError("inverse: the layout is not proved bijective for all values")
        shape, digits = self.bound_digits(values)
        o = int(offset)
        coord = []
        for a, dd in zip(self.atom_shape, digits):
            q, below = 0, 1
            for e, s in dd:
                if e > 1 and s:
                    q += (o // s) % e * below
                below *= e
            coord.append(q * a)
        if self.atom is not None:
            hit = np.argwhere(self.atom.table()[..., 0] == o % math.prod(self.atom_shape))
            if hit.size:
                coord = [c + int(h) for c, h in zip(coord, hit[0])]
        if any(c >= e for c, e in zip(coord, shape)) or self.apply(coord, values) != o:
            raise ShapeError(f"inverse: {o} is outside the layout's image for {dict(values)}")
        return tuple(coord)

    def _forall(self, nonneg: list[sympy.Expr], zero: list[sympy.Expr], claim: str) -> Proof:
        return prove_for_all(self.symbols, nonneg, zero, claim, lambda values: self._fails(claim, values),
                             lambda values, method: self._refuted(claim, values, method),
                             lambda values: math.prod(self.bound_digits(values)[0]),
                             {v for dd in self.digits for pair in dd for x in pair for v in x.free_symbols})

    def _fails(self, claim: str, values: dict[str, int]) -> bool:
        """Whether the claim is false for the layout bound to ``values`` (checked by enumeration)."""
        flat = self.table(values).reshape(-1)
        if claim.startswith("contains"):
            return bool(int(claim.split()[1]) >= flat.size)
        if claim.startswith("bijective"):
            return not np.array_equal(np.sort(flat), np.arange(flat.size))
        return first_collision(flat) is not None

    def _refuted(self, claim: str, values: dict[str, int], method: str) -> Proof:
        table = self.table(values)
        flat = table.reshape(-1)
        witness: dict[str, Any] = {"values": values}
        pair = first_collision(flat)
        if pair is not None:
            a, b = pair
            witness["collision"] = (tuple(int(x) for x in np.unravel_index(a, table.shape)),
                                    tuple(int(x) for x in np.unravel_index(b, table.shape)), int(flat[a]))
        elif "bijective" in claim:
            missing = first_missing(flat, flat.size)
            witness["unreachable"] = (missing if missing is not None else int(flat.max()),)
        return Proof(claim, False, method, witness)

    def _key(self) -> tuple[object, ...]:
        return (self.symbols, self.atom, self.atom_shape, self.digits)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ParametricLayout) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        dims = ", ".join("(" + ", ".join(f"{e}:{s}" for e, s in dd) + ")" for dd in self.digits)
        atom = f"atom {self.atom_shape}, " if self.atom is not None else ""
        return f"ParametricLayout({atom}digits {dims}; symbols {[s.name for s in self.symbols]})"


__all__ = ["Symbol", "ParametricLayout", "SEARCH_VALUES", "dim_digits", "digit_values"]
