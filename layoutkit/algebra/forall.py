"""Claims that hold for every value of some extent symbols: the machinery the parametric layouts
(:mod:`layoutkit.algebra.parametric`, the parametric fragments and TLA layouts) share.

A :class:`Symbol` is an integer with assumptions (``lo <= value <= hi``, ``value % multiple == 0``).
A claim about a parametric map is reduced to polynomial conditions on the symbols -- ``e >= 0`` or
``e == 0`` for every admissible assignment -- which are decided by islpy where linear (a parametric
integer set: the assumptions with the negated condition, empty or a sample point) and otherwise
structurally (``s = smallest + multiple*u`` with ``u >= 0``: all coefficients non-negative).  A
failed condition is only sufficient, so :func:`prove_for_all` then looks for an assignment where the
bound map really fails (the caller's enumeration) and reports it as the witness.

The conditions for a *mixed-radix number* -- digits ``(extent, stride)`` summed as
``sum digit_k * stride_k`` -- are :func:`radix_conditions`: injective when every stride is at least
the span of the smaller digits, bijective onto ``[0, prod extents)`` when every stride equals the
product of the smaller extents.

>>> M = Symbol("M", lo=1)
>>> forall_nonneg(M.sym * 4 - 4, [M])[:2]
(True, 'isl')
>>> forall_nonneg(16 - M.sym, [M])
(False, 'isl', {'M': 17})
>>> injective, exact = radix_conditions([(M.sym, sympy.Integer(1)), (sympy.Integer(3), M.sym)])
>>> [str(e) for e in injective], [str(e) for e in exact]
(['0', '0'], ['0', '0'])
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import sympy

from ..errors import LimitError, ProofBudgetError, ShapeError, UnsupportedError
from .distinct import sorted_distinct
from .nodes import MAX_EXTENT
from .proof import Proof

SEARCH_VALUES = 12
"""Admissible values tried per symbol when looking for a counterexample outside islpy's linear class."""
SEARCH_LIMIT = 2048
"""Assignments the search for a counterexample tries (each binds and enumerates the map, and there are
``SEARCH_VALUES ** symbols`` of them: all of them for up to three symbols) before it stops with a
:class:`~layoutkit.errors.ProofBudgetError`.  A count, not a time, so the verdict never depends on the load
of the machine."""
SEARCH_POINTS = 1 << 22
"""Most points the search for a counterexample may enumerate in all (each assignment it checks tabulates
the bound map, whose size grows with the symbols' values): past it a
:class:`~layoutkit.errors.ProofBudgetError`, checked before each table is built."""

MAX_EXTENT_NODES = 64
"""Most sympy nodes in one extent or stride given to a parametric object."""
MAX_DEGREE = 8
"""Highest total degree of one extent or stride (``M**2 * N`` has degree 3)."""
MAX_DIGITS = 64
"""Most digits (``(extent, stride)`` pairs: leaves of the shape) one parametric object has."""
MAX_SYMBOLS = 8
"""Most symbols one parametric object uses (islpy's sets and the searched grid grow with them)."""
MAX_TERMS = 4096
"""Most monomials a polynomial sympy is asked to expand may have (a bound read off the unexpanded
expression by :func:`polynomial_size`): past it the work is refused before sympy starts.  A product of
``k`` binomials in distinct symbols expands to ``2**k`` monomials, and sympy's time and memory grow with
them; the conditions of every real layout have a handful."""


@dataclass(frozen=True)
class Symbol:
    """An integer extent symbol with its assumptions: ``lo <= value`` (``hi`` if given) and
    ``value % multiple == 0``.

    >>> Symbol("M", lo=8, multiple=16).values(3), Symbol("M", lo=8, multiple=16).admits(24)
    ([16, 32, 48], False)
    """

    name: str
    lo: int = 1
    hi: int | None = None
    multiple: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ShapeError(f"Symbol name must be an identifier; found {self.name!r}")
        bounds = (self.lo, self.multiple) + (() if self.hi is None else (self.hi,))
        if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in bounds):
            raise ShapeError(f"Symbol {self.name}: lo, hi and multiple must be integers (hi may be None); found "
                             f"lo={self.lo!r}, hi={self.hi!r}, multiple={self.multiple!r}")
        if self.multiple < 1 or (self.hi is not None and self.hi < self.lo):
            raise ShapeError(f"Symbol {self.name}: expected multiple >= 1 and lo <= hi; found {self}")
        if self.hi is not None and self.smallest() > self.hi:
            raise ShapeError(f"Symbol {self.name}: no multiple of {self.multiple} lies in [{self.lo}, {self.hi}]; "
                             f"found {self}")
        if any(abs(int(v)) > MAX_EXTENT for v in bounds):
            raise LimitError(f"Symbol {self.name}: lo, hi and multiple must lie within +-2**62 (an extent an int64 "
                             f"holds); found {self}", MAX_EXTENT, max(abs(int(v)) for v in bounds))

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


def extent_expr(x: Extent) -> sympy.Expr:
    """``x`` (an int, a :class:`Symbol` or a sympy expression) as a sympy expression: a polynomial in the
    symbols with rational coefficients, within the size limits (:func:`polynomial_size`).

    >>> M = Symbol("M")
    >>> extent_expr(M.sym * 2 + 1), extent_expr(7)
    (2*M + 1, 7)
    >>> extent_expr(sympy.sqrt(M.sym))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    layoutkit.errors.ShapeError: extent sqrt(M): expected a polynomial ...; found the power sqrt(M)
    """
    if isinstance(x, Symbol):
        return x.sym
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        value = int(x)
        if abs(value) > MAX_EXTENT:
            raise LimitError(f"extent {value}: an extent or stride must lie within +-2**62 (an int64 holds it)",
                             MAX_EXTENT, value)
        return sympy.Integer(value)
    if isinstance(x, sympy.Expr):
        polynomial_size(x, f"extent {x}", leaf=True)
        return x
    raise ShapeError(f"expected an int, a Symbol or a sympy expression of symbols; found {type(x).__name__} {x!r:.80}")


def polynomial_size(e: sympy.Expr, what: str, *, leaf: bool = False) -> tuple[dict[sympy.Symbol, int], int]:
    """``(degrees, terms)`` of the polynomial ``e``, read without expanding it: the degree in each symbol
    and a bound on the monomials its expansion has.  ``e`` must be a polynomial with rational coefficients
    (sums, products, symbols, constants within +-2**62, powers by a positive integer), else a
    :class:`~layoutkit.errors.ShapeError` naming ``what``.  A ``leaf`` (an extent or stride a caller wrote)
    has at most :data:`MAX_EXTENT_NODES` nodes and total degree :data:`MAX_DEGREE`, else a
    :class:`~layoutkit.errors.LimitError`.

    >>> M, N = Symbol("M").sym, Symbol("N").sym
    >>> polynomial_size(M * N + 3, "x"), polynomial_size((M + N + 1)**2, "x")
    (({M: 1, N: 1}, 2), ({M: 2, N: 2}, 6))
    """
    nodes = 0

    def walk(x: Any) -> tuple[dict[sympy.Symbol, int], int, int]:
        """(degree in each symbol, total degree, bound on the monomials)."""
        nonlocal nodes
        nodes += 1
        if leaf and nodes > MAX_EXTENT_NODES:
            raise LimitError(f"{what}: more than {MAX_EXTENT_NODES} nodes (MAX_EXTENT_NODES); write extents and "
                             "strides as small polynomials in the symbols", MAX_EXTENT_NODES, nodes)
        if isinstance(x, sympy.Symbol):
            return {x: 1}, 1, 1
        if isinstance(x, sympy.Rational):  # Integer included
            if max(abs(int(x.p)), int(x.q)) > MAX_EXTENT:
                raise LimitError(f"{what}: the constant {x} is past +-2**62 (an extent an int64 holds)",
                                 MAX_EXTENT, x)
            return {}, 0, 1
        if isinstance(x, (sympy.Add, sympy.Mul)):
            add = isinstance(x, sympy.Add)
            parts = [walk(a) for a in x.args]
            degrees: dict[sympy.Symbol, int] = {}
            for ds, _, _ in parts:
                for v, d in ds.items():
                    degrees[v] = max(degrees.get(v, 0), d) if add else degrees.get(v, 0) + d
            totals, counts = [t for _, t, _ in parts], [c for _, _, c in parts]
            if add:
                return degrees, max(totals), sum(counts)
            return degrees, sum(totals), min(math.prod(counts), _HUGE)
        if isinstance(x, sympy.Pow) and isinstance(x.exp, sympy.Integer) and 0 < int(x.exp) <= MAX_EXTENT:
            ds, total, count = walk(x.base)
            n = int(x.exp)
            # the monomials of a sum of `count` terms to the n-th: comb(count + n - 1, n), not computed when huge
            terms = 1 if count == 1 else math.comb(count + n - 1, n) if count + n < 1000 else _HUGE
            return {v: d * n for v, d in ds.items()}, total * n, min(terms, _HUGE)
        kind = "power" if isinstance(x, sympy.Pow) else "float" if isinstance(x, sympy.Float) else type(x).__name__
        raise ShapeError(f"{what}: expected a polynomial in the symbols with rational coefficients; found the "
                         f"{kind} {x}")

    degrees, total, terms = walk(e)
    if leaf and total > MAX_DEGREE:
        raise LimitError(f"{what}: total degree {total} is past {MAX_DEGREE} (MAX_DEGREE)", MAX_DEGREE, total)
    # a polynomial of degree d_s in each symbol s has at most prod(d_s + 1) monomials
    return degrees, min(terms, math.prod(d + 1 for d in degrees.values()))


_HUGE = 1 << 62  # "more monomials than any limit": bounds are capped here so they stay cheap to compute


def bounded_expand(e: sympy.Expr, what: str, *, shift: bool = False) -> sympy.Expr:
    """``sympy.expand(e)`` when its expansion has at most :data:`MAX_TERMS` monomials (with ``shift``,
    also after each symbol is shifted, ``s = lo + m*u``: up to ``prod(d_s + 1)`` monomials), else a
    :class:`~layoutkit.errors.ProofBudgetError` naming ``what`` and what to do instead: a size budget
    checked before sympy runs, so a hostile polynomial costs a walk of its tree.

    >>> M = Symbol("M").sym
    >>> bounded_expand((M + 1)**2, "size")
    M**2 + 2*M + 1
    >>> bounded_expand(sympy.Mul(*[Symbol(f"S{k}").sym + 1 for k in range(13)]), "size")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    layoutkit.errors.ProofBudgetError: size: expanding (S0 + 1)*(S1 + 1)*... gives up to 8192 monomials, past 4096 ...
    """
    degrees, terms = polynomial_size(e, what)
    bound = math.prod(d + 1 for d in degrees.values()) if shift else terms
    if bound > MAX_TERMS:
        text = str(e) if len(str(e)) < 80 else f"{str(e)[:77]}..."
        raise ProofBudgetError(f"{what}: expanding {text} gives up to {bound} monomials, past {MAX_TERMS} "
                               "(MAX_TERMS); bind the symbols to numbers and use the bound layout instead",
                               MAX_TERMS, bound)
    return sympy.expand(e)


def check_parametric(digits: int, symbols: Sequence[Symbol], what: str) -> None:
    """The size limits of a parametric object with ``digits`` digits (``(extent, stride)`` pairs, each
    checked by :func:`polynomial_size` as a leaf when it was built): at most :data:`MAX_DIGITS` of them and
    :data:`MAX_SYMBOLS` symbols, else a :class:`~layoutkit.errors.LimitError` naming ``what``.

    >>> check_parametric(9, [Symbol(f"S{k}") for k in range(9)], "layout")
    Traceback (most recent call last):
        ...
    layoutkit.errors.LimitError: layout: 9 symbols, past 8 (MAX_SYMBOLS); bind some of them to numbers
    """
    if len(symbols) > MAX_SYMBOLS:
        raise LimitError(f"{what}: {len(symbols)} symbols, past {MAX_SYMBOLS} (MAX_SYMBOLS); bind some of them to "
                         "numbers", MAX_SYMBOLS, len(symbols))
    if digits > MAX_DIGITS:
        raise LimitError(f"{what}: {digits} digits (extent and stride pairs), past {MAX_DIGITS} (MAX_DIGITS); bind "
                         "the symbols to numbers and use a concrete layout", MAX_DIGITS, digits)


def check_extents(extents: Sequence[sympy.Expr], symbols: Sequence[Symbol], what: str) -> None:
    """Every extent is at least 1 for every admissible assignment of ``symbols``, else a
    :class:`~layoutkit.errors.ShapeError` with an assignment that breaks one (a proof over a box that may
    be empty or negative would be a proof of nothing); an extent that can be neither proved nor broken
    is an :class:`~layoutkit.errors.UnsupportedError`.

    >>> M = Symbol("M")
    >>> check_extents([M.sym, 2 * M.sym - 1], [M], "layout")
    >>> check_extents([M.sym, 3 - M.sym], [M], "layout")
    Traceback (most recent call last):
        ...
    layoutkit.errors.ShapeError: layout: expected every extent >= 1 for all values; found 3 - M = 0 at {'M': 3}
    """
    for e in extents:
        if not e.free_symbols:
            if e < 1:
                raise ShapeError(f"{what}: expected every extent >= 1; found {e}")
            continue
        try:
            ok, _, values = forall_nonneg(e - 1, symbols)
        except UnsupportedError as err:
            raise UnsupportedError(f"{what}: cannot show the extent {e} is >= 1 for all values ({err}); bind the "
                                   "symbols to numbers") from None
        if not ok:
            at = e.subs({s.sym: values[s.name] for s in symbols if s.name in values})
            raise ShapeError(f"{what}: expected every extent >= 1 for all values; found {e} = {at} at {values}")


def symbols_of(*groups: Sequence[Extent]) -> tuple[Symbol, ...]:
    """The :class:`Symbol` objects named in ``groups`` (nested sequences allowed), each once.  A bare
    sympy expression (``8 * N.sym``) may only use symbols that appear as :class:`Symbol` somewhere in
    ``groups`` (where their assumptions are stated)."""
    seen: dict[str, Symbol] = {}
    bare: list[sympy.Expr] = []

    def visit(x: Any) -> None:
        if isinstance(x, (tuple, list)):
            for y in x:
                visit(y)
        elif isinstance(x, Symbol):
            if x.name in seen and seen[x.name] != x:
                raise ShapeError(f"symbol {x.name} is given two sets of assumptions: {seen[x.name]} and {x}")
            seen[x.name] = x
        elif isinstance(x, sympy.Expr) and x.free_symbols:
            bare.append(x)

    for group in groups:
        visit(group)
    for x in bare:
        unknown = sorted(str(v) for v in x.free_symbols if str(v) not in seen)
        if unknown:
            raise ShapeError(f"{x} uses {unknown}, which no Symbol (with its assumptions) names; pass the Symbol "
                             "objects, or give the symbols explicitly for derived extents")
    return tuple(seen.values())


def check_known(exprs: Sequence[sympy.Expr], symbols: Sequence[Symbol]) -> None:
    """Raise ``ShapeError`` when an expression uses a symbol without assumptions."""
    known = {s.sym for s in symbols}
    for e in exprs:
        if not e.free_symbols <= known:
            raise ShapeError(f"{e} uses symbols {sorted(map(str, e.free_symbols - known))} with no assumptions")


def bind_symbols(symbols: Sequence[Symbol], values: Mapping[str, int]) -> dict[sympy.Symbol, int]:
    """The substitution for ``values``; ``ShapeError`` for a missing value or a broken assumption."""
    out = {}
    for s in symbols:
        if s.name not in values:
            raise ShapeError(f"no value for symbol {s.name}; bind every symbol ({[t.name for t in symbols]})")
        v = int(values[s.name])
        if not s.admits(v):
            raise ShapeError(f"{s.name} = {v} breaks its assumptions {s}")
        out[s.sym] = v
    return out


def bound_int(e: sympy.Expr, sub: Mapping[sympy.Symbol, int], what: str) -> int:
    """``e`` evaluated at ``sub``; ``ShapeError`` when it is not an integer there (e.g. ``M/8``, M = 12)."""
    v = sympy.sympify(e).subs(sub)
    if not v.is_integer:
        raise ShapeError(f"{what} {e} is {v} for {dict((str(k), x) for k, x in sub.items())}; expected an integer")
    return int(v)


def check_span(digits: Sequence[tuple[int, int]], base: int, what: str) -> None:
    """A :class:`~layoutkit.errors.LimitError` naming ``what`` when the bound digits ``(extent, stride)``
    reach offsets past ``+-2**62`` from ``base`` (tables are int64: a larger offset would wrap).

    >>> check_span([(4, 1 << 61)], 0, "layout at {'M': 4}")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    layoutkit.errors.LimitError: layout at {'M': 4}: offsets reach 6917529027641081856, past 2**62 (...)
    """
    span = abs(base) + sum((e - 1) * abs(s) for e, s in digits)
    if span > MAX_EXTENT:
        raise LimitError(f"{what}: offsets reach {span}, past 2**62 (an int64 table would wrap)", MAX_EXTENT, span)


def generic_assignment(symbols: Sequence[Symbol]) -> dict[sympy.Symbol, int]:
    """Each symbol at its ``SEARCH_VALUES``-th admissible value (a "large" value to order digits by)."""
    return {s.sym: s.values(SEARCH_VALUES)[-1] for s in symbols}


def sort_digits(digits: Sequence[tuple[sympy.Expr, sympy.Expr]], symbols: Sequence[Symbol]
                ) -> list[tuple[sympy.Expr, sympy.Expr]]:
    """``(extent, stride)`` digits sorted by stride at :func:`generic_assignment` (ties by extent),
    without the digits whose extent is 1 for every admissible value (they never move).

    Any order gives *sound* conditions in :func:`radix_conditions`; this one makes them provable."""
    generic = generic_assignment(symbols)
    moving = [d for d in digits if not always_one(d[0], symbols)]
    return sorted(moving, key=lambda d: (int(d[1].subs(generic)), int(d[0].subs(generic))))


def always_one(extent: sympy.Expr, symbols: Sequence[Symbol]) -> bool:
    """Whether ``extent`` is 1 for every admissible assignment (``M - 7`` with ``M`` in ``[8, 8]``)."""
    extent = sympy.sympify(extent)
    return bool(extent == 1 or (extent.free_symbols and _forall_zero(extent - 1, symbols)))


def radix_conditions(digits: Sequence[tuple[sympy.Expr, sympy.Expr]]) -> tuple[list[sympy.Expr], list[sympy.Expr]]:
    """``(injective, exact)`` for sorted ``(extent, stride)`` digits: ``injective`` expressions that
    must be ``>= 0`` (``stride_k - 1 - sum_{i<k} (extent_i - 1) * stride_i``) and ``exact`` ones that
    must be ``== 0`` (``stride_k - prod_{i<k} extent_i``) for a bijection onto ``[0, prod extents)``.
    Digits of extent 1 impose nothing."""
    span, cover = sympy.Integer(1), sympy.Integer(1)
    injective, exact = [], []
    for extent, stride in digits:
        if extent == 1:
            continue
        injective.append(bounded_expand(stride - span, "the injectivity condition of a mixed-radix number"))
        exact.append(bounded_expand(stride - cover, "the bijectivity condition of a mixed-radix number"))
        span = span + (extent - 1) * stride
        cover = cover * extent
    return injective, exact


def polynomial_value(poly: sympy.Poly, sub: Mapping[sympy.Symbol, int]) -> Fraction:
    """``poly`` at the integer assignment ``sub``, exactly, in Python's integers and fractions: microseconds
    where ``Expr.subs`` takes milliseconds (a counterexample search evaluates thousands of assignments).

    >>> M, N = sympy.symbols("M N", integer=True)
    >>> polynomial_value(sympy.Poly(M**2 * N / 2 - 3, M, N), {M: 4, N: 3})
    Fraction(21, 1)
    """
    values = [int(sub[g]) for g in poly.gens]
    total = Fraction(0)
    for monomial, coeff in poly.terms():
        q = sympy.Rational(coeff)
        term = Fraction(int(q.p), int(q.q))
        for v, k in zip(values, monomial):
            term *= v ** k
        total += term
    return total


def forall_nonneg(e: sympy.Expr, symbols: Sequence[Symbol]) -> tuple[bool, str, dict[str, int]]:
    """Whether ``e >= 0`` for every admissible assignment: (verdict, method, refuting assignment)."""
    e = bounded_expand(e, "the proof that a condition is >= 0 for all values", shift=True)
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
    found = search_assignment(symbols, _below_zero(e), e.free_symbols)
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


def search_assignment(symbols: Sequence[Symbol], bad: Callable[[dict[sympy.Symbol, int]], Any],
                      used: Collection[sympy.Symbol] | None = None) -> dict[str, int] | None:
    """The first assignment (over the first ``SEARCH_VALUES`` admissible values per symbol) for which
    ``bad(substitution)`` holds, or None; a :class:`~layoutkit.errors.ProofBudgetError` once
    :data:`SEARCH_LIMIT` assignments have been tried undecided.  Symbols not in ``used`` (default: all
    are) keep their smallest admissible value: the claim does not depend on them.

    >>> M, N = Symbol("M"), Symbol("N")
    >>> search_assignment([M, N], lambda sub: sub[M.sym] * sub[N.sym] == 6), search_assignment([M, N], lambda sub:
    ...     sub[M.sym] == 6, used={M.sym})
    ({'M': 1, 'N': 6}, {'M': 6, 'N': 1})
    """
    grids = [s.values(SEARCH_VALUES) if used is None or s.sym in used else s.values(1) for s in symbols]
    for tried, combo in enumerate(itertools.product(*grids)):
        if tried == SEARCH_LIMIT:
            names = ", ".join(s.name for s in symbols)
            raise ProofBudgetError(
                f"search for a counterexample over {names}: stopped undecided after {tried} of "
                f"{math.prod(len(g) for g in grids)} assignments (SEARCH_LIMIT); bind the symbols to the values you "
                "need and prove the bound layout instead", SEARCH_LIMIT, tried)
        sub = {s.sym: v for s, v in zip(symbols, combo)}
        if bad(sub):
            return {s.name: v for s, v in zip(symbols, combo)}
    return None


def enumeration_budget(fails: Callable[[dict[str, int]], bool], points: Callable[[dict[str, int]], int],
                       claim: str) -> Callable[[dict[str, int]], bool]:
    """``fails`` that first counts the ``points(values)`` it will enumerate against :data:`SEARCH_POINTS`
    (all calls together) and past it raises a :class:`~layoutkit.errors.ProofBudgetError` naming ``claim``.

    >>> check = enumeration_budget(lambda values: False, lambda values: values["M"] ** 2, "injective")
    >>> check({"M": 2048})
    False
    >>> check({"M": 2})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    layoutkit.errors.ProofBudgetError: injective: the search for a counterexample stopped undecided: ...
    """
    spent = 0

    def run(values: dict[str, int]) -> bool:
        nonlocal spent
        spent += points(values)
        if spent > SEARCH_POINTS:
            raise ProofBudgetError(
                f"{claim}: the search for a counterexample stopped undecided: checking {values} would bring the "
                f"points it enumerated to {spent}, past {SEARCH_POINTS} (SEARCH_POINTS); give the symbols smaller "
                "admissible values (lo, multiple) or bind them and prove the bound layout", SEARCH_POINTS, spent)
        return fails(values)

    return run


def prove_for_all(symbols: Sequence[Symbol], nonneg: Sequence[sympy.Expr], zero: Sequence[sympy.Expr], claim: str,
                  fails: Callable[[dict[str, int]], bool], refuted: Callable[[dict[str, int], str], Proof],
                  points: Callable[[dict[str, int]], int] | None = None,
                  used: Collection[sympy.Symbol] | None = None) -> Proof:
    """Prove ``claim`` from sufficient conditions (``nonneg`` ``>= 0``, ``zero`` ``== 0`` for every
    admissible assignment), or refute it: ``fails(values)`` checks the bound map (by enumeration of
    ``points(values)`` points, within :func:`enumeration_budget`) and ``refuted(values, method)`` builds
    the refuting proof; the search varies only the ``used`` symbols (see :func:`search_assignment`).
    ``UnsupportedError`` when a condition fails but no searched assignment breaks the claim."""
    if points is not None:
        fails = enumeration_budget(fails, points, claim)
    methods = set()
    for e in nonneg:
        ok, method, values = forall_nonneg(e, symbols)
        methods.add(method)
        if not ok:
            if fails(values):
                return refuted(values, method)
            return _search_refutation(symbols, claim, _below_zero(e), fails, refuted, method, used)
    for e in zero:
        e = bounded_expand(e, f"{claim}: a condition == 0")
        if e == 0:
            continue
        if _forall_zero(e, symbols):  # zero on every admissible value though not as a polynomial (bounded symbols)
            methods.add("isl")
            continue
        return _search_refutation(symbols, claim, _nonzero(e), fails, refuted, "structural", used)
    return Proof(claim, True, "+".join(sorted(methods)) or "structural")


def _value_of(e: sympy.Expr) -> Callable[[Mapping[sympy.Symbol, int]], Fraction]:
    """The exact value of the polynomial ``e`` at an assignment (:func:`polynomial_value`)."""
    gens = sorted(e.free_symbols, key=str)
    if not gens:
        c = sympy.Rational(e)
        return lambda sub: Fraction(int(c.p), int(c.q))
    poly = sympy.Poly(e, *gens)
    return lambda sub: polynomial_value(poly, sub)


def _below_zero(e: sympy.Expr) -> Callable[[dict[sympy.Symbol, int]], bool]:
    value = _value_of(e)
    return lambda sub: value(sub) < 0


def _nonzero(e: sympy.Expr) -> Callable[[dict[sympy.Symbol, int]], bool]:
    value = _value_of(e)
    return lambda sub: value(sub) != 0


def _forall_zero(e: sympy.Expr, symbols: Sequence[Symbol]) -> bool:
    try:
        return forall_nonneg(e, symbols)[0] and forall_nonneg(-e, symbols)[0]
    except (UnsupportedError, ProofBudgetError):  # undecided: not proved zero
        return False


def _search_refutation(symbols: Sequence[Symbol], claim: str, broken: Callable[[dict[sympy.Symbol, int]], Any],
                       fails: Callable[[dict[str, int]], bool], refuted: Callable[[dict[str, int], str], Proof],
                       method: str, used: Collection[sympy.Symbol] | None) -> Proof:
    found = search_assignment(symbols, lambda sub: bool(broken(sub))
                              and fails({str(k): int(v) for k, v in sub.items()}), used)
    if found is None:
        raise UnsupportedError(f"{claim}: not proved (a sufficient condition fails) and not refuted by the first "
                               f"{SEARCH_VALUES} admissible values per symbol")
    return refuted(found, method)


def first_missing(flat: np.ndarray, size: int) -> int | None:
    """The smallest value of ``[0, size)`` that ``flat`` does not hold, or None: one sort of ``flat``, never an
    array of ``size`` (the box of a sparse map can be far larger than its table).

    >>> first_missing(np.array([3, 0, 1, 9]), 10), first_missing(np.array([1, 0]), 2)
    (2, None)
    """
    held = sorted_distinct(flat[(flat >= 0) & (flat < size)])
    gaps = np.flatnonzero(held != np.arange(held.size))
    if gaps.size:
        return int(gaps[0])
    return int(held.size) if held.size < size else None


def first_collision(flat: np.ndarray) -> tuple[int, int] | None:
    """Two flat positions with the same value, or None."""
    order = np.argsort(flat, kind="stable")
    dup = np.flatnonzero(flat[order][1:] == flat[order][:-1])
    if dup.size == 0:
        return None
    return int(order[dup[0]]), int(order[dup[0] + 1])


__all__ = [
    "SEARCH_LIMIT", "SEARCH_POINTS", "SEARCH_VALUES", "MAX_EXTENT_NODES", "MAX_DEGREE", "MAX_TERMS", "MAX_SYMBOLS",
    "MAX_DIGITS", "Symbol", "Extent", "extent_expr", "polynomial_size", "bounded_expand", "check_parametric",
    "symbols_of", "check_known", "bind_symbols", "bound_int", "check_span", "generic_assignment", "always_one",
    "sort_digits", "radix_conditions", "forall_nonneg", "search_assignment", "enumeration_budget", "prove_for_all",
    "first_collision", "first_missing", "check_extents", "polynomial_value",
]
