"""Hypothesis strategies that generate shapes, coordinates and layouts.

Every generated domain is small (at most ``max_size`` coordinates, 4096 by default) so that
properties can be checked by enumerating tables.  Layouts are built the way real ones are:

* every input dim is split into digits ``x // lower % radix`` (mixed radix, any factorisation,
  non-powers of two included), the digits are transformed and permuted, and consecutive digits are
  grouped into outputs as mixed-radix numbers (row-major, column-major and transposes are the
  special cases without splitting);
* digit transforms: XOR swizzles ``d ^ (e // 2**t % radix)`` of power-of-two digits on
  power-of-two shapes (``((j // v) ^ (i % k)) * v + j % v``), TileLang bit xors ``(a + b) % 2``,
  and for quasi-affine layouts flips ``radix - 1 - d`` and modular adds ``(d + c * e) % radix``;
  every transform keeps the digits a bijection, so bijectivity holds by construction;
* non-bijective layouts are digit layouts damaged by an edit or two (a dropped, duplicated or
  moved term, an offset, a wrap);
* layout transforms on top: ``reshape``, ``repeat``, ``expand``, ``compose`` with another
  bijection and ``linearized``.

>>> from hypothesis import given, settings
>>> from layoutkit.testing import assert_inverse_round_trip
>>> from layoutkit.testing.strategies import bijective_layouts
>>> @settings(max_examples=10, deadline=None)
... @given(bijective_layouts(pow2=True, max_size=512))
... def test_inverse(layout):
...     assert_inverse_round_trip(layout)
>>> test_inverse()
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import hypothesis.strategies as st
from hypothesis.errors import InvalidArgument

from ..algebra.layout import Layout, check_shape, placeholder
from ..algebra.nodes import Const, Expr

__all__ = [
    "MAX_SIZE",
    "shapes",
    "coordinates",
    "bijective_layouts",
    "quasi_affine_layouts",
    "xor_layouts",
    "layouts",
    "fragments",
]

MAX_SIZE = 4096
"""Default bound on the number of input coordinates of generated layouts."""

_MAX_OUTPUTS = 3


# ---- small integer helpers ---------------------------------------------------------------------


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _check_limits(max_rank: int, max_size: int, max_extent: int | None = None) -> None:
    if max_rank < 1:
        raise InvalidArgument(f"max_rank must be >= 1, found {max_rank}")
    if max_size < 1:
        raise InvalidArgument(f"max_size must be >= 1, found {max_size}")
    if max_extent is not None and max_extent < 1:
        raise InvalidArgument(f"max_extent must be >= 1, found {max_extent}")


def _fixed_shape(shape: Sequence[int] | None, what: str, pow2: bool = False) -> tuple[int, ...] | None:
    if shape is None:
        return None
    fixed = check_shape(shape, what)
    if pow2 and not all(_is_pow2(e) for e in fixed):
        raise InvalidArgument(f"{what} must have power-of-two extents here, found {fixed}")
    return fixed


# ---- shapes --------------------------------------------------------------------------------------


@st.composite
def _free_shape(
    draw: st.DrawFn, min_rank: int, max_rank: int, max_extent: int, pow2: bool, max_size: int
) -> tuple[int, ...]:
    rank = draw(st.integers(min_rank, max_rank))
    dims: list[int] = []
    budget = max_size
    for d in range(rank):
        top = max(1, min(max_extent, budget >> (rank - d - 1)))  # leave room for later dims
        pow2s = [1 << k for k in range(top.bit_length())]
        if pow2:
            e = draw(st.sampled_from(pow2s[1:] or pow2s))
        else:
            nice = [n for n in (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64) if n <= top] or [1]
            e = draw(st.one_of(st.sampled_from(nice), st.integers(1, top)))
        dims.append(e)
        budget //= e
    return tuple(dims)


@st.composite
def _shape_of_size(draw: st.DrawFn, size: int, max_rank: int, min_rank: int = 1) -> tuple[int, ...]:
    """A shape with ``prod(shape) == size`` (every factorisation, extents of 1 included)."""
    rank = draw(st.integers(min_rank, max_rank))
    dims: list[int] = []
    rest = size
    for _ in range(rank - 1):
        e = draw(st.sampled_from(_divisors(rest)))
        dims.append(e)
        rest //= e
    dims.append(rest)
    return tuple(dims)


def shapes(
    max_rank: int = 3,
    max_extent: int = 64,
    pow2: bool = False,
    *,
    min_rank: int = 1,
    max_size: int = MAX_SIZE,
    size: int | None = None,
) -> st.SearchStrategy[tuple[int, ...]]:
    """Input shapes: ``min_rank..max_rank`` positive extents, each at most ``max_extent``, with at
    most ``max_size`` coordinates in all; ``pow2=True`` gives power-of-two extents only.

    ``size=n`` gives the factorisations of exactly ``n`` coordinates instead (extents of 1
    included; ``max_extent``, ``max_size`` and ``pow2`` do not apply), e.g. to draw reshape targets.

    >>> import math
    >>> from hypothesis import given, settings
    >>> @settings(max_examples=20, deadline=None)
    ... @given(shapes(max_rank=2, max_extent=16, pow2=True), shapes(size=24))
    ... def test_shape(shape, reshaped):
    ...     assert 1 <= len(shape) <= 2 and all(e & (e - 1) == 0 and e <= 16 for e in shape)
    ...     assert math.prod(reshaped) == 24
    >>> test_shape()
    """
    _check_limits(max_rank, max_size, max_extent)
    if not 1 <= min_rank <= max_rank:
        raise InvalidArgument(f"need 1 <= min_rank <= max_rank, found min_rank={min_rank}, max_rank={max_rank}")
    if size is not None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise InvalidArgument(f"size must be a positive integer, found {size!r}")
        return _shape_of_size(size, max_rank, min_rank)
    return _free_shape(min_rank, max_rank, max_extent, pow2, max_size)


def coordinates(layout_or_shape: Layout | Sequence[int]) -> st.SearchStrategy[tuple[int, ...]]:
    """Coordinates inside a layout's input shape (or inside a shape given directly).

    >>> import layoutkit as lk
    >>> from hypothesis import given, settings
    >>> L = lk.Layout([4, 8], lambda i, j: (j, i))
    >>> @settings(max_examples=20, deadline=None)
    ... @given(coordinates(L))
    ... def test_transpose(x):
    ...     assert L.map_forward_index(x) == x[::-1]
    >>> test_transpose()
    """
    shape = layout_or_shape.input_shape if isinstance(layout_or_shape, Layout) else check_shape(layout_or_shape)
    return st.tuples(*(st.integers(0, e - 1) for e in shape))


# ---- digits ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Digit:
    """An expression over the placeholders taking every value of ``[0, radix)``."""

    expr: Expr
    radix: int


def _unravel(shape: Sequence[int]) -> Layout:
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
        inner = [d for d in _divisors(rest) if 1 < d < rest]
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
class _Recipe:
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

    def bijective(self) -> _Recipe:
        return _Recipe(self.digit_ops, self.general_add, self.f2, True, self.transforms)


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
            targets = [k for k, d in enumerate(digits) if _is_pow2(d.radix)]
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
    n_out = draw(st.integers(1, min(n, _MAX_OUTPUTS)))
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
def _core(draw: st.DrawFn, shape: tuple[int, ...], recipe: _Recipe) -> Layout:
    """A digit layout over ``shape``: split, transform, permute and group digits into outputs."""
    ops = recipe.digit_ops
    if not all(_is_pow2(e) for e in shape):
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


# ---- layout-level transforms -----------------------------------------------------------------------

TRANSFORMS = ("reshape", "repeat", "expand", "compose", "linearized")
"""Layout-level transforms the layout strategies apply (pass a subset as ``transforms=``)."""


def _check_transforms(transforms: Sequence[str]) -> tuple[str, ...]:
    if isinstance(transforms, str) or any(t not in TRANSFORMS for t in transforms):
        raise InvalidArgument(f"transforms must be a subset of {TRANSFORMS}, found {transforms!r}")
    return tuple(transforms)


@st.composite
def _onto(draw: st.DrawFn, target: tuple[int, ...], recipe: _Recipe, max_rank: int) -> Layout:
    """A bijection from a drawn shape of size ``prod(target)`` onto exactly the box ``target``."""
    core = draw(_core(draw(_shape_of_size(math.prod(target), max_rank)), recipe.bijective()))
    return _unravel(target).compose(core.linearized())


@st.composite
def _transformed(
    draw: st.DrawFn, layout: Layout, recipe: _Recipe, fixed_size: bool, max_rank: int, max_size: int, max_steps: int
) -> Layout:
    """Apply up to ``max_steps`` of reshape / repeat / expand / compose (with a bijection onto the
    input shape) / linearized; every step keeps a bijection bijective."""
    kinds = [k for k in recipe.transforms if not (fixed_size and k in ("repeat", "expand"))]
    if recipe.f2 and not recipe.exact and "linearized" in kinds:
        kinds.remove("linearized")  # the bounding box of a non-bijective F2 map need not be a power of two
    if not kinds:
        return layout
    for _ in range(draw(st.integers(0, max_steps))):
        kind = draw(st.sampled_from(kinds))
        room = max_size // layout.size
        rank = len(layout.input_shape)
        if kind == "reshape":
            layout = layout.reshape(draw(_shape_of_size(layout.size, max_rank)))
        elif kind == "compose":
            layout = layout.compose(draw(_onto(layout.input_shape, recipe, max_rank)))
        elif kind == "linearized":
            layout = layout.linearized()
        elif kind == "repeat" and room >= 2:
            if recipe.f2:
                f = 1 << draw(st.integers(1, room.bit_length() - 1))
            else:
                f = draw(st.integers(2, min(room, 8)))
            layout = layout.repeat(draw(st.integers(0, rank - 1)), f)
        elif kind == "expand" and room >= 2 and rank < max_rank:
            layout = layout.expand(draw(_free_shape(1, max_rank - rank, 8, recipe.f2, room)))
    return layout


@st.composite
def _layout(
    draw: st.DrawFn,
    recipe: _Recipe,
    shape: tuple[int, ...] | None,
    onto: tuple[int, ...] | None,
    max_rank: int,
    max_extent: int,
    max_size: int,
    max_steps: int,
) -> Layout:
    if shape is not None:
        start = shape
    elif onto is not None:
        start = draw(_shape_of_size(math.prod(onto), max_rank))
    else:
        pow2 = recipe.f2 or ("xor" in recipe.digit_ops and draw(st.booleans()))  # room for swizzles
        start = draw(_free_shape(1, max_rank, max_extent, pow2, max_size))
    layout = draw(_core(start, recipe))
    fixed = shape is not None or onto is not None
    layout = draw(_transformed(layout, recipe, fixed, max_rank, max_size, max_steps))
    if onto is not None:
        layout = _unravel(onto).compose(layout.linearized())
    if shape is not None and layout.input_shape != shape:
        layout = layout.reshape(shape)
    return layout


# ---- public layout strategies -----------------------------------------------------------------------


def bijective_layouts(
    shape: Sequence[int] | None = None,
    *,
    onto: Sequence[int] | None = None,
    max_rank: int = 3,
    max_extent: int = 64,
    max_size: int = MAX_SIZE,
    pow2: bool = False,
    swizzles: bool = True,
    flips: bool = False,
    transforms: Sequence[str] = TRANSFORMS,
    max_steps: int = 2,
) -> st.SearchStrategy[Layout]:
    """Layouts that are bijections onto their output box, by construction.

    Transposes, row/column-major flattenings and digit permutations (any mixed radix); with
    ``swizzles`` also XOR swizzles on power-of-two shapes and TileLang bit xors ``(a + b) % 2``;
    then up to ``max_steps`` of ``transforms`` (reshape / repeat / expand / compose /
    linearized).

    * ``shape``: fix the input shape (otherwise drawn: at most ``max_rank`` dims of at most
      ``max_extent``, at most ``max_size`` coordinates);
    * ``onto``: fix the output box instead (compose the result into a layout whose input shape
      is ``onto``);
    * ``pow2``: power-of-two shapes only; every layout is then F2-linear;
    * ``flips=True``: also reverse digits (``radix - 1 - d``).

    >>> import layoutkit as lk
    >>> from hypothesis import given, settings
    >>> outer = lk.Layout([8, 8], lambda i, j: (i, j ^ i))
    >>> @settings(max_examples=10, deadline=None)
    ... @given(bijective_layouts(onto=outer.input_shape))
    ... def test_compose(inner):
    ...     assert outer.compose(inner).is_bijective()
    >>> test_compose()
    """
    _check_limits(max_rank, max_size, max_extent)
    fixed = _fixed_shape(shape, "bijective_layouts shape", pow2)
    box = _fixed_shape(onto, "bijective_layouts onto", pow2)
    if fixed is not None and box is not None and math.prod(fixed) != math.prod(box):
        raise InvalidArgument(f"a bijection from {fixed} onto {box} needs equal sizes")
    ops = (("xor", "add") if swizzles else ()) + (("flip",) if flips and not pow2 else ())
    recipe = _Recipe(ops, False, pow2, True, _check_transforms(transforms))
    return _layout(recipe, fixed, box, max_rank, max_extent, max_size, max_steps)


def quasi_affine_layouts(
    shape: Sequence[int] | None = None,
    *,
    bijective: bool | None = None,
    max_rank: int = 3,
    max_extent: int = 64,
    max_size: int = MAX_SIZE,
    transforms: Sequence[str] = TRANSFORMS,
    max_steps: int = 2,
) -> st.SearchStrategy[Layout]:
    """Quasi-affine layouts (``+``, constant ``*``, ``//``, ``%``; no bitwise operators).

    Digit layouts with flips and modular adds ``(a + c * b) % radix``; unless ``bijective=True``,
    about half of them damaged by one or two edits: a dropped or duplicated term (collisions), a
    moved place or an offset (padding: unreachable outputs), a wrapping ``% m`` or ``// m``.
    ``bijective=None`` mixes both kinds.  Outputs are never negative.

    >>> from hypothesis import given, settings
    >>> @settings(max_examples=10, deadline=None)
    ... @given(quasi_affine_layouts(max_size=256))
    ... def test_methods_agree(layout):
    ...     assert layout.prove_bijective("isl").verdict == layout.prove_bijective("enumerate").verdict
    >>> test_methods_agree()
    """
    _check_limits(max_rank, max_size, max_extent)
    fixed = _fixed_shape(shape, "quasi_affine_layouts shape")
    steps = _check_transforms(transforms)
    exact = st.booleans() if bijective is None else st.just(bool(bijective))
    return exact.flatmap(
        lambda e: _layout(
            _Recipe(("flip", "add"), True, False, e, steps), fixed, None, max_rank, max_extent, max_size, max_steps
        )
    )


def xor_layouts(
    shape: Sequence[int] | None = None,
    *,
    bijective: bool | None = None,
    max_rank: int = 3,
    max_extent: int = 64,
    max_size: int = MAX_SIZE,
    transforms: Sequence[str] = TRANSFORMS,
    max_steps: int = 2,
) -> st.SearchStrategy[Layout]:
    """F2-linear layouts over power-of-two shapes: bit permutations, XOR swizzles
    ``((j // v) ^ (i % k)) * v + j % v``, ``(a + b) % 2`` bit xors and, unless ``bijective=True``,
    damaged ones whose outputs xor digits at overlapping places (``bijective=None`` mixes both).
    Every result has ``to_linear() is not None``.

    >>> import layoutkit as lk
    >>> from hypothesis import given, settings
    >>> @settings(max_examples=10, deadline=None)
    ... @given(xor_layouts(max_size=256))
    ... def test_f2_round_trip(layout):
    ...     assert lk.Layout.from_linear(layout.to_linear()).is_equal(layout)
    >>> test_f2_round_trip()
    """
    _check_limits(max_rank, max_size, max_extent)
    fixed = _fixed_shape(shape, "xor_layouts shape", pow2=True)
    steps = _check_transforms(transforms)
    exact = st.booleans() if bijective is None else st.just(bool(bijective))
    return exact.flatmap(
        lambda e: _layout(
            _Recipe(("xor", "add"), False, True, e, steps), fixed, None, max_rank, max_extent, max_size, max_steps
        )
    )


def layouts(
    shape: Sequence[int] | None = None, *, max_rank: int = 3, max_size: int = MAX_SIZE
) -> st.SearchStrategy[Layout]:
    """Any layout from :func:`bijective_layouts`, :func:`quasi_affine_layouts` or :func:`xor_layouts`.

    >>> import numpy as np
    >>> from hypothesis import given, settings
    >>> @settings(max_examples=10, deadline=None)
    ... @given(layouts(max_size=256))
    ... def test_linearized(layout):
    ...     flat = np.ravel_multi_index(tuple(np.moveaxis(layout.table(), -1, 0)), layout.output_shape)
    ...     assert (layout.linearized().table()[..., 0] == flat).all()
    >>> test_linearized()
    """
    _check_limits(max_rank, max_size)
    pow2 = shape is None or all(_is_pow2(e) for e in check_shape(shape))
    options = [
        bijective_layouts(shape, max_rank=max_rank, max_size=max_size),
        quasi_affine_layouts(shape, max_rank=max_rank, max_size=max_size),
    ]
    if pow2:
        options.append(xor_layouts(shape, max_rank=max_rank, max_size=max_size))
    return st.one_of(options)


@st.composite
def fragments(
    draw: st.DrawFn,
    replicate: int | None = None,
    *,
    max_rank: int = 2,
    max_size: int = 256,
    injective: bool | None = None,
):
    """Fragments: a bijective layout ``p`` of the tile split into ``(thread, index) =
    (p // local, p % local)`` (injective by construction), replicated over ``_rep`` with a
    thread stride (sometimes skipping a replica digit, so ``condense_rep_var`` has work), and —
    unless ``injective=True`` — sometimes with threads folded so that slots collide.

    >>> from hypothesis import given, settings
    >>> @settings(max_examples=10, deadline=None)
    ... @given(fragments(replicate=1, injective=True))
    ... def test_injective(frag):
    ...     assert frag.prove_injective()
    >>> test_injective()
    """
    from ..fragment import Fragment

    shape = draw(shapes(max_rank=max_rank, max_extent=32, max_size=max_size))
    perm = draw(bijective_layouts(shape=shape, max_steps=1)).linearized()
    p = perm.forward_index[0]
    size = math.prod(shape)
    local = draw(st.sampled_from(_divisors(size)))
    index, thread = p % local, p // local
    threads = size // local
    if injective is False or (injective is None and draw(st.booleans())):
        fold = draw(st.sampled_from(_divisors(threads)))
        thread = thread % fold
        threads = fold
    r = replicate if replicate is not None else draw(st.sampled_from([1, 1, 2, 4]))
    if r > 1:
        from ..fragment import rep_var

        rep = rep_var(r)
        gap = draw(st.sampled_from([1, 2])) if r % 2 == 0 else 1
        thread = thread + (rep // gap) * threads
    return Fragment.from_exprs(shape, (index,), thread, r)
