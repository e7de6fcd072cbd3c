"""Bounds-aware smart constructors: every expression is built already simplified.

Canonical form (the one TVM's canonical simplifier prints, which is what TileLang shows):

* a sum is ``sum(coeff * atom) + const`` with terms ordered by coefficient (largest first), then by
  the split's lower factor and upper factor (largest first);
* a digit of ``x`` is written ``x % upper // lower`` (never ``x // lower % n``);
* divisions and remainders that the operand's interval makes trivial disappear
  (``(i % 8) // 8 -> 0``, ``i % 16`` with ``i < 16`` -> ``i``);
* adjacent digits of one base merge (``x // 8 * 8 + x % 8 -> x``).

Rules for ``S // c`` and ``S % c`` with ``S = g*Y + r`` where ``g`` divides ``c`` and every
coefficient of ``Y``, and ``0 <= r < g``:  ``S // c = Y // (c/g)`` and
``S % c = (Y % (c/g)) * g + r`` (both exact for floor semantics).

>>> from layoutkit.algebra import Var
>>> i, j = Var("_i", 4), Var("_j", 2)
>>> print((i * 2 + j) % 4, "|", (i * 2 + j) // 4)
_i % 2 * 2 + _j | _i // 2
>>> x = Var("x", 64)
>>> print(x // 8 * 8 + x % 8, "|", x // 4 % 2, "|", x - x // 8 * 8)
x | x % 8 // 4 | x % 8
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from ..errors import ExprError, UnsupportedError
from .nodes import INF, And, Const, Expr, FloorDiv, FloorMod, Mul, Or, Sum, Xor
from .printing import compare_text

_E = TypeVar("_E", bound=Expr)

# ---- linear forms ----------------------------------------------------------------------------


def linear(e: Expr) -> tuple[dict[Expr, int], int]:
    """Split ``e`` into ``({atom: coeff}, const)``.

    >>> from layoutkit.algebra import Var
    >>> i = Var("_i", 4)
    >>> linear(i * 3 + 2) == ({i: 3}, 2)
    True
    """
    if isinstance(e, Const):
        return {}, e.value
    if isinstance(e, Sum):
        return dict(e.terms), e.const
    return {e: 1}, 0


def split_view(atom: Expr) -> tuple[Expr, int, int | None]:
    """View ``atom`` as the digit ``base % upper // lower`` (``upper=None``: no modulo).

    >>> from layoutkit.algebra import Var
    >>> x = Var("x", 64)
    >>> split_view(x % 16 // 4) == (x, 4, 16)
    True
    """
    if isinstance(atom, FloorDiv):
        inner = atom.a
        if isinstance(inner, FloorMod):
            return inner.a, atom.c, inner.c
        return inner, atom.c, None
    if isinstance(atom, FloorMod):
        return atom.a, 1, atom.c
    return atom, 1, None


def make_split(base: Expr, lower: int, upper: int | None) -> Expr:
    """Build ``base % upper // lower`` through the simplifier."""
    e = base if upper is None else floormod(base, Const(upper))
    return e if lower == 1 else floordiv(e, Const(lower))


def _rank_key(item: tuple[Expr, int]) -> tuple[Any, ...]:
    atom, coeff = item
    _, lower, upper = split_view(atom)
    return (-coeff, -lower, -(INF if upper is None else upper))


def _sorted_terms(terms: dict[Expr, int]) -> tuple[tuple[Expr, int], ...]:
    """The terms in canonical order: by :func:`_rank_key`, then atoms of equal rank by their text.

    The text order is decided by :func:`~.printing.compare_text`, which reads the two texts only up
    to where they differ and skips a shared sub-expression whole, so no atom is printed: printing
    costs the size of the tree, which compose chains make exponential in the size of the DAG."""
    ranked = sorted(((_rank_key(item), item) for item in terms.items()), key=lambda pair: pair[0])
    out: list[tuple[Expr, int]] = []
    start = 0
    while start < len(ranked):
        stop = start + 1
        while stop < len(ranked) and ranked[stop][0] == ranked[start][0]:
            stop += 1
        group = [item for _, item in ranked[start:stop]]
        out += group if len(group) == 1 else sorted(group, key=_BY_TEXT)
        start = stop
    return tuple(out)


def _text_order(x: tuple[Expr, int], y: tuple[Expr, int]) -> int:
    return compare_text(x[0], y[0])


_BY_TEXT = functools.cmp_to_key(_text_order)


def _merge_digits(terms: dict[Expr, int]) -> dict[Expr, int]:
    """Merge digits of one base: ``x%u//l*s + x%l//m*s' -> x%u//m*s'`` when ``s == s'*(l/m)``."""
    changed = True
    while changed and len(terms) > 1:
        changed = False
        views = [(atom, coeff, split_view(atom)) for atom, coeff in terms.items()]
        for a1, s1, (x1, l1, u1) in views:
            for a2, s2, (x2, l2, u2) in views:
                if a1 is a2 or x1 != x2 or l1 % l2 or l1 == l2:
                    continue
                merged = None
                if u2 == l1 and s1 == s2 * (l1 // l2):
                    merged = make_split(x1, l2, u1)
                elif u1 == u2 and s1 == -s2 * (l1 // l2) and (u1 is None or u1 % l1 == 0):
                    # x%u//m*s' - x%u//l*(s'*l/m)  ->  x%l//m*s'
                    merged = make_split(x1, l2, l1)
                if merged is not None:
                    del terms[a1], terms[a2]
                    terms[merged] = terms.get(merged, 0) + s2
                    if terms[merged] == 0:
                        del terms[merged]
                    changed = True
                    break
            if changed:
                break
    return terms


def _flatten(terms: dict[Expr, int], const: int) -> tuple[dict[Expr, int], int]:
    flat: dict[Expr, int] = {}
    for atom, coeff in terms.items():
        if atom.lo == atom.hi:  # a variable of extent 1, or anything its bounds pin down
            const += int(atom.lo) * coeff
        elif isinstance(atom, (Sum, Const)):
            sub, k = linear(atom)
            const += k * coeff
            for a, c in sub.items():
                flat[a] = flat.get(a, 0) + c * coeff
        else:
            flat[atom] = flat.get(atom, 0) + coeff
    return {a: c for a, c in flat.items() if c != 0}, const


def make_sum(terms: dict[Expr, int], const: int = 0) -> Expr:
    """Canonical expression for ``sum(coeff * atom) + const``."""
    flat, const = _flatten(terms, const)
    flat = _merge_digits(flat)
    if any(isinstance(a, (Sum, Const)) for a in flat):
        return make_sum(flat, const)
    if not flat:
        return Const(const)
    if len(flat) == 1 and const == 0:
        ((atom, coeff),) = flat.items()
        if coeff == 1:
            return atom
    return Sum(_sorted_terms(flat), const)


# ---- arithmetic ------------------------------------------------------------------------------


def _plain(e: Expr) -> bool:
    """An atom ``make_sum({e: 1})`` returns unchanged (not a sum, not pinned to one value), so ``e + 0`` is
    ``e`` without building the sum."""
    return not isinstance(e, (Sum, Const)) and e.lo != e.hi


def add(a: Expr, b: Expr) -> Expr:
    """``a + b``."""
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value + b.value)
    if isinstance(b, Const) and b.value == 0 and _plain(a):
        return a
    if isinstance(a, Const) and a.value == 0 and _plain(b):
        return b
    ta, ca = linear(a)
    tb, cb = linear(b)
    for atom, coeff in tb.items():
        ta[atom] = ta.get(atom, 0) + coeff
    return make_sum(ta, ca + cb)


def scale(e: Expr, c: int) -> Expr:
    """``e * c`` for an integer ``c``."""
    if c == 0:
        return Const(0)
    if c == 1:
        return e
    terms, k = linear(e)
    return make_sum({a: s * c for a, s in terms.items()}, k * c)


def mul(a: Expr, b: Expr) -> Expr:
    """``a * b`` (a product of two non-constants stays a :class:`Mul` node)."""
    if isinstance(b, Const):
        return scale(a, b.value)
    if isinstance(a, Const):
        return scale(b, a.value)
    return Mul(a, b)


def _divisor(a: Expr, b: Expr, op: str) -> int:
    if not isinstance(b, Const):
        raise UnsupportedError(f"{op} by the non-constant expression {b} (in {a} {op} {b}) is not supported")
    if b.value == 0:
        raise ExprError(f"{op} by zero in {a} {op} 0")
    return b.value


def _gcd_candidates(terms: dict[Expr, int], c: int) -> list[int]:
    return sorted({math.gcd(c, s) for s in terms.values()} - {1, c}, reverse=True)


def _split_by(terms: dict[Expr, int], const: int, g: int) -> tuple[Expr, Expr] | None:
    """Write ``S = g*Y + r`` with ``0 <= r < g``; return ``(Y, r)`` or None if impossible."""
    big = {a: s // g for a, s in terms.items() if s % g == 0}
    if not big:
        return None
    q, rem = divmod(const, g)
    small = make_sum({a: s for a, s in terms.items() if s % g}, rem)
    if small.lo >= 0 and small.hi < g:
        return make_sum(big, q), small
    return None


def floordiv(a: Expr, b: Expr) -> Expr:
    """``a // b`` (floor division) for a constant ``b``."""
    c = _divisor(a, b, "//")
    if c < 0:
        return floordiv(scale(a, -1), Const(-c))
    if isinstance(a, Const):
        return Const(a.value // c)
    if c == 1:
        return a
    if not (math.isinf(a.lo) or math.isinf(a.hi)) and a.lo // c == a.hi // c:
        return Const(int(a.lo) // c)
    if isinstance(a, FloorDiv):
        return floordiv(a.a, Const(a.c * c))
    if isinstance(a, Sum):
        terms, const = linear(a)
        whole = {t: s // c for t, s in terms.items() if s % c == 0}
        q, rem = divmod(const, c)
        if whole or q:
            rest = make_sum({t: s for t, s in terms.items() if s % c}, rem)
            return add(make_sum(whole, q), floordiv(rest, Const(c)))
        for g in _gcd_candidates(terms, c):
            parts = _split_by(terms, const, g)
            if parts is not None:
                return floordiv(parts[0], Const(c // g))
    return FloorDiv(a, c)


def floormod(a: Expr, b: Expr) -> Expr:
    """``a % b`` (floor modulo, result in ``[0, b)``) for a constant ``b``."""
    c = _divisor(a, b, "%")
    if c < 0:
        return scale(floormod(scale(a, -1), Const(-c)), -1)
    if isinstance(a, Const):
        return Const(a.value % c)
    if c == 1:
        return Const(0)
    if not (math.isinf(a.lo) or math.isinf(a.hi)) and a.lo // c == a.hi // c:
        shift = -(int(a.lo) // c) * c
        return a if shift == 0 and _plain(a) else add(a, Const(shift))
    if isinstance(a, FloorMod) and a.c % c == 0:
        return floormod(a.a, Const(c))
    if isinstance(a, FloorDiv):
        return floordiv(floormod(a.a, Const(a.c * c)), Const(a.c))
    if isinstance(a, Sum):
        terms, const = linear(a)
        kept = {t: s for t, s in terms.items() if s % c}
        if len(kept) != len(terms) or not 0 <= const < c:
            return floormod(make_sum(kept, const % c), Const(c))
        for g in _gcd_candidates(terms, c):
            parts = _split_by(terms, const, g)
            if parts is not None:
                y, r = parts
                return add(scale(floormod(y, Const(c // g)), g), r)
    return FloorMod(a, c)


# ---- bitwise ---------------------------------------------------------------------------------


def low_zero_bits(e: Expr) -> float:
    """Number of low bits known to be zero in every value of ``e`` (``inf`` for 0)."""
    if isinstance(e, Const):
        v = e.value
        return INF if v == 0 else (v & -v).bit_length() - 1
    if isinstance(e, Sum):
        tz = low_zero_bits(Const(e.const))
        for atom, coeff in e.terms:
            tz = min(tz, low_zero_bits(Const(coeff)) + low_zero_bits(atom))
        return tz
    if isinstance(e, Mul):
        return low_zero_bits(e.a) + low_zero_bits(e.b)
    return 0


def _fits_below(x: Expr, bits: float) -> bool:
    return math.isinf(bits) or (not math.isinf(x.hi) and x.hi < 2**bits)


def _disjoint(a: Expr, b: Expr) -> bool:
    """True when ``a`` and ``b`` are non-negative and can never share a set bit."""
    if a.lo < 0 or b.lo < 0:
        return False
    return _fits_below(a, low_zero_bits(b)) or _fits_below(b, low_zero_bits(a))


def _xor_operands(e: Expr) -> list[Expr]:
    """The operands of a xor chain, left to right (without recursion: chains can be long)."""
    out: list[Expr] = []
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Xor):
            stack.extend((x.b, x.a))
        else:
            out.append(x)
    return out


def bitxor(a: Expr, b: Expr) -> Expr:
    """``a ^ b``; equal operands of a xor chain cancel (``j ^ i ^ i -> j``), bit-disjoint
    operands become ``a + b``."""
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value ^ b.value)
    if a == b:
        return Const(0)
    if isinstance(a, Xor) or isinstance(b, Xor):
        ops = _xor_operands(a) + _xor_operands(b)
        counts = Counter(ops)  # linear, not quadratic, in the chain length
        kept = [x for x, n in counts.items() if n % 2]
        if len(kept) < len(ops):
            out: Expr = Const(0)
            for x in kept:
                out = bitxor(out, x)
            return out
    if isinstance(a, Const) and a.value == 0:
        return b
    if isinstance(b, Const) and b.value == 0:
        return a
    if _disjoint(a, b):
        return add(a, b)
    return Xor(a, b)


def bitor(a: Expr, b: Expr) -> Expr:
    """``a | b``; bit-disjoint operands become ``a + b``."""
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value | b.value)
    if a == b:
        return a
    if _disjoint(a, b):
        return add(a, b)
    return Or(a, b)


def bitand(a: Expr, b: Expr) -> Expr:
    """``a & b``; ``x & (2**k - 1)`` with ``x >= 0`` becomes ``x % 2**k``."""
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value & b.value)
    if isinstance(a, Const):
        a, b = b, a
    if a == b:
        return a
    if isinstance(b, Const):
        m = b.value
        if m == 0:
            return Const(0)
        if m > 0 and (m + 1) & m == 0 and a.lo >= 0:
            return floormod(a, Const(m + 1))
    if _disjoint(a, b):
        return Const(0)
    return And(a, b)


_BITWISE: dict[type[Expr], Callable[[Expr, Expr], Expr]] = {Xor: bitxor, And: bitand, Or: bitor}


def rebuild(e: Expr, children: list[Expr]) -> Expr:
    """Rebuild node ``e`` with new children through the simplifier."""
    if isinstance(e, Sum):
        terms: dict[Expr, int] = {}
        for child, (_, coeff) in zip(children, e.terms):
            terms[child] = terms.get(child, 0) + coeff
        return make_sum(terms, e.const)
    if isinstance(e, FloorDiv):
        return floordiv(children[0], Const(e.c))
    if isinstance(e, FloorMod):
        return floormod(children[0], Const(e.c))
    if isinstance(e, Mul):
        return mul(*children)
    return _BITWISE[type(e)](*children)


@functools.lru_cache(maxsize=1 << 14)
def _rebuilt(e: Expr, children: tuple[Expr, ...]) -> Expr:
    """:func:`rebuild`, remembered: nodes are interned, so the result is a function of the node and
    the new children; a compose chain rebuilds the same (node, children) pairs at every step (the
    deep levels of ``L o L o ... o L`` are those of the chain one shorter)."""
    return rebuild(e, list(children))


def substitute(e: Expr, mapping: Mapping[_E, Expr]) -> Expr:
    """Replace variables (or any sub-expressions) by expressions and re-simplify.

    >>> from layoutkit.algebra import Var
    >>> i, j = Var("_i", 8), Var("_j", 8)
    >>> print(substitute(i * 8 + j, {i: Var("t", 64) // 8, j: Var("t", 64) % 8}))
    t
    """
    memo: dict[Expr, Expr] = {}
    lookup = cast(Mapping[Expr, Expr], mapping)  # keys are Vars or other sub-expressions
    mkey = tuple(lookup.items())
    if len(_SUBSTITUTED) > SUBSTITUTE_CACHE:
        _SUBSTITUTED.clear()

    def go(x: Expr) -> Expr:
        hit = memo.get(x)
        if hit is not None:
            return hit
        if x in lookup:
            out = lookup[x]
        else:
            kids = x.children()
            if not kids:
                out = x
            else:
                out = _SUBSTITUTED.get((x, mkey))  # type: ignore[assignment]
                if out is None:
                    new = tuple(go(k) for k in kids)
                    out = x if all(n is k for n, k in zip(new, kids)) else _rebuilt(x, new)
                    _SUBSTITUTED[x, mkey] = out
        memo[x] = out
        return out

    return go(e)


SUBSTITUTE_CACHE = 1 << 15
"""Most remembered (node, mapping) substitutions; the cache is emptied when it grows past this."""
_SUBSTITUTED: dict[tuple[Expr, tuple[tuple[Expr, Expr], ...]], Expr] = {}
"""``substitute`` results by node and mapping (both interned values, so the result is a function of
them): the steps of ``M.compose(L)`` chains substitute the same mapping into the deep levels again."""


def simplify(e: Expr) -> Expr:
    """Re-run every rule bottom-up (idempotent: ``simplify(simplify(e)) == simplify(e)``)."""
    memo: dict[Expr, Expr] = {}

    def go(x: Expr) -> Expr:
        hit = memo.get(x)
        if hit is None:
            kids = x.children()
            hit = rebuild(x, [go(k) for k in kids]) if kids else x
            memo[x] = hit
        return hit

    return go(e)
