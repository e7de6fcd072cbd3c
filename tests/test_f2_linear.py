"""The F2 linear-layout type: Triton's operations checked against their defining laws by enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit.algebra.bits import XorBasis, rank_of
from layoutkit.algebra.linear import F2Linear


@st.composite
def f2_maps(draw, in_names=("a", "b", "c"), out_names=("x", "y"), max_in=3, max_out=4):
    n_in = draw(st.integers(1, len(in_names)))
    n_out = draw(st.integers(1, len(out_names)))
    in_bits = [draw(st.integers(0, max_in)) for _ in range(n_in)]
    out_bits = [draw(st.integers(0, max_out)) for _ in range(n_out)]
    bases = tuple(
        tuple(tuple(draw(st.integers(0, (1 << ob) - 1)) for ob in out_bits) for _ in range(ib)) for ib in in_bits
    )
    return F2Linear(tuple((n, 1 << b) for n, b in zip(in_names, in_bits)),
                    tuple((n, 1 << b) for n, b in zip(out_names, out_bits)), bases)


def inputs(f: F2Linear):
    return itertools.product(*(range(s) for _, s in f.in_dims))


def images(f: F2Linear) -> list[tuple[int, ...]]:
    return [f.apply(x) for x in inputs(f)]


@given(f2_maps())
def test_apply_is_linear_and_table_round_trips(f):
    xs = list(inputs(f))
    for a, b in zip(xs, reversed(xs)):
        ab = tuple(p ^ q for p, q in zip(a, b))
        assert f.apply(ab) == tuple(p ^ q for p, q in zip(f.apply(a), f.apply(b)))
    table = np.array(images(f), dtype=np.int64).reshape(tuple(s for _, s in f.in_dims) + (len(f.out_dims),))
    back = F2Linear.from_table(table, f.in_names, f.out_names)
    assert back is not None and back.bases == f.bases
    assert all(s <= t for (_, s), (_, t) in zip(back.out_dims, f.out_dims))  # tightest power-of-two sizes


@given(f2_maps())
def test_rank_counts_the_image_and_free_variables(f):
    assert 2 ** f.rank() == len(set(images(f)))
    free = sum(bin(m).count("1") for m in f.free_variable_masks().values())
    assert free == sum(f.in_bits) - f.rank()
    assert f.is_injective() == (free == 0) == (len(set(images(f))) == 2 ** sum(f.in_bits))
    assert f.matrix().shape == (sum(f.out_bits), sum(f.in_bits))


@given(f2_maps(), st.data())
def test_compose_applies_in_order_and_is_associative(f, data):
    g = data.draw(f2_maps(in_names=f.out_names, out_names=("p", "q")).filter(
        lambda g: g.in_names == f.out_names and all(s <= g.in_dim_size(n) for n, s in f.out_dims)))
    h = data.draw(f2_maps(in_names=g.out_names, out_names=("u",)).filter(
        lambda h: h.in_names == g.out_names and all(s <= h.in_dim_size(n) for n, s in g.out_dims)))
    fg = f.compose(g)
    for x in inputs(f):
        assert fg.apply(x) == g.apply(f.apply(x))
    assert fg.compose(h) == f.compose(g.compose(h))
    assert F2Linear.identity_of(f.in_dims).compose(f) == f
    assert f.rank() >= fg.rank() <= g.rank()


@st.composite
def invertible(draw, names=("a", "b")):
    bits = [draw(st.integers(0, 3)) for _ in names]
    n = sum(bits)
    while True:
        cols = [draw(st.integers(0, (1 << n) - 1)) for _ in range(n)]
        if rank_of(cols) == n:
            break
    f = F2Linear.from_images(cols, "flat", "flat") if n else F2Linear.identity(1, "flat", "flat")
    split = F2Linear.identity_of(tuple(zip(names, (1 << b for b in bits))))
    # names -> flat index (low bits first) -> permuted -> names
    to_flat = F2Linear(split.in_dims, (("flat", 1 << n),),
                       tuple(tuple((im[d] << sum(bits[:d]),) for im in per) for d, per in enumerate(split.bases)))
    return to_flat.compose(f).invert_and_compose(to_flat).transpose_ins(list(names))


@given(invertible())
def test_invert_is_a_two_sided_inverse(f):
    inv = f.invert()
    assert inv.compose(f) == F2Linear.identity_of(f.out_dims)
    assert f.compose(inv) == F2Linear.identity_of(f.in_dims)
    assert inv.invert() == f
    assert f.pseudo_inverse() == inv


@given(f2_maps())
def test_pseudo_inverse_is_a_right_inverse_of_surjective_maps(f):
    if not f.is_surjective():
        with pytest.raises(lk.NotBijectiveError):
            f.pseudo_inverse()
        return
    p = f.pseudo_inverse()
    assert p.compose(f) == F2Linear.identity_of(f.out_dims)


@given(f2_maps())
def test_invert_witnesses(f):
    if f.is_invertible():
        return
    with pytest.raises(lk.NotBijectiveError) as err:
        f.invert()
    w = err.value.witness
    if "collision" in w:
        a, b, image = w["collision"]
        assert a != b and f.apply(a) == f.apply(b) == image
    else:
        assert w["unreachable"] not in set(images(f))


@given(f2_maps(), f2_maps(in_names=("d", "e"), out_names=("x", "y")))
def test_invert_and_compose_solves_outer_c_equals_self(f, outer):
    outer = outer if outer.out_names == f.out_names else None
    if outer is None or any(s > outer.out_dim_size(n) for n, s in f.out_dims):
        return
    reached = set(images(outer))
    if not all(im in reached for im in images(f)):
        with pytest.raises(lk.NotBijectiveError):
            f.invert_and_compose(outer)
        return
    c = f.invert_and_compose(outer)
    assert c.in_dims == f.in_dims and c.out_dims == outer.in_dims
    for x in inputs(f):
        assert outer.apply(c.apply(x)) == f.apply(x)


@given(f2_maps(max_in=2, max_out=2), f2_maps(in_names=("a", "b", "z"), out_names=("x", "w"), max_in=2, max_out=2))
def test_product_and_its_quotients(a, b):
    ab = a * b
    for n, s in ab.out_dims:
        lo = a.out_dim_size(n) if n in a.out_names else 1
        assert s == lo * (b.out_dim_size(n) if n in b.out_names else 1)
    q = ab.divide_left(a)
    assert q is not None and (a * q).bases == ab.bases
    r = ab.divide_right(b)
    assert r is not None and (r * b).bases == ab.bases


def test_divide_fails_when_no_quotient_exists():
    whole = F2Linear.from_images([2, 1], "x", "y")
    assert whole.divide_left(F2Linear.identity(2, "x", "y")) is None
    assert whole.divide_right(F2Linear.identity(2, "x", "y")) is None
    assert F2Linear.identity(8, "x", "y").divide_left(F2Linear.identity(2, "x", "y")) == F2Linear.identity(4, "x", "y")


@given(f2_maps(), f2_maps(in_names=("d", "e"), out_names=("x", "y")))
def test_concat_sublayout_transpose(f, g):
    if g.out_dims == f.out_dims:
        fg = f.concat_ins(g)
        assert fg.sublayout(f.in_names, f.out_names) == f
        assert fg.sublayout(g.in_names, g.out_names) == g
        for x in inputs(f):
            for y in itertools.islice(inputs(g), 4):
                assert fg.apply(x + y) == tuple(p ^ q for p, q in zip(f.apply(x), g.apply(y)))
    renamed = F2Linear(f.in_dims, tuple((n + "2", s) for n, s in f.out_dims), f.bases)
    both = f.concat_outs(renamed)
    assert both.sublayout(f.in_names, f.out_names) == f
    rev_in, rev_out = list(reversed(f.in_names)), list(reversed(f.out_names))
    t = f.transpose_ins(rev_in).transpose_outs(rev_out)
    for x in inputs(f):
        assert t.apply(x[::-1]) == f.apply(x)[::-1]
    assert t.transpose_ins(list(f.in_names)).transpose_outs(list(f.out_names)) == f


def test_num_consecutive_and_free_variables_examples():
    # 16 elements, each lane owns 4 consecutive ones: 4 registers are contiguous in the tensor
    lanes = F2Linear((("register", 4), ("lane", 4)), (("dim1", 16),), (((1,), (2,)), ((4,), (8,))))
    assert lanes.num_consecutive() == 4
    swz = F2Linear((("register", 4), ("lane", 4)), (("dim1", 16),), (((1,), (4,)), ((2,), (8,))))
    assert swz.num_consecutive() == 2
    bcast = F2Linear((("register", 2), ("lane", 4)), (("dim1", 4),), (((1,),), ((2,), (0,))))
    assert bcast.free_variable_masks() == {"register": 0, "lane": 2}
    assert bcast.to_triton() == {"bases": {"register": [[1]], "lane": [[2], [0]]}, "out_dims": {"dim1": 4}}


def test_layout_view_round_trips_and_inverts():
    L = lk.Layout([8, 16], lambda i, j: (i, j ^ (i * 2)))
    f = L.to_linear()
    assert f is not None and f.in_names == ("_i", "_j") and f.out_dims == (("dim0", 8), ("dim1", 16))
    coords = np.moveaxis(np.indices(L.input_shape), 0, -1).reshape(-1, 2)
    assert [f.apply(tuple(c)) for c in coords.tolist()] == [tuple(r) for r in L.apply(coords).tolist()]
    assert lk.Layout.from_linear(f.invert()).is_equal(L.inverse())


def test_xor_basis_solves_and_validation():
    basis = XorBasis()
    assert [basis.insert(v) for v in (6, 3, 5, 0)] == [True, True, False, False]
    assert basis.solve(5) == 0b11 and basis.solve(8) is None
    with pytest.raises(lk.ShapeError):
        F2Linear((("a", 3),), (("x", 4),), (((1,),),))
    with pytest.raises(lk.ShapeError):
        F2Linear((("a", 2),), (("x", 4),), (((4,),),))  # image outside the out box
    with pytest.raises(lk.ShapeError):
        F2Linear.from_images([1]).compose(F2Linear.from_images([1], "other"))


@settings(max_examples=30)
@given(st.lists(st.integers(0, 255), max_size=10))
def test_from_images_rank_matches_numpy_span(vectors):
    span = {0}
    for v in vectors:
        span |= {s ^ v for s in span}
    assert 2 ** F2Linear.from_images(vectors).rank() == len(span)
