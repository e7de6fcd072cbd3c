"""Integer evaluation never wraps: int64 only where the expression bounds prove it exact, Python ints
otherwise, and IntegerOverflowError when a result itself leaves int64."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit.algebra import Var, compile_numpy, evaluate
from layoutkit.algebra.evaluate import evaluate_columns, fits_int64, grid

INT64_MAX = (1 << 63) - 1


def test_issue_reproducer_a_coefficient_of_2_62():
    L = lk.Layout([4], lambda i: i * 2**62)
    with pytest.raises(lk.IntegerOverflowError, match=r"evaluates to 9223372036854775808 at \(2,\)") as e:
        L.table()
    assert isinstance(e.value, OverflowError) and isinstance(e.value, lk.LayoutError)
    assert e.value.witness["value"] == 2**63
    assert L.apply([[1]]).tolist() == [[2**62]]                 # what fits comes back exactly
    with pytest.raises(lk.IntegerOverflowError):
        L.apply([[3]])


def test_issue_reproducer_a_sum_past_int64():
    L = lk.Layout([4, 4], lambda i, j: i * 2**61 + j * 2**61 + 2**61)
    with pytest.raises(lk.IntegerOverflowError, match=r"at \(0, 3\)"):
        L.table()
    assert L.apply([[1, 1], [0, 2]]).tolist() == [[3 * 2**61], [3 * 2**61]]
    with pytest.raises(lk.IntegerOverflowError):
        L.map_forward_index([2, 2])


def test_an_intermediate_past_int64_is_computed_exactly():
    """``i * 2**62`` wraps at i = 2 in int64 (to -2**63, then // 2**61 gives -4); the result fits."""
    L = lk.Layout([4], lambda i: i * 2**62 // 2**61)
    assert L.table().ravel().tolist() == [0, 2, 4, 6]
    assert L.apply([[2], [3]]).tolist() == [[4], [6]]
    F = lk.Fragment([4], forward_thread_fn=lambda i: i * 2**62 // 2**62, forward_index_fn=lambda i: 0)
    assert F.thread_table().ravel().tolist() == [0, 1, 2, 3]
    assert F.apply_thread([[3]]).tolist() == [3]


def test_inputs_outside_their_ranges_and_unbounded_variables():
    k = Var("_k")
    run = compile_numpy((k * 8,), (k,))
    assert run(np.array([2**59]))[0].tolist() == [2**62]
    with pytest.raises(lk.IntegerOverflowError):
        run(np.array([2**60]))
    big = np.array([2**70 + 3], dtype=object)                # an input past int64 itself
    assert compile_numpy((k % 8, k // 2**10), (k,))(big)[0].tolist() == [3]
    with pytest.raises(lk.IntegerOverflowError):                # one output past int64 refuses the call
        compile_numpy((k % 8, k // 4), (k,))(big)
    i = Var("_i", 4)
    # declared in [0, 4), fed 2**62: the node bounds no longer hold, the inputs' own spans are used
    assert compile_numpy((i * 2,), (i,))(np.array([2**61]))[0].tolist() == [2**62]
    with pytest.raises(lk.IntegerOverflowError):
        compile_numpy((i * 2,), (i,))(np.array([2**62]))
    with pytest.raises(lk.IntegerOverflowError):
        evaluate_columns((i * 4 + 1,), (i,), [np.array([2**61, 1])])
    assert evaluate_columns((i * 4 + 1,), (i,), [np.array([2**60, 1])]).tolist() == [[2**62 + 1], [5]]


def test_evaluate_at_one_point_is_exact():
    i = Var("_i", 16)
    assert evaluate(i * 2**62 + 2**62, {i: 3}) == 2**64
    assert evaluate(i % 8 * 4, {i: 11}) == 12
    with pytest.raises(lk.ExprError, match="must be an integer"):
        evaluate(i * 2, {i: 2.5})


def test_normal_layouts_never_take_the_exact_path(monkeypatch):
    """The usual layouts are proven in int32/int64 from their bounds and never reach Python ints."""
    def refuse(*args):
        raise AssertionError("exact path taken")

    monkeypatch.setattr(importlib.import_module("layoutkit.algebra.evaluate"), "_exact", refuse)
    L = lk.Layout([128, 64], lambda i, j: i * 64 + (j ^ (i % 8)))
    assert L.table().shape == (128, 64, 1) and L.apply([[3, 5]]).tolist() == [[3 * 64 + (5 ^ 3)]]
    F = lk.Fragment([64, 64], forward_thread_fn=lambda i, j: i % 8 * 4 + j % 8 // 2)
    assert F.thread_table().shape == (1, 64, 64) and F.apply_thread([[9, 3]]).tolist() == [5]
    assert fits_int64(tuple(L.forward_index))


_coeff = st.integers(-(2**63), 2**63)


@given(c0=_coeff, c1=_coeff, const=_coeff, e0=st.integers(1, 6), e1=st.integers(1, 6),
       div=st.one_of(st.none(), st.integers(1, 2**64)), mod=st.one_of(st.none(), st.integers(1, 2**64)))
def test_tables_are_exact_or_refused(c0, c1, const, e0, e1, div, mod):
    """Against Python ints: the table is exact where every value fits int64, else IntegerOverflowError."""
    i, j = Var("_i", e0), Var("_j", e1)
    expr = i * c0 + j * c1 + const
    if div is not None:
        expr = expr // div
    if mod is not None:
        expr = expr % mod
    want = np.array([[_reference(c0, c1, const, div, mod, a, b) for b in range(e1)] for a in range(e0)],
                    dtype=object)
    fits = all(-(2**63) <= v <= INT64_MAX for v in want.ravel())
    run = compile_numpy((expr,), (i, j))
    try:
        (got,) = run(*grid((e0, e1)))
    except lk.IntegerOverflowError:
        assert not fits
        return
    assert fits
    assert np.broadcast_to(got, (e0, e1)).tolist() == want.tolist()
    pts = np.array([(a, b) for a in range(e0) for b in range(e1)])
    cols = evaluate_columns((expr,), (i, j), [pts[:, 0], pts[:, 1]], in_range=True)
    assert cols[:, 0].tolist() == want.ravel().tolist()


def _reference(c0, c1, const, div, mod, a, b):
    v = c0 * a + c1 * b + const
    if div is not None:
        v //= div
    if mod is not None:
        v %= mod
    return v


_big = st.integers(-(2**62), 2**62)


@given(c=_coeff, m=st.integers(1, 2**63), xs=st.lists(_big, min_size=1, max_size=8),
       ys=st.lists(_big, min_size=1, max_size=8))
def test_unbounded_inputs_are_exact_or_refused(c, m, xs, ys):
    """Variables without extents (no static proof): the inputs' own spans decide int64 or Python ints,
    through products, bitwise ops and floor division / modulo of negative values."""
    i, j = Var("_i"), Var("_j")
    n = min(len(xs), len(ys))
    a, b = np.array(xs[:n], dtype=np.int64), np.array(ys[:n], dtype=np.int64)
    exprs = ((i * c + j) // m, (i ^ j) + (i & j) * 3, i * j % m)
    want = [[(x * c + y) // m for x, y in zip(a.tolist(), b.tolist())],
            [(x ^ y) + (x & y) * 3 for x, y in zip(a.tolist(), b.tolist())],
            [x * y % m for x, y in zip(a.tolist(), b.tolist())]]
    for e, w in zip(exprs, want):
        fits = all(-(2**63) <= v <= INT64_MAX for v in w)
        try:
            (got,) = compile_numpy((e,), (i, j))(a, b)
        except lk.IntegerOverflowError:
            assert not fits
            continue
        assert fits and np.broadcast_to(got, (n,)).tolist() == w


# ---- TLA layouts ---------------------------------------------------------------------------------


def test_tla_tables_with_huge_strides_are_exact_or_refused():
    from layoutkit import tla

    L = tla.make_layout((4,), (2**62,))
    with pytest.raises(lk.IntegerOverflowError, match=r"at \(2,\)"):
        L.table()
    with pytest.raises(lk.IntegerOverflowError):
        L.offset_table()
    with pytest.raises(lk.IntegerOverflowError):
        L(np.arange(4))
    assert L(np.arange(2)).tolist() == [0, 2**62]
    assert L(3) == 3 * 2**62                                  # an int coordinate gives the exact int
    M = tla.make_layout((4, 4), (2**61, 1))
    assert M.table().tolist() == [r * 2**61 + c for c in range(4) for r in range(4)]
    assert M((3, np.arange(4))).tolist() == [3 * 2**61 + c for c in range(4)]


@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), data=st.data())
def test_tla_tables_match_python_ints(shape, data):
    from layoutkit import tla

    stride = [data.draw(st.integers(0, 2**63)) for _ in shape]
    L = tla.make_layout(tuple(shape), tuple(stride))
    want = []
    for i in range(int(np.prod(shape))):
        off, rest = 0, i
        for e, d in zip(shape, stride):
            off += rest % e * d
            rest //= e
        want.append(off)
    fits = all(v <= INT64_MAX for v in want)
    try:
        got = L.table()
    except lk.IntegerOverflowError:
        assert not fits
        return
    assert fits and got.tolist() == want
