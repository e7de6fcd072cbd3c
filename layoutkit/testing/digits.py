"""The digit machinery behind :mod:`.strategies`: a layout is built from mixed-radix digits of its inputs.

Every input dim is split into digits ``x // lower % radix``; digits are transformed by invertible edits
(flips, xor swizzles, modular adds), permuted, and grouped into outputs as mixed-radix numbers.  Each step
keeps the digit vector a bijection, so a layout built without damage is bijective by construction;
:func:`_damage` then breaks it on purpose for the non-bijective strategies.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import hypothesis.strategies as st
from hypothesis.errors import InvalidArgument

from ..algebra.layout import Layout
from ..algebra.nodes import Const, Expr
from ..algebra.shapes import check_shape, placeholder

MAX_OUTPUTS = 3
"""At most this many output dims in a generated layout."""


# ---- small integer helpers ---------------------------------------------------------------------


def is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def check_limits(max_rank: int, max_size: int, max_extent: int | None = None) -> None:
    if max_rank < 1:
        raise InvalidArgument(f"max_rank must be >= 1, found {max_rank}")
    if max_size < 1:
        raise InvalidArgument(f"max_size must be >= 1, found {max_size}")
    if max_extent is not None and max_extent < 1:
        raise InvalidArgument(f"max_extent must be >= 1, found {max_extent}")


def fixed_shape(shape: Sequence[int] | None, what: str, pow2: bool = False) -> tuple[int, ...] | None:
    if shape is None:
        return None
    fixed = check_shape(shape, what)
    if pow2 and not all(is_pow2(e) for e in fixed):
        raise InvalidArgument(f"{what} must have power-of-two extents here, found {fixed}")
    return fixed


# ---- digits ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Digit:
    """An expression over the placeholders taking every value of ``[0, radix)``."""

    expr: Expr
    radix: int


def unravel(shape: Sequence[int]) -> Layout:
    """``flat -> coordinate`` over ``shape`` (row-major), as a layout of rank 1."""
    f = placeholder(0, math.prod(shape))
    strides = [math.prod(shape[d + 1 :]) for d in range(len(shape))]
    return Layout.from_exprs([math.prod(shape)], tuple(f // s % e for s, e in zip(strides, shape)))


@st.composite
def _radices(draw: st.DrawFn, extent: int) -> list[int]:
    """A mixed-radix factorisation of ``extent`` (lowest digit first, every radix >= 2)."""
    out: list[int] = []
    rest = extent
    while rest > 1:
        inner = [d for d in divisors(rest) if 1 < d < rest]
        if not inner or not draw(st.booleans()):
            out.append(rest)
            break
        r = draw(st.sampled_from(inner))
        out.append(r)
        rest //= r
    return out


@st.composite
def _digits(draw: st.DrawFn, shape: tuple[int, ...]) -> list[_Digit]:
    digits = []
    for d, e in enumerate(shape):
        v = placeholder(d, e)
        lower = 1
        for r in draw(_radices(e)):
            digits.append(_Digit(v // lower % r, r))
            lower *= r
    return digits


def _bit_count(radix: int) -> int:
    return max(1, (radix - 1).bit_length())


@dataclass(frozen=True)
class Recipe:
    """What a layout strategy may use.

    ``digit_ops``: digit transforms among ``"flip"``, ``"xor"``, ``"add"``; ``general_add``:
    ``(a + c * b) % radix`` instead of the bit xor ``(a + b) % 2``; ``f2``: power-of-two shapes and
    F2-linear outputs (terms combined with ``^``); ``exact``: a bijection (else 1-2 damaging edits);
    ``transforms``: layout-level transforms (see :data:`TRANSFORMS`)."""

    digit_ops: tuple[str, ...]
    general_add: bool
    f2: bool
    exact: bool
    transforms: tuple[str, ...]

    def bijective(self) -> Recipe:
        return Recipe(self.digit_ops, self.general_add, self.f2, True, self.transforms)


@st.composite
def _transform_digits(draw: st.DrawFn, digits: list[_Digit], ops: tuple[str, ...], general_add: bool) -> list[_Digit]:
    """Apply 0-3 invertible digit transforms (each keeps the digit vector a bijection of itself):
    a flip ``radix - 1 - d``, a swizzle ``d ^ (e // 2**t % radix)`` of a power-of-two digit, or a
    modular add ``(d + c * e) % radix`` (``c = 1`` and ``radix = 2`` unless ``general_add``)."""
    digits = list(digits)
    if not ops or not digits:
        return digits
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(ops))
        if op == "flip":
            k = draw(st.integers(0, len(digits) - 1))
            digits[k] = _Digit((digits[k].radix - 1) - digits[k].expr, digits[k].radix)
            continue
        if op == "xor":
            targets = [k for k, d in enumerate(digits) if is_pow2(d.radix)]
        elif general_add:
            targets = list(range(len(digits)))
        else:
            targets = [k for k, d in enumerate(digits) if d.radix == 2]
        if len(digits) < 2 or not targets:
            continue
        k = draw(st.sampled_from(targets))
        source = digits[draw(st.sampled_from([s for s in range(len(digits)) if s != k]))]
        target = digits[k]
        if op == "xor":
            t = draw(st.integers(0, _bit_count(source.radix) - 1))
            digits[k] = _Digit(target.expr ^ (source.expr // (1 << t) % target.radix), target.radix)
        else:
            c = draw(st.integers(1, target.radix - 1)) if general_add else 1
            digits[k] = _Digit((target.expr + source.expr * c) % target.radix, target.radix)
    return digits


@st.composite
def _groups(draw: st.DrawFn, n: int) -> list[list[int]]:
    """A permutation of ``range(n)`` cut into 1..3 non-empty consecutive groups."""
    order = draw(st.permutations(range(n)))
    n_out = draw(st.integers(1, min(n, MAX_OUTPUTS)))
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), min_size=n_out - 1, max_size=n_out - 1))) if n > 1 else []
    bounds = [0, *cuts, n]
    return [list(order[a:b]) for a, b in zip(bounds, bounds[1:])]


def _mixed_radix(group: list[int], digits: list[_Digit]) -> list[tuple[int, int]]:
    """``[(digit index, place)]``: the first digit of the group is the most significant."""
    terms, place = [], 1
    for k in reversed(group):
        terms.append((k, place))
        place *= digits[k].radix
    return terms[::-1]


# ---- layout cores ------------------------------------------------------------------------------------


@st.composite
def core_recipe(draw: st.DrawFn, shape: tuple[int, ...], recipe: Recipe) -> Layout:
    """A digit layout over ``shape``: split, transform, permute and group digits into outputs."""
    ops = recipe.digit_ops
    if not all(is_pow2(e) for e in shape):
        ops = tuple(op for op in ops if op != "xor")  # XOR swizzles live on power-of-two shapes
    digits = draw(_transform_digits(draw(_digits(shape)), ops, recipe.general_add))
    if not digits:
        return Layout.from_exprs(shape, (Const(0),))
    outputs = [_mixed_radix(g, digits) for g in draw(_groups(len(digits)))]
    consts = [0] * len(outputs)
    wraps: list[tuple[str, int] | None] = [None] * len(outputs)
    if not recipe.exact:
        for _ in range(draw(st.integers(1, 2))):
            _damage(draw, outputs, consts, wraps, len(digits), recipe.f2)
    exprs = []
    for terms, const, wrap in zip(outputs, consts, wraps):
        e: Expr = Const(0)
        for k, place in terms:
            e = (e ^ (digits[k].expr * place)) if recipe.f2 else e + digits[k].expr * place
        e = e + const
        if wrap is not None:
            e = e % wrap[1] if wrap[0] == "%" else e // wrap[1]
        exprs.append(e)
    return Layout.from_exprs(shape, tuple(exprs))


def _damage(
    draw: st.DrawFn,
    outputs: list[list[tuple[int, int]]],
    consts: list[int],
    wraps: list[tuple[str, int] | None],
    n_digits: int,
    f2: bool,
) -> None:
    """One edit that may break bijectivity: drop, duplicate or move a term, offset or wrap an
    output.  In ``f2`` mode every edit keeps the map linear over F2 (places stay powers of two)."""
    kinds = ("drop", "dup", "place") if f2 else ("drop", "dup", "place", "offset", "wrap")
    kind = draw(st.sampled_from(kinds))
    o = draw(st.integers(0, len(outputs) - 1))
    terms = outputs[o]
    if kind == "drop" and terms:
        del terms[draw(st.integers(0, len(terms) - 1))]
    elif kind == "dup":
        place = 1 << draw(st.integers(0, 4)) if f2 else draw(st.integers(1, 16))
        terms.append((draw(st.integers(0, n_digits - 1)), place))
    elif kind == "place" and terms:
        t = draw(st.integers(0, len(terms) - 1))
        k, place = terms[t]
        if f2:
            terms[t] = (k, 1 << max(0, place.bit_length() - 1 + draw(st.integers(-2, 2))))
        else:
            terms[t] = (k, draw(st.sampled_from([max(1, place // 2), place * 2, place * 3, place + 1])))
    elif kind == "offset":
        consts[o] += draw(st.integers(1, 3))
    elif kind == "wrap":
        wraps[o] = (draw(st.sampled_from(["%", "//"])), draw(st.integers(2, 8)))
