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

import hypothesis.strategies as st
from hypothesis.errors import InvalidArgument

from ..algebra.layout import Layout
from ..algebra.shapes import check_shape
from .digits import Recipe, check_limits, core_recipe, divisors, fixed_shape, is_pow2, unravel

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
        e = draw(st.sampled_from(divisors(rest)))
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
    check_limits(max_rank, max_size, max_extent)
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


# ---- layout-level transforms -----------------------------------------------------------------------

TRANSFORMS = ("reshape", "repeat", "expand", "compose", "linearized")
"""Layout-level transforms the layout strategies apply (pass a subset as ``transforms=``)."""


def _check_transforms(transforms: Sequence[str]) -> tuple[str, ...]:
    if isinstance(transforms, str) or any(t not in TRANSFORMS for t in transforms):
        raise InvalidArgument(f"transforms must be a subset of {TRANSFORMS}, found {transforms!r}")
    return tuple(transforms)


@st.composite
def _onto(draw: st.DrawFn, target: tuple[int, ...], recipe: Recipe, max_rank: int) -> Layout:
    """A bijection from a drawn shape of size ``prod(target)`` onto exactly the box ``target``."""
    core = draw(core_recipe(draw(_shape_of_size(math.prod(target), max_rank)), recipe.bijective()))
    return unravel(target).compose(core.linearized())


@st.composite
def _transformed(
    draw: st.DrawFn, layout: Layout, recipe: Recipe, fixed_size: bool, max_rank: int, max_size: int, max_steps: int
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
    recipe: Recipe,
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
    layout = draw(core_recipe(start, recipe))
    fixed = shape is not None or onto is not None
    layout = draw(_transformed(layout, recipe, fixed, max_rank, max_size, max_steps))
    if onto is not None:
        layout = unravel(onto).compose(layout.linearized())
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
    check_limits(max_rank, max_size, max_extent)
    fixed = fixed_shape(shape, "bijective_layouts shape", pow2)
    box = fixed_shape(onto, "bijective_layouts onto", pow2)
    if fixed is not None and box is not None and math.prod(fixed) != math.prod(box):
        raise InvalidArgument(f"a bijection from {fixed} onto {box} needs equal sizes")
    ops = (("xor", "add") if swizzles else ()) + (("flip",) if flips and not pow2 else ())
    recipe = Recipe(ops, False, pow2, True, _check_transforms(transforms))
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
    check_limits(max_rank, max_size, max_extent)
    fixed = fixed_shape(shape, "quasi_affine_layouts shape")
    steps = _check_transforms(transforms)
    exact = st.booleans() if bijective is None else st.just(bool(bijective))
    return exact.flatmap(
        lambda e: _layout(
            Recipe(("flip", "add"), True, False, e, steps), fixed, None, max_rank, max_extent, max_size, max_steps
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
    Every result has an F2 view: ``to_linear()`` returns it (it raises NotLinearError on other layouts).

    >>> import layoutkit as lk
    >>> from hypothesis import given, settings
    >>> @settings(max_examples=10, deadline=None)
    ... @given(xor_layouts(max_size=256))
    ... def test_f2_round_trip(layout):
    ...     assert lk.Layout.from_linear(layout.to_linear()).is_equal(layout)
    >>> test_f2_round_trip()
    """
    check_limits(max_rank, max_size, max_extent)
    fixed = fixed_shape(shape, "xor_layouts shape", pow2=True)
    steps = _check_transforms(transforms)
    exact = st.booleans() if bijective is None else st.just(bool(bijective))
    return exact.flatmap(
        lambda e: _layout(
            Recipe(("xor", "add"), False, True, e, steps), fixed, None, max_rank, max_extent, max_size, max_steps
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
    check_limits(max_rank, max_size)
    pow2 = shape is None or all(is_pow2(e) for e in check_shape(shape))
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
    local = draw(st.sampled_from(divisors(size)))
    index, thread = p % local, p // local
    threads = size // local
    if injective is False or (injective is None and draw(st.booleans())):
        fold = draw(st.sampled_from(divisors(threads)))
        thread = thread % fold
        threads = fold
    r = replicate if replicate is not None else draw(st.sampled_from([1, 1, 2, 4]))
    if r > 1:
        from ..fragment import rep_var

        rep = rep_var(r)
        gap = draw(st.sampled_from([1, 2])) if r % 2 == 0 else 1
        thread = thread + (rep // gap) * threads
    return Fragment.from_exprs(shape, (index,), thread, r)
