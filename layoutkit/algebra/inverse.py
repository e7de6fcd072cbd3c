"""Closed-form inverses of bijective index maps, xor swizzles included.

Algorithm (digit matching).  Each output ``o_k`` of a bijection onto a box is, in canonical form,
a mixed-radix number ``sum_t c_t * a_t`` with ``c_1 = 1`` and ``c_{t+1} = c_t * R_t`` where atom
``a_t`` takes ``R_t`` values.  So every atom is known from the outputs:
``a_t = o_k % (c_t * R_t) // c_t``.  An atom is

* a digit ``x % u // l`` of an input ``x``: that digit of ``x`` is now known;
* ``A ^ B``: once ``B`` is computable from known digits, ``A = value ^ B`` (and symmetrically);
* ``(A + B) % m`` (TileLang's bit-xor) with ``A`` in ``[0, m)``: ``A = (value - B) % m``.

Known digits of an input are chained (``x % u // l`` pieces that tile ``[1, extent)``) to rebuild
the input.  When digit matching does not close, power-of-two maps that are linear over F2 are
inverted by Gaussian elimination (:mod:`layoutkit.algebra.linear`).  Callers verify the result
on the whole domain, so a returned inverse is always exact.

>>> from layoutkit.algebra import Var
>>> i, j = Var("_i", 8), Var("_j", 64)
>>> swz = (i * 64 + ((j // 8) ^ i) * 8 + j % 8,)
>>> o = Var("_i", 512)
>>> [str(e) for e in solve_inverse(swz, (i, j), (o,))]
['_i // 64', '(_i % 64 // 8 ^ _i // 64) * 8 + _i % 8']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from .nodes import (
    Const,
    Expr,
    FloorDiv,
    FloorMod,
    Sum,
    Var,
    Xor,
    add,
    bitxor,
    floordiv,
    floormod,
    linear,
    make_sum,
    rebuild,
    scale,
    split_view,
    substitute,
    walk,
)

_TOP = None  # an unbounded upper factor


def _digits(expr: Expr, value: Expr, extent: float) -> list[tuple[Expr, Expr]] | None:
    """``[(atom, value_expr)]`` for ``expr == value`` when ``expr`` is a mixed-radix number over
    ``[0, extent)``, or None.  A term ``-c * a`` (``a`` in ``[0, R)``) is read as the reflected
    digit ``R - 1 - a`` with coefficient ``c`` (so ``2 - i`` inverts)."""
    terms, const = linear(expr)
    items = []
    for atom, coeff in terms.items():
        if atom.lo != 0 or atom.hi == float("inf"):
            return None
        if coeff < 0:
            top = int(atom.hi)
            atom = add(Const(top), scale(atom, -1))
            coeff = -coeff
            const -= coeff * top
        items.append((atom, coeff))
    if const != 0:
        return None
    items.sort(key=lambda t: t[1])
    place = 1
    found = []
    for atom, coeff in items:
        if coeff != place:
            return None
        radix = int(atom.hi) + 1
        found.append((atom, floordiv(floormod(value, Const(place * radix)), Const(place))))
        place *= radix
    if extent > place:
        return None
    return found


class _Knowledge:
    """Known digits ``x % upper // lower == expr`` of each input variable."""

    def __init__(self, variables: Sequence[Var]):
        self.pieces: dict[Var, list[tuple[int, int | None, Expr]]] = {v: [] for v in variables}
        self.atoms: dict[Expr, Expr] = {}

    def learn(self, var: Var, lower: int, upper: int | None, value: Expr) -> None:
        if upper is not None and var.extent is not None and upper >= var.extent:
            upper = _TOP
        self.pieces[var].append((lower, upper, value))

    def digit(self, var: Var, lower: int, upper: int | None) -> Expr | None:
        """Expression for ``var % upper // lower`` from known pieces, or None."""
        if var.extent == 1:
            return Const(0)
        if var.extent is not None and upper is not None and upper >= var.extent:
            upper = _TOP
        pieces = self.pieces.get(var)
        if not pieces:
            return None
        terms: dict[Expr, int] = {}  # the digits' sum, built once: chained adds re-sort and re-merge it per digit
        const = 0
        cur = lower
        while upper is _TOP or cur < upper:
            if var.extent is not None and cur >= var.extent:
                break
            step = next(
                (p for p in pieces if p[0] <= cur and cur % p[0] == 0 and (p[1] is _TOP or cur < p[1])), None
            )
            if step is None:
                return None
            plo, pup, pval = step
            stop = pup if upper is _TOP else (upper if pup is _TOP else min(pup, upper))
            if stop is not _TOP and (stop % plo or (pup is not _TOP and pup % stop)):
                return None
            part = pval if stop is _TOP else floormod(pval, Const(stop // plo))
            part = floordiv(part, Const(cur // plo))
            part_terms, part_const = linear(part)
            for atom, coeff in part_terms.items():
                terms[atom] = terms.get(atom, 0) + coeff * (cur // lower)
            const += part_const * (cur // lower)
            if stop is _TOP:
                break
            cur = stop
        return make_sum(terms, const)

    def resolve(self, e: Expr) -> Expr | None:
        """``e`` rewritten over the outputs, or None if some digit it needs is unknown."""
        if isinstance(e, Const):
            return e
        if e in self.atoms:
            return self.atoms[e]
        base, lower, upper = split_view(e)
        if isinstance(base, Var):
            return self.digit(base, lower, upper)
        kids = e.children()
        if not kids:
            return None
        new = [self.resolve(k) for k in kids]
        if any(n is None for n in new):
            return None
        return rebuild(e, cast("list[Expr]", new))


def _composite_bases(exprs: Sequence[Expr], variables: Sequence[Var]) -> dict[Expr, Var]:
    """Sums that outputs take digits of (``(i*3 + j) % 2``): each becomes a fresh variable."""
    found: dict[Expr, Var] = {}
    for e in walk(list(exprs)):
        if not isinstance(e, (FloorDiv, FloorMod)):  # only a digit view has a lower or an upper factor
            continue
        base, lower, upper = split_view(e)
        if (isinstance(base, Sum) and (lower > 1 or upper is not None) and base not in found
                and base.lo == 0 and base.hi != float("inf")):
            var = Var(f"_t{len(found)}", int(base.hi) + 1)
            if _digits(base, var, int(base.hi) + 1) is not None:  # only sums that decompose again
                found[base] = var
    return found


def solve_inverse(
    exprs: Sequence[Expr], variables: Sequence[Var], outputs: Sequence[Var]
) -> tuple[Expr, ...] | None:
    """Express each of ``variables`` through ``outputs`` (one Var per expr), or None."""
    composites = _composite_bases(exprs, variables)
    if composites:
        exprs = [substitute(e, composites) for e in exprs]
    pending: list[tuple[Expr, Expr]] = []
    for e, o in zip(exprs, outputs):
        found = _digits(e, o, o.extent if o.extent is not None else float("inf"))
        if found is None:
            return None
        pending.extend(found)
    know = _Knowledge(tuple(variables) + tuple(composites.values()))
    waiting = dict(composites)  # composite sum -> its variable, until the variable is known
    progress = True
    while (pending or waiting) and progress:
        progress = False
        for item in list(pending):
            derived = _step(item, know)
            if derived is not None:
                pending.remove(item)
                pending.extend(derived)
                progress = True
        for base, var in list(waiting.items()):
            value = know.digit(var, 1, _TOP)
            if value is not None:
                parts = _digits(base, value, cast(int, var.extent))
                if parts is None:
                    return None
                del waiting[base]
                pending.extend(parts)
                progress = True
    if pending:
        return None
    result = []
    for v in variables:
        value = know.digit(v, 1, _TOP)
        if value is None:
            return None
        result.append(value)
    return tuple(result)


def _step(item: tuple[Expr, Expr], know: _Knowledge) -> list[tuple[Expr, Expr]] | None:
    """Use one equation ``atom == value``; return new equations (possibly none) or None if stuck."""
    atom, value = item
    if isinstance(atom, Const):
        return []
    know.atoms.setdefault(atom, value)
    base, lower, upper = split_view(atom)
    if isinstance(base, Var) and base in know.pieces:
        know.learn(base, lower, upper, value)
        return []
    if isinstance(atom, Sum) and len(atom.terms) == 1 and atom.terms[0][1] in (1, -1):
        (inner, sign), = atom.terms
        return [(inner, scale(add(value, Const(-atom.const)), sign))]
    if isinstance(atom, Xor):
        for known, unknown in ((atom.b, atom.a), (atom.a, atom.b)):
            k = know.resolve(known)
            if k is not None:
                return [(unknown, bitxor(value, k))]
        return None
    if isinstance(atom, FloorMod) and isinstance(atom.a, Sum):
        m = atom.c
        terms, const = linear(atom.a)
        for t, s in terms.items():
            if s not in (1, -1) or t.lo < 0 or t.hi >= m:
                continue
            rest = add(atom.a, scale(t, -s))
            k = know.resolve(rest)
            if k is not None:
                return [(t, floormod(scale(add(value, scale(k, -1)), s), Const(m)))]
        return None
    return None
