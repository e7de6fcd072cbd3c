"""Hostile arguments to Layout and its methods: every outcome is a result or a LayoutError."""

from __future__ import annotations

import operator

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import layoutkit as lk

from .hostile import HOSTILE_SCALARS, HUGE_INTS, attempt

SMALL_SHAPES = st.lists(st.integers(1, 6), min_size=1, max_size=3)
SHAPES = st.one_of(SMALL_SHAPES, st.lists(st.one_of(HOSTILE_SCALARS, st.integers(1, 4)), max_size=3), HOSTILE_SCALARS)

# each step combines the running expression with a placeholder or a constant; the hostile ones leave
# the integer expression language (floats, comparisons, abs, powers, shifts by variables, user errors)
_BINARY = [operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod, operator.xor, operator.and_,
           operator.or_, operator.lshift, operator.rshift, operator.truediv, operator.pow, operator.lt, operator.ge,
           min, max, divmod]
_UNARY = [operator.neg, operator.pos, operator.invert, abs, round, float, int, bool, str, hash, lambda x: None,
          lambda x: (x, (x,)), lambda x: 1 // 0, lambda x: [][0], lambda x: x.no_such_attribute]


@st.composite
def index_fns(draw):
    steps = draw(st.lists(st.tuples(st.booleans(), st.integers(0, 16), st.integers(0, 2), st.one_of(
        st.integers(-3, 70), HUGE_INTS, HOSTILE_SCALARS)), max_size=5))
    n_out = draw(st.integers(0, 3))

    def fn(*xs):
        e = xs[0]
        for unary, k, arg, const in steps:
            if unary:
                e = _UNARY[k % len(_UNARY)](e)
            else:
                other = xs[arg % len(xs)] if arg < 2 else const
                e = _BINARY[k % len(_BINARY)](e, other)
        return e if n_out == 0 else tuple([e] + list(xs[1:n_out]))
    return fn


def _calls(layout: lk.Layout, draw_value) -> None:
    for method in (lambda: layout.table(), lambda: layout.output_shape, lambda: layout.prove_bijective(),
                   lambda: layout.inverse(), lambda: str(layout), lambda: layout.to_linear(),
                   lambda: layout.map_forward_index(draw_value()), lambda: layout.apply(draw_value()),
                   lambda: layout.map_region_bounds(draw_value()), lambda: layout.repeat(draw_value(), draw_value()),
                   lambda: layout.reshape(draw_value()), lambda: layout.expand(draw_value()),
                   lambda: layout.compose(layout), lambda: layout.linearized()):
        attempt(method)


COORDS = st.one_of(HOSTILE_SCALARS, st.lists(st.one_of(HOSTILE_SCALARS, st.integers(0, 5)), max_size=3),
                   st.lists(st.lists(st.integers(-1, 5), max_size=3), max_size=3),
                   st.lists(st.one_of(st.tuples(st.integers(-1, 6), st.integers(-1, 6)), st.builds(
                       slice, st.one_of(st.none(), st.integers(-1, 6)), st.one_of(st.none(), st.integers(-1, 6)))),
                       max_size=3))


@given(SHAPES, index_fns(), st.data())
def test_layouts_from_hostile_functions(shape, fn, data):
    layout = attempt(lambda: lk.Layout(shape, fn))
    if layout is not None:
        _calls(layout, lambda: data.draw(COORDS))


@given(st.lists(st.one_of(HOSTILE_SCALARS, st.integers(0, 9)), max_size=4), SMALL_SHAPES)
def test_layouts_from_hostile_expression_lists(exprs, shape):
    attempt(lambda: lk.Layout(shape, exprs).table())


@given(st.one_of(st.text(max_size=30), st.sampled_from([
    "lambda i: i << 100000000", "lambda i, i: i", "lambda i: " + " + ".join(["i"] * 5000), "lambda i: -" * 3,
    "lambda *a: a", "lambda i=1: i", "lambda i: i if i else 0", "lambda i: [i for i in x]", "lambda: 0",
    "lambda i: (i, (i,))", "lambda i: i / 2", "lambda i: abs(i)", "lambda i: 1 << i", "lambda i: ~i"])),
       SMALL_SHAPES)
def test_parsed_index_functions(text, shape):
    attempt(lambda: lk.Layout(shape, lk.parse_index_fn(text)).table())


def test_numpy_scalars_are_still_accepted():
    assert lk.Layout([np.int64(4)], lambda i: i + np.int32(1)).output_shape == (5,)


TABLES = st.one_of(
    HOSTILE_SCALARS,
    st.lists(st.one_of(st.integers(-3, 40), HUGE_INTS, HOSTILE_SCALARS), max_size=6),
    st.lists(st.lists(st.integers(-2, 12), min_size=0, max_size=3), max_size=4),
    st.builds(lambda n, seed: np.random.default_rng(seed).permutation(n), st.integers(1, 64), st.integers(0, 9)),
)


@given(TABLES, st.data())
def test_layouts_from_hostile_tables(table, data):
    layout = attempt(lambda: lk.Layout.from_table(table))
    if layout is not None:
        _calls(layout, lambda: data.draw(COORDS))
        inv = attempt(layout.inverse)
        if inv is not None:
            attempt(lambda: inv.apply(data.draw(COORDS)))
