"""Bounded work and exact inverses under hostile inputs: xor maps, bijections with no closed-form inverse,
wrong-shaped tables and garbage handed to the public constructors.  Every outcome is a result or a
LayoutError; every proof answers or refuses within its budget; a bijection always inverts exactly."""

from __future__ import annotations

import inspect

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit import infer, tla
from layoutkit.testing import assert_inverse_round_trip

from .hostile import HOSTILE_SCALARS, attempt

_ISL_BUDGET_S = 0.1  # the fuzz profile's deadline is 5 s an example: islpy is given far less than that


@st.composite
def xor_maps(draw):
    """``i ^ (i & k)``-style maps (islpy's slow class) over extents that are and are not powers of two."""
    n = draw(st.one_of(st.integers(1, 300), st.sampled_from([4736, 1 << 12, 3 << 10])))
    k, c = draw(st.integers(0, 63)), draw(st.integers(1, 7))
    shape = draw(st.sampled_from(["i ^ (i & k)", "i ^ (i // c)", "(i ^ k) % n", "i ^ (i >> c & k)", "pair"]))
    if shape == "pair":
        m = draw(st.integers(1, 40))
        return lk.Layout([n % 40 + 1, m], lambda i, j: (i, j ^ (i & k) % m))
    fns = {"i ^ (i & k)": lambda i: i ^ (i & k), "i ^ (i // c)": lambda i: i ^ (i // c),
           "(i ^ k) % n": lambda i: (i ^ k) % n, "i ^ (i >> c & k)": lambda i: i ^ ((i >> c) & k)}
    return lk.Layout([n], fns[shape])


@given(xor_maps(), st.sampled_from(["auto", "enumerate", "isl", "f2"]))
def test_xor_maps_are_decided_or_refused_typed(layout, method):
    budget = {"budget_s": _ISL_BUDGET_S} if method == "isl" else {}
    proof = attempt(lambda: layout.prove_bijective(method, **budget))
    if proof is not None and proof.verdict:
        assert_inverse_round_trip(layout)


@st.composite
def no_closed_form_bijections(draw):
    """Bijections digit matching does not invert: the issue's interleave, modular multiplication, and a
    shear by an arbitrary function of the other coordinate."""
    kind = draw(st.integers(0, 2))
    if kind == 0:
        rows, cols = 2 * draw(st.integers(1, 4)), 2 * draw(st.integers(0, 20)) + 1
        return lk.Layout([rows, cols], lambda i, j: (i // 2, (i % 2 * cols + j) // 2 * 2 + (i * cols + j) % 2))
    if kind == 1:
        n = draw(st.integers(1, 600))
        k = draw(st.integers(1, 60))
        return lk.Layout([n], lambda i: (i * k) % n)
    a, b, s = draw(st.integers(1, 16)), draw(st.integers(1, 16)), draw(st.integers(0, 31))
    return lk.Layout([a, b], lambda i, j: ((i + (j ^ s) * 3 + j // 2) % a, j))


@given(no_closed_form_bijections())
def test_a_proved_bijection_always_inverts_exactly(layout):
    if layout.prove_bijective("enumerate").verdict:
        assert_inverse_round_trip(layout)
    else:
        attempt(layout.inverse)  # a NotBijectiveError, never another exception


_ARRAYS = st.one_of(
    st.builds(lambda shape, lo, hi: np.random.default_rng(0).integers(lo, hi, size=shape),
              st.lists(st.integers(0, 5), max_size=4), st.integers(-3, 0), st.integers(1, 9)),
    st.builds(np.asarray, st.lists(st.one_of(st.integers(-2, 9), st.none(), st.floats()), max_size=6)),
    HOSTILE_SCALARS)


@given(_ARRAYS, st.data())
def test_wrong_shaped_tables(array, data):
    frag = lk.Fragment([8, 8], forward_thread_fn=lambda i, j: i * 4 + j // 2, forward_index_fn=lambda i, j: j % 2)
    layout = lk.Layout([4, 6], lambda i, j: (j, i))
    names = data.draw(st.one_of(st.none(), st.lists(st.text(max_size=3), max_size=3)))
    for call in (lambda: lk.F2Linear.from_table(array), lambda: lk.F2Linear.from_table(array, names, names),
                 lambda: frag.collect(array), lambda: frag.distribute(array), lambda: layout.apply(array),
                 lambda: lk.Layout.from_linear(array), lambda: lk.Fragment.from_linear(array)):
        attempt(call)


_GARBAGE = st.one_of(HOSTILE_SCALARS, st.lists(HOSTILE_SCALARS, max_size=3),
                     st.lists(st.integers(-2, 9), max_size=3))

_CONSTRUCTORS = [lk.Const, lk.Var, lk.Layout, lk.Fragment, lk.PartialFragment, lk.F2Linear, lk.Symbol,
                 lk.ParametricLayout, lk.ParametricFragment, lk.make_fully_replicated_fragment, lk.parse_expr,
                 lk.parse_index_fn, infer.Program, tla.make_layout, lk.Layout.from_exprs, lk.Fragment.from_exprs]


def _arity(fn) -> tuple[int, int]:
    """How many positional arguments ``fn`` takes (a call with another count is a programming error, which Python
    reports itself)."""
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    required = sum(1 for p in params if p.default is p.empty and p.kind != p.VAR_POSITIONAL)
    return required, 4 if any(p.kind == p.VAR_POSITIONAL for p in params) else len(params)


@given(st.sampled_from(_CONSTRUCTORS), st.data())
def test_garbage_to_the_public_constructors(constructor, data):
    low, high = _arity(constructor)
    args = data.draw(st.lists(_GARBAGE, min_size=low, max_size=high))
    made = attempt(lambda: constructor(*args))
    if isinstance(made, lk.Layout):
        attempt(made.table)
        attempt(lambda: str(made))
