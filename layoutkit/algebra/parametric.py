"""Parametric layouts: extents that are symbols (``M``, ``N``) with stated assumptions, and proofs that
hold for every value of the symbols -- or a counterexample assignment.

A :class:`ParametricLayout` is a strided map over symbolic extents, optionally on top of a finite
*atom* (a concrete one-output ``lk.Layout``, e.g. a swizzle atom) that handles the low digits of each
input dim:

    ``offset(x) = atom(x % atom_shape) + sum_d (x_d // atom_shape_d) * stride_d``

(no atom: ``atom_shape`` is all ones and the atom term is 0).  Extents and strides are polynomials in
the symbols.  The offset is a mixed-radix number whose digits are the atom's offset (extent
``size(atom)``, stride 1) and the quotients ``x_d // atom_shape_d`` (extent ``repeat_d``, stride
``stride_d``).  With the digits sorted by stride (the order at a generic admissible assignment):

* injective for every value when each stride is at least the extent the smaller digits cover
  (``stride_k >= 1 + sum_{i<k} (extent_i - 1) * stride_i``) for every admissible assignment;
* bijective onto ``[0, size)`` when, in addition, the atom is a bijection onto ``[0, size(atom))`` and
  every stride equals that cover exactly (``stride_k == prod_{i<k} extent_i``) as polynomials.

Each "for every value" is decided by islpy where the inequality is linear in the symbols (a
parametric integer set: the assumptions and the negated inequality, empty or a sample point), and
otherwise structurally (substituting ``s = lo + m*u`` with ``u >= 0``, all coefficients non-negative).
When a condition fails, the admissible assignment that breaks it is checked by enumerating the bound
layout; a refuted claim carries that assignment and the colliding coordinates as its witness.

>>> import layoutkit as lk
>>> M, N = Symbol("M"), Symbol("N")
>>> rm = ParametricLayout.strided((M, N), (N, 1))             # row-major over symbolic (M, N)
>>> bool(rm.prove_bijective()), rm.apply((2, 3), {"M": 4, "N": 5})
(True, 13)
>>> pitch = ParametricLayout.strided((M, N), (16, 1))          # a fixed row pitch of 16
>>> p = pitch.prove_injective()
>>> bool(p), p.witness["values"]
(False, {'M': 2, 'N': 17})
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy

from ..errors import ShapeError, UnsupportedError
from .proof import Proof

SEARCH_VALUES = 12
"""Admissible values tried per symbol when looking for a counterexample outside islpy's linear class."""


@dataclass(frozen=True)
class Symbol:
    """An integer extent symbol with its assumptions: ``lo <= value`` (``hi`` if given) and
    ``value % multiple == 0``."""

    name: str
    lo: int = 1
    hi: int | None = None
    multiple: int = 1

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ShapeError(f"Symbol name must be an identifier; found {self.name!r}")
        if self.multiple < 1 or (self.hi is not None and self.hi < self.lo):
            raise ShapeError(f"Symbol {self.name}: expected multiple >= 1 and lo <= hi; found {self}")

    @property
    def sym(self) -> sympy.Symbol:
        return sympy.Symbol(self.name, integer=True)

    def smallest(self) -> int:
        return -(-self.lo // self.multiple) * self.multiple

    def values(self, count: int) -> list[int]:
        """The first ``count`` admissible values."""
        v, out = self.smallest(), list[int]()
        while len(out) < count and (self.hi is None or v <= self.hi):
            out.append(v)
            v += self.multiple
        return out

    def admits(self, value: int) -> bool:
        return value >= self.lo and (self.hi is None or value <= self.hi) and value % self.multiple == 0

    def isl_constraint(self) -> str:
        parts = [f"{self.name} >= {self.lo}"]
        if self.hi is not None:
            parts.append(f"{self.name} <= {self.hi}")
        if self.multiple > 1:
            parts.append(f"exists (e_{self.name} : {self.name} = {self.multiple} e_{self.name})")
        return " and ".join(parts)


Extent = Any  # int, Symbol or a sympy expression in the symbols' ``sym``


def _expr(x: Extent) -> sympy.Expr:
    if isinstance(x, Symbol):
        return x.sym
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return sympy.Integer(int(x))
    if isinstance(x, sympy.Expr):
        return x
    raise ShapeError(f"expected an int, a Symbol or a sympy expression of symbols; found {type(x).__name__} {x!r}")


class ParametricLayout:
    """See the module docstring.  Build with :meth:`strided` or :meth:`tiled`."""

    def __init__(self, symbols: Sequence[Symbol], atom: Any, repeats: Sequence[Extent], strides: Sequence[Extent]):
        self.symbols = tuple(symbols)
        self.atom = atom if atom is None or len(atom.output_shape) == 1 else atom.linearized()
        self.atom_shape = tuple(int(e) for e in atom.input_shape) if atom is not None else (1,) * len(repeats)
        if len(self.atom_shape) != len(repeats) or len(repeats) != len(strides):
            raise ShapeError(f"expected one repeat and one stride per input dim; found {len(repeats)} repeats, "
                             f"{len(strides)} strides for {len(self.atom_shape)} dims")
        self.repeats = tuple(_expr(r) for r in repeats)
        self.strides = tuple(_expr(s) for s in strides)
        known = {s.sym for s in self.symbols}
        for e in self.repeats + self.strides:
            if not e.free_symbols <= known:
                raise ShapeError(f"{e} uses symbols {sorted(map(str, e.free_symbols - known))} with no assumptions")

    @classmethod
    def strided(cls, shape: Sequence[Extent], strides: Sequence[Extent]) -> ParametricLayout:
        """``offset = sum_d x_d * stride_d`` over ``shape`` (row-major coordinates)."""
        return cls(_symbols_of(shape, strides), None, shape, strides)

    @classmethod
    def tiled(cls, atom: Any, repeats: Sequence[Extent], strides: Sequence[Extent]) -> ParametricLayout:
        """``atom`` (a concrete one-output ``lk.Layout``) repeated ``repeats[d]`` times along dim ``d`` at
        ``strides[d]``: input extent ``atom_shape[d] * repeats[d]``."""
        return cls(_symbols_of(repeats, strides), atom, repeats, strides)

    # ---- binding -----------------------------------------------------------------------------------
    def _subs(self, values: Mapping[str, int]) -> dict[sympy.Symbol, int]:
        out = {}
        for s in self.symbols:
            if s.name not in values:
                raise ShapeError(f"no value for symbol {s.name}; bind every symbol ({[t.name for t in self.symbols]})")
            v = int(values[s.name])
            if not s.admits(v):
                raise ShapeError(f"{s.name} = {v} breaks its assumptions {s}")
            out[s.sym] = v
        return out

    def bound(self, values: Mapping[str, int]) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """``(input_shape, repeats, strides)`` as ints for one assignment."""
        sub = self._subs(values)
        reps = tuple(int(r.subs(sub)) for r in self.repeats)
        strides = tuple(int(s.subs(sub)) for s in self.strides)
        return tuple(a * r for a, r in zip(self.atom_shape, reps)), reps, strides

    def apply(self, coord: Sequence[int], values: Mapping[str, int]) -> int:
        """The offset of ``coord`` with the symbols bound to ``values``."""
        shape, _, strides = self.bound(values)
        if len(coord) != len(shape) or any(not 0 <= int(c) < e for c, e in zip(coord, shape)):
            raise ShapeError(f"coordinate {tuple(coord)} is outside {shape}")
        low = tuple(int(c) % a for c, a in zip(coord, self.atom_shape))
        base = int(self.atom.table()[low][0]) if self.atom is not None else 0
        return base + sum((int(c) // a) * s for c, a, s in zip(coord, self.atom_shape, strides))

    def table(self, values: Mapping[str, int]) -> np.ndarray:
        """Every offset (shape ``input_shape``) for one assignment."""
        shape, reps, strides = self.bound(values)
        atom = self.atom.table()[..., 0] if self.atom is not None else np.zeros(self.atom_shape, dtype=np.int64)
        out = np.tile(atom, reps)
        for d, (a, s) in enumerate(zip(self.atom_shape, strides)):
            q = (np.arange(shape[d]) // a) * s
            out = out + q.reshape([-1 if k == d else 1 for k in range(len(shape))])
        return out

    # ---- proofs --------------------------------------------------------------------------------------
    def _digits(self) -> list[tuple[sympy.Expr, sympy.Expr]]:
        """``(extent, stride)`` of every digit, sorted by stride at a generic admissible assignment (each
        symbol at its ``SEARCH_VALUES``-th admissible value; ties broken by extent)."""
        digits = [(_expr(int(np.prod(self.atom_shape))), sympy.Integer(1))] if self.atom is not None else []
        digits += [(r, s) for r, s in zip(self.repeats, self.strides)]
        generic = {s.sym: s.values(SEARCH_VALUES)[-1] for s in self.symbols}
        return sorted(digits, key=lambda d: (int(d[1].subs(generic)), int(d[0].subs(generic))))

    def prove_injective(self) -> Proof:
        """Injective for every admissible assignment, or a refuting assignment and collision."""
        if self.atom is not None and not self.atom.prove_injective():
            return Proof("injective for all values", False, "enumerate", {"atom": str(self.atom)})
        cover = sympy.Integer(1)
        conditions = []
        for extent, stride in self._digits():
            if extent == 1:
                continue
            conditions.append(stride - cover)
            cover = cover + (extent - 1) * stride
        return self._forall(conditions, [], "injective for all values")

    def prove_bijective(self) -> Proof:
        """A bijection onto ``[0, size)`` for every admissible assignment, or a refuting assignment."""
        if self.atom is not None and not self.atom.prove_bijective():
            return Proof("bijective for all values", False, "enumerate", {"atom": str(self.atom)})
        cover = sympy.Integer(1)
        equalities = []
        for extent, stride in self._digits():
            if extent == 1:
                continue
            equalities.append(stride - cover)
            cover = cover * extent
        return self._forall([], equalities, "bijective for all values")

    def contains(self, offset: int) -> Proof:
        """``offset`` is a value of the layout for every admissible assignment (needs a bijective
        layout: the image is then ``[0, size)``)."""
        if not self.prove_bijective():
            raise UnsupportedError("contains: the layout is not proved bijective, so its image is not [0, size)")
        size = sympy.Integer(1)
        for extent, _ in self._digits():
            size = size * extent
        return self._forall([size - 1 - int(offset)], [], f"contains {int(offset)} for all values")

    def inverse(self, offset: int, values: Mapping[str, int]) -> tuple[int, ...]:
        """The coordinate of ``offset`` (a bijective layout, proved for all values first)."""
        if not self.prove_bijective():
            raise UnsupportedError("inverse: the layout is not proved bijective for all values")
        shape, _, strides = self.bound(values)
        o = int(offset)
        low_part = o % int(np.prod(self.atom_shape)) if self.atom is not None else 0
        coord = [0] * len(shape)
        for d in sorted(range(len(shape)), key=lambda d: -strides[d]):
            if strides[d] and shape[d] > self.atom_shape[d]:
                coord[d] = (o // strides[d]) % (shape[d] // self.atom_shape[d]) * self.atom_shape[d]
        if self.atom is not None:
            hit = np.argwhere(self.atom.table()[..., 0] == low_part)[0]
            coord = [c + int(h) for c, h in zip(coord, hit)]
        if self.apply(coord, values) != o:
            raise ShapeError(f"inverse: {o} is outside the layout's image for {dict(values)}")
        return tuple(coord)

    def _forall(self, nonneg: list[sympy.Expr], zero: list[sympy.Expr], claim: str) -> Proof:
        methods = set()
        for e in nonneg:
            ok, method, values = _forall_nonneg(sympy.expand(e), self.symbols)
            methods.add(method)
            if not ok:
                return self._refute(claim, values, lambda sub, e=e: e.subs(sub) < 0, method)
        for e in zero:
            e = sympy.expand(e)
            if e != 0:
                return self._refute(claim, None, lambda sub, e=e: e.subs(sub) != 0, "structural")
        return Proof(claim, True, "+".join(sorted(methods)) or "structural")

    def _fails(self, claim: str, values: dict[str, int]) -> bool:
        """Whether the claim is false for the layout bound to ``values`` (checked by enumeration)."""
        flat = self.table(values).reshape(-1)
        if claim.startswith("contains"):
            return bool(int(claim.split()[1]) >= flat.size)
        if claim.startswith("bijective"):
            return not np.array_equal(np.sort(flat), np.arange(flat.size))
        return bool(np.unique(flat).size != flat.size)

    def _refute(self, claim: str, first: dict[str, int] | None, broken: Any, method: str) -> Proof:
        """The failed condition is only sufficient: find an assignment where the bound layout really fails."""
        if first is not None and self._fails(claim, first):
            return self._refuted(claim, first, method)
        grids = [s.values(SEARCH_VALUES) for s in self.symbols]
        for combo in itertools.product(*grids):
            values = {s.name: v for s, v in zip(self.symbols, combo)}
            if broken({s.sym: v for s, v in zip(self.symbols, combo)}) and self._fails(claim, values):
                return self._refuted(claim, values, method)
        raise UnsupportedError(f"{claim}: not proved (a sufficient condition fails) and not refuted by the first "
                               f"{SEARCH_VALUES} admissible values per symbol")

    def _refuted(self, claim: str, values: dict[str, int], method: str) -> Proof:
        table = self.table(values)
        flat = table.reshape(-1)
        uniq, first, counts = np.unique(flat, return_index=True, return_counts=True)
        witness: dict[str, Any] = {"values": values}
        if (counts > 1).any():
            v = int(uniq[np.argmax(counts > 1)])
            a, b = np.flatnonzero(flat == v)[:2]
            witness["collision"] = (tuple(int(x) for x in np.unravel_index(a, table.shape)),
                                    tuple(int(x) for x in np.unravel_index(b, table.shape)), v)
        elif "bijective" in claim:
            missing = np.setdiff1d(np.arange(flat.size), flat)
            witness["unreachable"] = (int(missing[0]) if missing.size else int(flat.max()),)
        return Proof(claim, False, method, witness)


def _symbols_of(*groups: Sequence[Extent]) -> tuple[Symbol, ...]:
    seen: dict[str, Symbol] = {}
    for group in groups:
        for x in group:
            if isinstance(x, Symbol):
                if x.name in seen and seen[x.name] != x:
                    raise ShapeError(f"symbol {x.name} is given two sets of assumptions: {seen[x.name]} and {x}")
                seen[x.name] = x
            elif isinstance(x, sympy.Expr) and x.free_symbols:
                raise ShapeError(f"{x}: pass Symbol objects (with their assumptions) rather than bare expressions; "
                                 "build the layout with ParametricLayout(symbols, ...) for derived extents")
    return tuple(seen.values())


def _forall_nonneg(e: sympy.Expr, symbols: Sequence[Symbol]) -> tuple[bool, str, dict[str, int]]:
    """Whether ``e >= 0`` for every admissible assignment: (verdict, method, refuting assignment)."""
    syms = [s for s in symbols if s.sym in e.free_symbols]
    if not syms:
        return bool(e >= 0), "structural", {s.name: s.smallest() for s in symbols}
    poly = sympy.Poly(e, *[s.sym for s in syms])
    if poly.total_degree() <= 1 and all(c.is_integer for c in poly.coeffs()):
        return _isl_nonneg(e, syms, symbols)
    u = [sympy.Symbol(f"u_{s.name}", integer=True, nonnegative=True) for s in syms]
    shifted = sympy.Poly(sympy.expand(e.subs({s.sym: s.smallest() + s.multiple * v for s, v in zip(syms, u)})), *u)
    if all(c >= 0 for c in shifted.coeffs()):
        return True, "structural", {}
    found = _search(symbols, lambda sub: e.subs(sub) < 0)
    if found is None:
        raise UnsupportedError(f"cannot prove {e} >= 0 for all values, and the first {SEARCH_VALUES} admissible "
                               "values per symbol do not break it")
    return False, "structural", found


def _isl_nonneg(e: sympy.Expr, syms: Sequence[Symbol], symbols: Sequence[Symbol]) -> tuple[bool, str, dict[str, int]]:
    import islpy as isl

    names = ", ".join(s.name for s in syms)
    text = sympy.sstr(sympy.expand(e)).replace("**", "^")
    constraints = " and ".join([s.isl_constraint() for s in syms] + [f"{text} <= -1"])
    bad = isl.Set(f"{{ [{names}] : {constraints} }}")
    if bad.is_empty():
        return True, "isl", {}
    point = bad.sample_point()
    found = {s.name: int(point.get_coordinate_val(isl.dim_type.set, k).to_python()) for k, s in enumerate(syms)}
    # symbols the inequality does not mention: the smallest admissible value above 1 (a collision needs two)
    values = {s.name: found.get(s.name, next((v for v in s.values(SEARCH_VALUES) if v > 1), s.smallest()))
              for s in symbols}
    return False, "isl", values


def _search(symbols: Sequence[Symbol], bad: Any) -> dict[str, int] | None:
    grids = [s.values(SEARCH_VALUES) for s in symbols]
    for combo in itertools.product(*grids):
        sub = {s.sym: v for s, v in zip(symbols, combo)}
        if bad(sub):
            return {s.name: v for s, v in zip(symbols, combo)}
    return None


__all__ = ["Symbol", "ParametricLayout", "SEARCH_VALUES"]
