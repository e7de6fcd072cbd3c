"""C++ CuTe semantics beyond the non-negative, divisible cases: the complement contract on layouts whose
strides need not divide, compositions with negative strides, and swizzles on either side of a composition
(with the divides and products over composed layouts)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from layoutkit import tla
from layoutkit.errors import ShapeError
from layoutkit.tla.composition import layout_at, make_swizzle

from .test_tla_cpp_vectors import complement_contract_holds


@st.composite
def spread_layouts(draw, max_rank=3):
    """Layouts whose sorted modes do not overlap but whose strides need not divide (gaps of any width)."""
    rank = draw(st.integers(1, max_rank))
    shapes = [draw(st.sampled_from((1, 2, 3, 4, 6))) for _ in range(rank)]
    order = draw(st.permutations(range(rank)))
    strides = [0] * rank
    cur = 1
    for k in order:
        cur += draw(st.integers(0, 5))
        strides[k] = cur
        cur *= shapes[k]
    return tla.Layout(tuple(shapes), tuple(strides))


@given(spread_layouts(), st.sampled_from([None, 1, 7, 16, 24, 100]))
def test_complement_contract(L, cotarget):
    R = tla.complement(L, cotarget)
    assert complement_contract_holds(L, cotarget, R), (L, cotarget, R)


@given(spread_layouts(), st.integers(1, 5))
def test_logical_product_through_a_gappy_complement_keeps_blocks_disjoint(A, n):
    """``(A, complement(A) o B)``: copies of the block at offsets the block misses (C++'s construction)."""
    try:
        P = tla.logical_product(A, tla.Layout(n, 1))
    except ShapeError:
        return  # the complement's modes cannot lay out n copies as one layout (C++ refuses or is wrong)
    copies = P.mode(1).table()
    block = A.table()
    every = np.add.outer(copies, block).ravel()
    if np.unique(block).size == block.size:
        assert np.unique(every).size == every.size


def test_complement_contract_examples():
    for shape, stride, want in (((4, 6), (1, 6), "_1:_0"), ((4, 10), (1, 10), "_2:_4"), ((3, 6), (1, 10), "_3:_3"),
                                ((3, 2), (1, 7), "_2:_3")):
        L = tla.Layout(tuple(map(tla.Int, shape)), tuple(map(tla.Int, stride)))
        R = tla.complement(L)
        assert str(R) == want
        assert complement_contract_holds(L, None, R)


@st.composite
def signed_layouts(draw, max_rank=3):
    rank = draw(st.integers(1, max_rank))
    shapes = tuple(draw(st.sampled_from((1, 2, 3, 4, 8))) for _ in range(rank))
    strides = tuple(draw(st.sampled_from((-8, -4, -2, -1, 0, 1, 2, 3, 4, 8, 16))) for _ in range(rank))
    return tla.Layout(shapes, strides)


@given(signed_layouts(), signed_layouts(max_rank=2))
def test_composition_with_negative_strides_is_exact_or_refused(A, B):
    try:
        R = tla.composition(A, B)
    except ShapeError:
        return
    assert R.size == B.size
    assert np.array_equal(R.table(), layout_at(A, B.table()))


@given(signed_layouts())
def test_coalesce_keeps_signed_layouts(A):
    C = tla.coalesce(A)
    assert C.size == A.size
    assert np.array_equal(C.table(), A.table())


def test_negative_strides_examples():
    """CuTe's own BETA cases (the SM80 fp64 NT problem among them), as C++ prints them."""
    L = tla.Layout
    assert str(tla.composition(L((1, (2, 4)), (0, (-1, 512))), L(4, -1))) == "(2,2):(1,-512)"
    assert str(tla.composition(L((4, 4), (-1, 1)), L((2, 4, 2), (1, 2, 8)))) == "(2,(2,2),2):(-1,(-2,1),2)"
    assert str(tla.logical_product(L(4, 1), L(3, -1))) == "(4,3):(1,-4)"
    # walking backwards across a mode boundary of A: no layout of B's shape is A o B
    with pytest.raises(ShapeError, match="negative strides step across"):
        tla.composition(L((2, 2), (1, 10)), L((2, 2), (2, -1)))


# ---- swizzles ------------------------------------------------------------------------------------------------------


@given(st.sampled_from([(3, 0, 3), (2, 1, 3), (3, 3, 3), (2, 0, -2), (1, 2, 2)]),
       st.sampled_from([((8, 8), (8, 1)), ((8, 8), (1, 8)), ((64,), (2,)), ((4, 16), (16, 1)), ((2, 32), (1, 4))]))
def test_layout_o_swizzle_is_exact_or_refused(bms, shape_stride):
    sw, A = tla.Swizzle(*bms), tla.Layout(*shape_stride)
    try:
        R = tla.composition(A, sw)
    except ShapeError:
        return
    idx = np.arange(A.size)
    assert np.array_equal(R.table(), layout_at(A, sw(idx)))


def test_layout_o_swizzle_examples():
    A = tla.Layout((tla._8, tla._8), (tla._8, tla._1))
    R = tla.composition(A, tla.Swizzle(3, 0, 3))
    assert str(R) == "Sw<3,0,-3> o _0 o (_8,_8):(_8,_1)"
    # A o (Sw o B) == (A o Sw) o B
    CL = tla.composition(tla.Swizzle(3, 0, 3), A)
    R2 = tla.composition(A, CL)
    assert str(R2) == "Sw<3,0,-3> o _0 o (_8,_8):(_1,_8)"
    assert np.array_equal(R2.table(), layout_at(A, CL.table()))
    assert str(make_swizzle(0b111000, 0b111)) == "Sw<3,0,3>"
    with pytest.raises(ShapeError, match="no swizzle xors"):
        tla.composition(tla.Layout((tla._16, tla._8), (tla._8, tla._1)),
                        tla.composition(tla.Swizzle(2, 0, 3), tla.Layout((8, 4), (4, 1))))


@pytest.mark.parametrize("op", ["logical_divide", "zipped_divide", "tiled_divide", "flat_divide"])
def test_divides_of_composed_layouts_swizzle_the_divided_layout(op):
    inner = tla.Layout((8, 64), (64, 1))
    S = tla.composition(tla.Swizzle(3, 4, 3), inner)
    got = getattr(tla, op)(S, (4, 8))
    plain = getattr(tla, op)(inner, (4, 8))
    assert got.inner == plain
    assert np.array_equal(got.table(), tla.Swizzle(3, 4, 3)(plain.table()))


@pytest.mark.parametrize("op", ["logical_product", "zipped_product", "tiled_product", "flat_product",
                                "blocked_product", "raked_product"])
def test_products_of_composed_layouts_swizzle_the_product(op):
    inner = tla.Layout((8, 8), (8, 1))
    S = tla.composition(tla.Swizzle(3, 3, 3), inner)
    got = getattr(tla, op)(S, tla.Layout((2, 2), (1, 2)))
    plain = getattr(tla, op)(inner, tla.Layout((2, 2), (1, 2)))
    assert got.inner == plain
    assert np.array_equal(got.table(), tla.Swizzle(3, 3, 3)(plain.table()))
