"""Bounded work and exact inverses: a layout proved bijective always has an inverse (closed form, else the
piecewise inverse read off its table, else the inverse table read through a lookup), and every search that can
run long stops with a typed error naming what gave up and what to try instead."""

from __future__ import annotations

import math
import pickle
import re

import numpy as np
import pytest
import sympy
from hypothesis import assume, given
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit.algebra import forall, piecewise
from layoutkit.algebra.forall import Symbol, search_assignment
from layoutkit.algebra.nodes import Lookup, Var
from layoutkit.algebra.piecewise import PIECEWISE_LIMIT, piecewise_inverse
from layoutkit.errors import LimitError, ProofBudgetError
from layoutkit.testing import assert_inverse_round_trip
from layoutkit.testing.strategies import bijective_layouts
from layoutkit.tla.parametric import ParametricTlaLayout


def _issue_layout(rows: int, cols: int) -> lk.Layout:
    return lk.Layout([rows, cols], lambda i, j: (i // 2, (i % 2 * cols + j) // 2 * 2 + (i * cols + j) % 2))


def test_the_bijection_with_no_closed_form_has_an_exact_inverse():
    layout = _issue_layout(4, 35)
    assert layout.prove_bijective().verdict is True
    inv = layout.inverse()
    assert inv.input_shape == (2, 70)
    assert inv.output_shape == (4, 35)
    coords = np.moveaxis(np.indices((4, 35)), 0, -1)
    assert np.array_equal(inv.apply(layout.table()), coords)
    assert inv.map_forward_index(layout.map_forward_index([1, 20])) == (1, 20)
    # the inverse is a layout like any other: its expressions substitute and prove
    assert inv.prove_bijective().verdict is True
    assert np.array_equal(inv.inverse().table(), layout.table())


def test_the_fragment_inverse_of_a_bijection_with_no_closed_form():
    frag = lk.Fragment([4, 35], forward_thread_fn=lambda i, j: i // 2,
                       forward_index_fn=lambda i, j: (i % 2 * 35 + j) // 2 * 2 + (i * 35 + j) % 2)
    inv = frag.inverse()
    thread, slot = frag.map_forward_thread([3, 7]), frag.map_forward_index([3, 7])
    assert inv.map_forward_index([*slot, thread]) == (3, 7, 0)


def test_a_modular_multiplication_inverts_exactly():
    layout = lk.Layout([1001], lambda i: (i * 8) % 1001)
    assert_inverse_round_trip(layout)


def test_a_piecewise_inverse_past_its_limit_is_refused_typed():
    table = np.random.default_rng(0).permutation(PIECEWISE_LIMIT * 4)[:, None]
    with pytest.raises(LimitError, match=r"no closed-form inverse, and its piecewise inverse needs \d+ breaks .* "
                                         r"lookup_inverse reads the inverse from its table instead"):
        piecewise_inverse(table, (PIECEWISE_LIMIT * 4,), (Var("_i", PIECEWISE_LIMIT * 4),))


def test_a_random_permutation_past_the_piecewise_limit_inverts_through_its_table():
    n = 1 << 14
    perm = np.random.default_rng(7).permutation(n)
    layout = lk.Layout.from_table(perm)
    assert layout.prove_bijective().verdict is True
    inv = layout.inverse()
    assert inv.input_shape == (n,) and inv.output_shape == (n,)
    assert str(inv.forward_index[0]) == f"table#{inv.forward_index[0].table.name}[_i]"
    assert np.array_equal(inv.apply(layout.table())[:, 0], np.arange(n))  # every point, one vectorised pass
    assert np.array_equal(inv.table()[perm, 0], np.arange(n))
    assert inv.inverse() == layout  # closed under inversion: the inverse's inverse reads the original table
    back = pickle.loads(pickle.dumps(inv))
    assert back == inv and hash(back) == hash(inv) and str(back) == str(inv)
    # a layout like any other: it composes both ways, with tables and with closed forms
    assert np.array_equal(inv.compose(layout).table()[:, 0], np.arange(n))
    swizzle = lk.Layout([n], lambda i: i ^ (i // 64 % 8))
    both = layout.compose(swizzle)
    assert np.array_equal(both.table()[:, 0], perm[swizzle.table()[:, 0]])
    assert np.array_equal(both.inverse().apply(both.table())[:, 0], np.arange(n))


def test_a_scramble_with_many_breaks_in_two_dims_inverts_through_its_table():
    # a multiplicative scramble folded by an xor-shift: no digit matching, not F2-linear, ~all steps break
    n = 1 << 13
    layout = lk.Layout([64, n // 64], lambda i, j: ((i * 128 + j) * 5 + 3) % n ^ (((i * 128 + j) * 5 + 3) % n // 128))
    inv = layout.inverse()
    assert inv.input_shape == (n,)
    assert all(isinstance(e, Lookup) for e in inv.forward_index)
    assert_inverse_round_trip(layout)


@st.composite
def _permuted_boxes(draw):
    shape = draw(st.lists(st.integers(1, 8), min_size=1, max_size=2))
    size = math.prod(shape)
    perm = draw(st.permutations(range(size)))
    out = draw(st.sampled_from([s for s in range(1, size + 1) if size % s == 0]))
    coords = np.stack(np.unravel_index(np.array(perm), (size // out, out)), axis=-1)
    return coords.reshape(tuple(shape) + (2,))


@given(_permuted_boxes(), st.sampled_from([PIECEWISE_LIMIT, 0]))
def test_law_a_permuted_box_always_inverts(table, limit):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(piecewise, "PIECEWISE_LIMIT", limit)  # 0: every break is past the limit, so a table is read
        layout = lk.Layout.from_table(table)
        assert layout.prove_bijective().verdict is True
        assert_inverse_round_trip(layout)  # never a LimitError, whatever the number of breaks
        assert np.array_equal(layout.inverse().inverse().table(), layout.table())


def _modular(n: int, k: int) -> lk.Layout:
    return lk.Layout([n], lambda i: (i * k) % n)


_BIJECTIONS = st.one_of(
    bijective_layouts(max_size=256),
    st.builds(_issue_layout, st.sampled_from([2, 4, 6]), st.sampled_from([3, 5, 7, 35])),
    st.builds(_modular, st.integers(1, 300), st.integers(1, 40)),
    st.builds(lambda a, b, k: lk.Layout([a, b], lambda i, j: ((i + (j ^ k)) % a, j)), st.integers(1, 12),
              st.integers(1, 12), st.integers(0, 15)),
)


@given(_BIJECTIONS)
def test_law_every_bijection_has_an_inverse_that_undoes_it(layout):
    proof = layout.prove_bijective("enumerate")
    assume(proof.verdict)
    assert_inverse_round_trip(layout)
    inv = layout.inverse()
    assert math.prod(inv.input_shape) == layout.size


def test_an_undecided_counterexample_search_stops_at_its_budget(monkeypatch):
    monkeypatch.setattr(forall, "SEARCH_LIMIT", 10)
    with pytest.raises(ProofBudgetError, match=r"search for a counterexample over M, N: stopped undecided after 10 "
                                               r"of 144 assignments \(SEARCH_LIMIT\); bind the symbols") as err:
        search_assignment([Symbol("M"), Symbol("N")], lambda sub: False)
    assert (err.value.limit, err.value.found) == (10, 10)
    assert search_assignment([Symbol("M")], lambda sub: sub[Symbol("M").sym] == 3) == {"M": 3}
    monkeypatch.setattr(forall, "SEARCH_LIMIT", 144)  # a search within the limit decides as before
    assert search_assignment([Symbol("M"), Symbol("N")], lambda sub: False) is None


def test_auto_refuses_to_enumerate_past_its_size_budget():
    big = lk.Layout([3000, 5000], lambda i, j: (i, j ^ (i % 7)))  # neither F2-affine nor quasi-affine
    refusal = (r"prove_bijective\('auto'\) .*enumerating its 15000000 coordinates is past the 4194304 'auto' "
               r"enumerates; ask for method='enumerate'")
    with pytest.raises(ProofBudgetError, match=refusal) as err:
        big.prove_bijective()
    assert (err.value.limit, err.value.found) == (1 << 22, 15_000_000)
    with pytest.raises(ProofBudgetError):
        big.inverse()  # unproved, so not inverted


def test_the_piecewise_inverse_finds_the_period_and_the_modular_form():
    xor = lk.Layout([4736], lambda i: i ^ ((i // 2) & 53))
    inv = xor.inverse()
    assert str(inv.forward_index[0]).startswith("_i // 128 * 128 + ")  # one period of 128 offsets holds the breaks
    assert np.array_equal(inv.apply(xor.table())[:, 0], np.arange(4736))
    assert [str(e) for e in _modular(4737, 2).inverse().forward_index] == ["_i * 2369 % 4737"]
    assert [str(e) for e in _issue_layout(4, 35).inverse().forward_index] == ["_i * 2 + _j // 35", "_j % 35"]


@pytest.mark.parametrize("shape", [b"(JQ\x9d", "ab", {4: 4}, {4}])
def test_bytes_strings_sets_and_dicts_are_no_shapes(shape):
    # found by `make fuzz`: bytes iterate as integers, so b"(JQ\x9d" was the shape (40, 74, 81, 157)
    with pytest.raises(lk.ShapeError, match="must be a sequence of positive integers; found"):
        lk.Layout(shape, lambda *xs: xs[0])


def test_why_a_huge_layout_is_not_linear_is_read_off_its_shape():
    # found by `make fuzz`: the shape-only view of 2**60 points overflowed numpy's byte count (a ValueError)
    huge = lk.Layout([200, 234, 246, 175, 86, 225, 151, 231], lambda *xs: xs[0])
    with pytest.raises(lk.NotLinearError, match=r"input dim 0 \(_i\) has extent 200, not a power of two"):
        huge.to_linear()


def test_a_layout_without_outputs_is_refused():
    # found by `make fuzz`: Layout.from_exprs(1, ()) built a layout whose table() failed inside numpy
    with pytest.raises(lk.ShapeError, match=r"Layout.from_exprs needs at least one output expression; found \(\)"):
        lk.Layout.from_exprs([1], ())


_M, _N = lk.Symbol("M"), lk.Symbol("N")


@pytest.mark.parametrize("extent,found", [
    (sympy.sqrt(_M.sym), "the power sqrt(M)"), (sympy.Float(1.5) * _M.sym, "the float 1.50"),
    (sympy.oo, "the Infinity oo"), (2**_M.sym, "the power 2**M"), (1 / _M.sym, "the power 1/M"),
    (sympy.floor(_M.sym / 3), "the floor floor(M/3)"), (sympy.I * _M.sym, "the ImaginaryUnit I")])
def test_a_parametric_extent_must_be_a_polynomial(extent, found):
    # found by fuzzing: each reached sympy.Poly or int() and raised PolynomialError or TypeError
    with pytest.raises(lk.ShapeError, match=rf"expected a polynomial in the symbols with rational coefficients; "
                                            rf"found {re.escape(found)}"):
        ParametricTlaLayout((_M, extent), (1, _M), symbols=(_M,)).prove_bijective()


def test_parametric_sizes_are_refused_before_sympy_expands_them():
    with pytest.raises(LimitError, match=r"extent \(M \+ N\)\*\*60: total degree 60 is past 8 \(MAX_DEGREE\)"):
        ParametricTlaLayout((_M, (_M.sym + _N.sym) ** 60), (1, _M), symbols=(_M, _N))
    with pytest.raises(LimitError, match=r"an extent or stride must lie within \+-2\*\*62"):
        ParametricTlaLayout((_M, 10**30), (1, _M))
    many = [lk.Symbol(f"S{k}") for k in range(forall.MAX_SYMBOLS + 1)]
    with pytest.raises(LimitError, match=r"ParametricTlaLayout: 9 symbols, past 8 \(MAX_SYMBOLS\)"):
        ParametricTlaLayout(tuple(many))
    # eight squared binomials multiply to 3**8 monomials: the size is refused, not expanded
    squares = ParametricTlaLayout(tuple((s.sym + 1) ** 2 for s in many[:8]), symbols=many[:8])
    with pytest.raises(ProofBudgetError, match=r"ParametricTlaLayout.size: expanding .* gives up to 6561 monomials, "
                                               r"past 4096 \(MAX_TERMS\); bind the symbols"):
        squares.size()
    assert squares.bind({s.name: 1 for s in many[:8]}).size == 4**8  # bound, it is an ordinary layout


def test_a_counterexample_search_stops_at_its_enumeration_budget():
    huge = ParametricTlaLayout((lk.Symbol("K", lo=10**6), 8), (3, 8))  # refuted at K = 10**6: 8e6 points
    with pytest.raises(ProofBudgetError, match=r"injective for all values: the search for a counterexample stopped "
                                               r"undecided: checking \{'K': 1000000\} would bring the points it "
                                               r"enumerated to 8000000, past 4194304 \(SEARCH_POINTS\)") as err:
        huge.prove_injective()
    assert (err.value.limit, err.value.found) == (forall.SEARCH_POINTS, 8_000_000)
    small = ParametricTlaLayout((lk.Symbol("K", lo=1000), 8), (3, 8))
    assert small.prove_injective().witness["values"] == {"K": 1000}


def test_bound_parametric_tables_are_bounded_and_never_wrap():
    with pytest.raises(LimitError, match=r"ParametricLayout.table for \{'M': 100000, 'N': 100000\} would evaluate "
                                         r"10000000000 points"):
        lk.ParametricLayout.strided((_M, _N), (_N, 1)).table({"M": 100_000, "N": 100_000})
    with pytest.raises(LimitError, match=r"ParametricLayout at \{'M': 4\}: offsets reach \d+, past 2\*\*62"):
        lk.ParametricLayout.strided((_M,), (1 << 61,)).table({"M": 4})


def test_hostile_parametric_reproducers_from_make_fuzz():
    # an extent over a symbol not declared: refused as unknown, before the extents are checked >= 1 (a TypeError
    # from sympy's truth value of M/3 - 1 >= 0)
    with pytest.raises(lk.ShapeError, match=r"M/3 uses symbols \['M'\] with no assumptions"):
        lk.ParametricLayout([], None, [sympy.Symbol("M", integer=True) / 3], [1])
    # the stride of an extent-1 mode is 2**62 at the first admissible value: it moves nothing, so the table
    # holds (an OverflowError in numpy before)
    big = lk.Symbol("M", lo=1, multiple=2**31)
    layout = ParametricTlaLayout((1,), (big.sym ** 2,), symbols=[big])
    assert layout.prove_injective().verdict
    assert layout.table({"M": 2**31}).tolist() == [0]
