"""Hostile arguments to the TLA / CuTe layer: every outcome is a result or a LayoutError, and results on
valid inputs agree with a small reference evaluation or with the algebra's laws."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit import tla

from .hostile import HOSTILE_SCALARS, HUGE_INTS, attempt, deep

# ---- strategies -------------------------------------------------------------------------------------

_LEAVES = st.one_of(st.integers(1, 6), st.integers(-2, 0), HUGE_INTS, HOSTILE_SCALARS,
                    st.integers(1, 6).map(tla.Int))
HOSTILE_TUPLES = st.one_of(
    _LEAVES,
    st.recursive(_LEAVES, lambda inner: st.one_of(st.lists(inner, max_size=4), st.lists(inner, max_size=4).map(tuple)),
                 max_leaves=8),
    st.sampled_from([deep(40, 2), deep(200, 2), (deep(100, 4), 2), [(), 2], ((), ()), [[1, 2], [3]],
                     (2**62, 2**62), (2**40, (2**40, 2**40))]),
)
"""Shapes, strides and coordinates of every wrong kind: non-integer leaves, zero, negative and huge extents,
ragged and empty modes, lists, nesting deeper than any real layout (past the interpreter's stack in
:func:`test_nesting_past_the_stack`: hypothesis cannot print such an example)."""


@st.composite
def small_shapes(draw, max_leaves: int = 4, max_depth: int = 2) -> object:
    """A valid nested shape with at most ``max_leaves`` leaves of extent 1..5."""
    budget = [draw(st.integers(1, max_leaves))]

    def mode(level: int) -> object:
        if level < max_depth and budget[0] > 1 and draw(st.booleans()):
            parts = []
            for _ in range(draw(st.integers(1, min(3, budget[0])))):
                if budget[0] <= 0:
                    break
                parts.append(mode(level + 1))
            return tuple(parts)
        budget[0] -= 1
        return draw(st.integers(1, 5))

    top = [mode(1) for _ in range(draw(st.integers(1, 3)))]
    return tuple(top) if len(top) > 1 or draw(st.booleans()) else top[0]


def _like(shape: object, leaf) -> object:
    if isinstance(shape, tuple):
        return tuple(_like(s, leaf) for s in shape)
    return leaf(shape)


@st.composite
def small_layouts(draw, injective: bool = False) -> tla.Layout:
    """A valid layout: a small nested shape with strides in -3..12 (compact and permuted-compact ones
    among them when ``injective``)."""
    shape = draw(small_shapes())
    flat = tla.flatten(shape) if isinstance(shape, tuple) else (shape,)
    if injective:
        order = draw(st.permutations(range(len(flat))))
        strides, cur = [0] * len(flat), 1
        for k in order:
            cur *= draw(st.sampled_from([1, 1, 2]))
            strides[k] = cur
            cur *= flat[k]
    else:
        strides = [draw(st.integers(-3, 12)) for _ in flat]
    it = iter(strides)
    stride = _like(shape, lambda _s: next(it))
    if draw(st.booleans()):
        shape, stride = tla.make_static(shape), tla.make_static(stride)
    return tla.make_layout(shape, stride)


# ---- reference evaluation ---------------------------------------------------------------------------


def ref_offsets(layout: tla.Layout) -> list[int]:
    """``layout(i)`` for every colexicographic ``i``, digit by digit over the flattened modes."""
    shapes = [int(s) for s in tla.flatten(layout.shape)] if isinstance(layout.shape, tuple) else [int(layout.shape)]
    strides = [int(d) for d in tla.flatten(layout.stride)] if isinstance(layout.stride, tuple) else \
        [int(layout.stride)]
    out = []
    for i in range(math.prod(shapes)):
        total = 0
        for s, d in zip(shapes, strides):
            total += (i % s) * d
            i //= s
        out.append(total)
    return out


def _table(layout) -> list[int]:
    return [int(v) for v in layout.table()]


# ---- hostile constructors and coordinates ----------------------------------------------------------------


def _exercise(layout) -> None:
    for call in (lambda: str(layout), lambda: repr(layout), lambda: layout.size, lambda: layout.cosize,
                 lambda: layout.rank, lambda: layout.depth, lambda: layout.origin_shape, lambda: hash(layout),
                 lambda: layout.table(), lambda: layout.offset_table(), lambda: layout.to_layout(),
                 lambda: layout(0), lambda: layout[0]):
        attempt(call)


@given(HOSTILE_TUPLES, st.one_of(st.none(), HOSTILE_TUPLES), st.one_of(st.none(), HOSTILE_TUPLES))
def test_make_layout_from_hostile_arguments(shape, stride, origin):
    for build in (lambda: tla.make_layout(shape), lambda: tla.make_layout(shape, stride),
                  lambda: tla.make_layout(shape, stride, origin), lambda: tla.Layout(shape, stride, origin),
                  lambda: tla.make_layout(shape, stride, origin_shape=origin)):
        layout = attempt(build)
        if layout is not None:
            _exercise(layout)


@given(HOSTILE_TUPLES, HOSTILE_TUPLES, st.one_of(st.none(), HOSTILE_TUPLES))
def test_coordinate_functions_on_hostile_arguments(coord, shape, stride):
    for call in (lambda: tla.crd2idx(coord, shape), lambda: tla.crd2idx(coord, shape, stride),
                 lambda: tla.crd2offset(coord, shape, stride), lambda: tla.idx2crd(coord, shape),
                 lambda: tla.idx2crd(coord, shape, stride), lambda: tla.crd2crd(coord, shape, stride),
                 lambda: tla.make_coord(coord), lambda: tla.make_shape(shape), lambda: tla.make_stride(stride),
                 lambda: tla.crd2idx(np.arange(6), shape, stride), lambda: tla.idx2crd(np.arange(6), shape, stride)):
        attempt(call)


@given(HOSTILE_TUPLES, HOSTILE_TUPLES)
def test_int_tuple_functions_on_hostile_arguments(a, b):
    for fn in (tla.rank, tla.depth, tla.product, tla.product_each, tla.size, tla.flatten, tla.to_str,
               tla.compact_col_major, tla.compact_row_major, tla.make_static, tla.make_dynamic, tla.is_static,
               tla.coalesce_shape):
        attempt(lambda fn=fn: fn(a))
    for fn2 in (tla.ceil_div, tla.round_up, tla.inner_product, tla.congruent, tla.weakly_congruent,
                tla.compatible, tla.unflatten, tla.get):
        attempt(lambda fn2=fn2: fn2(a, b))


@given(small_layouts(), st.one_of(HOSTILE_TUPLES, st.lists(st.integers(0, 200), max_size=3)))
def test_hostile_coordinates_into_valid_layouts(layout, coord):
    value = attempt(lambda: layout(coord))
    try:
        array = np.asarray(coord)
    except ValueError:  # ragged or too deep for numpy
        array = None
    attempt(lambda: layout(array))
    if value is not None and type(coord) is int:
        shapes = tla.flatten(layout.shape) if isinstance(layout.shape, tuple) else (layout.shape,)
        strides = tla.flatten(layout.stride) if isinstance(layout.stride, tuple) else (layout.stride,)
        i, want = coord, 0
        for k, (s, d) in enumerate(zip(shapes, strides)):
            digit = i if k == len(shapes) - 1 else i % s  # the last mode is unbounded (C++)
            want += digit * d
            i //= s
        assert value == want, (layout, coord, value, want)


@given(st.data(), st.sampled_from(["composition", "complement", "coalesce", "filter", "right_inverse",
                                   "left_inverse", "nullspace", "max_common_vector", "logical_divide",
                                   "zipped_divide", "tiled_divide", "flat_divide", "logical_product",
                                   "zipped_product", "tiled_product", "flat_product", "blocked_product",
                                   "raked_product", "get_tile_layout", "make_composed_layout"]))
def test_algebra_on_hostile_arguments(data, op):
    operand = st.one_of(small_layouts(), HOSTILE_TUPLES, st.builds(tla.Swizzle, st.integers(0, 3), st.integers(0, 3),
                                                                    st.integers(3, 4)))
    a, b = data.draw(operand), data.draw(st.one_of(operand, st.none(), st.tuples(operand, operand)))
    fn = getattr(tla, op)
    result = attempt(lambda: fn(a) if op in ("right_inverse", "left_inverse", "nullspace") else
                     fn(a, 0, b) if op == "make_composed_layout" else fn(a, b, b) if op == "get_tile_layout" else
                     fn(a, b))
    if result is not None and hasattr(result, "table"):
        attempt(lambda: result.table())
        attempt(lambda: str(result))


@given(st.one_of(HOSTILE_SCALARS, st.integers(-4, 40)), st.one_of(HOSTILE_SCALARS, st.integers(-4, 40)),
       st.one_of(HOSTILE_SCALARS, st.integers(-40, 40)),
       st.one_of(HOSTILE_SCALARS, st.integers(0, 4096), st.lists(st.integers(-1, 9)).map(np.asarray)))
def test_swizzle_arguments(bits, base, shift, offset):
    sw = attempt(lambda: tla.Swizzle(bits, base, shift))
    if sw is None:
        return
    value = attempt(lambda: sw(offset))
    if value is not None and type(offset) is int:
        want = offset ^ (((offset & sw.yyy_mask) >> sw.shift) if sw.shift >= 0 else
                         ((offset & sw.yyy_mask) << -sw.shift))
        assert value == want and sw(value) == offset
    attempt(lambda: sw.size)
    attempt(lambda: tla.composition(sw, tla.make_layout(offset)))


@given(st.one_of(st.sampled_from(list(tla.TAGS) + ["zn", "row_major", "L0c"]), HOSTILE_SCALARS),
       st.one_of(st.sampled_from(["float16", "float32", "int8", "bfloat16"]), HOSTILE_SCALARS),
       st.one_of(st.integers(1, 70), HOSTILE_SCALARS), st.one_of(st.integers(1, 70), HOSTILE_SCALARS))
def test_make_layout_from_tag_arguments(tag, dtype, rows, cols):
    layout = attempt(lambda: tla.make_layout_from_tag(tag, dtype, rows, cols))
    if layout is None or math.prod(layout.origin_shape) > 2**16:
        return
    name = tla.layout_tags(layout, dtype)
    offsets = layout.offset_table()
    assert offsets.shape == layout.origin_shape
    assert len(np.unique(offsets)) == offsets.size, (tag, layout)  # every tag layout is injective on its data
    assert np.array_equal(layout.to_layout().table()[..., 0], offsets)
    assert name, (tag, dtype, rows, cols, layout)


# ---- results on valid inputs ------------------------------------------------------------------------------


@given(small_layouts())
def test_evaluation_matches_the_reference(layout):
    want = ref_offsets(layout)
    assert _table(layout) == want
    assert [layout(i) for i in range(layout.size)] == want
    shape = layout.shape
    for i in range(layout.size):
        crd = tla.idx2crd(i, shape)
        assert tla.crd2idx(crd, shape) == i
        assert tla.crd2offset(crd, shape, layout.stride) == want[i]
    assert np.array_equal(layout.to_layout().table()[..., 0], layout.offset_table())
    assert _table(tla.coalesce(layout)) == want
    assert sorted(set(_table(tla.filter(layout)))) == sorted(set(want))


@given(small_layouts(), small_layouts(injective=True))
def test_composition_law(a, b):
    r = attempt(lambda: tla.composition(a, b))
    if r is not None:
        want = [a(int(j)) for j in b.table()]
        assert _table(r) == want, (a, b, r)


@given(small_layouts(injective=True), st.integers(1, 200))
def test_complement_law(a, cotarget):
    c = attempt(lambda: tla.complement(a, cotarget))
    if c is None:
        return
    both = tla.make_layout(a, c)
    image = sorted(_table(both))
    assert image == list(range(both.size)), (a, cotarget, c)
    assert both.size >= cotarget or both.size >= a.size


@given(small_layouts())
def test_inverse_laws(layout):
    r = attempt(lambda: tla.right_inverse(layout))
    if r is not None:
        assert [layout(int(r(i))) for i in range(r.size)] == list(range(r.size)), (layout, r)
    left = attempt(lambda: tla.left_inverse(layout))
    if left is not None:
        table = _table(layout)
        assert [table[left(v)] for v in table] == table, (layout, left)
        if len(set(table)) == len(table):
            assert [left(v) for v in table] == list(range(layout.size))


@given(small_layouts(), small_layouts(injective=True))
def test_divide_and_product_laws(a, b):
    divided = attempt(lambda: tla.logical_divide(a, b))
    if divided is not None:
        c = tla.complement(b, a.size)
        assert _table(divided) == [a(int(j)) for j in tla.make_layout(b, c).table()]
        for variant in (tla.zipped_divide, tla.tiled_divide, tla.flat_divide):
            assert sorted(_table(variant(a, b))) == sorted(_table(divided)), variant
    product = attempt(lambda: tla.logical_product(a, b))
    if product is not None:
        assert _table(product)[: a.size] == _table(a)
        rest = tla.composition(tla.complement(a, a.size * b.cosize), b)
        assert _table(product) == _table(tla.make_layout(a, rest))
        for variant in (tla.zipped_product, tla.tiled_product, tla.flat_product):
            assert sorted(_table(variant(a, b))) == sorted(_table(product)), variant


def test_nesting_past_the_stack():
    """Arguments nested past the interpreter's recursion limit: a LimitError, not a RecursionError."""
    too_deep: object = 2
    for _ in range(5000):
        too_deep = (too_deep,)
    for call in (lambda: tla.make_layout(too_deep), lambda: tla.make_layout((4,), too_deep),
                 lambda: tla.crd2idx(too_deep, (4,)), lambda: tla.make_layout(4)(too_deep),
                 lambda: tla.flatten(too_deep),
                 lambda: tla.depth(too_deep), lambda: tla.product(too_deep), lambda: tla.to_str(too_deep),
                 lambda: tla.congruent(too_deep, too_deep), lambda: tla.compact_col_major(too_deep),
                 lambda: tla.coalesce(tla.make_layout((4, 4)), (too_deep,)), lambda: tla.ceil_div(too_deep, 2)):
        with pytest.raises(lk.LimitError):
            call()
