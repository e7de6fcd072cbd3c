"""The CuTe algebra in layoutkit.tla: properties (hypothesis), the known C++-vs-pycute differences,
refusals with their witnesses, and swizzles."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import layoutkit as lk
from layoutkit import tla
from layoutkit.errors import LayoutError, ShapeError, UnsupportedError
from layoutkit.tla.int_tuple_structure import leaves

Int = tla.Int


def S(x):
    if isinstance(x, tuple):
        return tuple(S(v) for v in x)
    return Int(x)


def SL(shape, stride):
    """A layout of static ints."""
    return tla.Layout(S(shape), S(stride))


def values_of(A: tla.Layout, idx) -> np.ndarray:
    """``A(i)`` for integer indices (colexicographic, last mode unbounded)."""
    return np.asarray(tla.crd2idx(np.asarray(idx, dtype=np.int64), A.shape, A.stride), dtype=np.int64)


# ---- strategies -------------------------------------------------------------------------------------------


def _nest(draw, shapes: list, strides: list):
    """Group neighbouring modes into tuples at random (keeps the map, changes the profile)."""
    if len(shapes) >= 2 and draw(st.booleans()):
        k = draw(st.integers(0, len(shapes) - 2))
        shapes = shapes[:k] + [tuple(shapes[k:k + 2])] + shapes[k + 2:]
        strides = strides[:k] + [tuple(strides[k:k + 2])] + strides[k + 2:]
    if len(shapes) == 1 and draw(st.booleans()):
        return shapes[0], strides[0]
    return tuple(shapes), tuple(strides)


@st.composite
def layouts(draw, max_rank=3, extents=(1, 2, 3, 4, 6, 8), injective=False, pow2=False, static=False):
    rank = draw(st.integers(1, max_rank))
    shapes = [draw(st.sampled_from((1, 2, 4, 8) if pow2 else extents)) for _ in range(rank)]
    if injective:
        order = draw(st.permutations(range(rank)))
        strides = [0] * rank
        cur = 1
        for k in order:
            cur *= draw(st.sampled_from((1, 1, 2) if pow2 else (1, 1, 2, 3)))
            strides[k] = cur
            cur *= shapes[k]
    else:
        pool = (0, 1, 2, 4, 8, 16) if pow2 else (0, 1, 2, 3, 4, 6, 8, 16)
        strides = [draw(st.sampled_from(pool)) for _ in range(rank)]
    shape, stride = _nest(draw, shapes, strides)
    if static:
        shape, stride = S(shape), S(stride)
    return tla.Layout(shape, stride)


# ---- coalesce / filter ----------------------------------------------------------------------------------------


@given(layouts(max_rank=4))
def test_coalesce_preserves_the_function(L):
    C = tla.coalesce(L)
    assert C.size == L.size and C.depth <= 1
    assert np.array_equal(C.table(), L.table())
    assert tla.coalesce(C) == C


@given(layouts(max_rank=4))
def test_filter_keeps_the_image(L):
    F = tla.filter(L)
    assert set(F.table().tolist()) == set(L.table().tolist())
    assert F.size == 1 or all(d != 0 for d in leaves(F.stride))


def test_coalesce_examples():
    assert str(tla.coalesce(SL((2, (1, 6)), (1, (6, 2))))) == "_12:_1"
    assert str(tla.coalesce(SL((4, 1), (1, 0)))) == "_4:_1"
    assert str(tla.coalesce(SL(1, 5))) == "_1:_0"
    assert str(tla.coalesce(tla.Layout((2, 1, 3), (1, 5, 2)))) == "6:1"  # plain ints coalesce by value too
    assert str(tla.coalesce(SL(((2, 2), (2, 2)), ((1, 4), (2, 8))), (1, 1))) == "((_2,_2),(_2,_2)):((_1,_4),(_2,_8))"
    assert str(tla.coalesce(SL(((2, 2), (2, 2)), ((1, 2), (8, 4))), (1, 1))) == "(_4,(_2,_2)):(_1,(_8,_4))"


# ---- composition ---------------------------------------------------------------------------------------------


def _check_composition(A, B):
    R = tla.composition(A, B)
    assert tla.compatible(B.shape, R.shape), (A, B, R)  # R is shaped like B (modes may split)
    assert np.array_equal(R.table(), values_of(A, B.table())), (A, B, R)
    return R


@given(layouts(max_rank=3), layouts(max_rank=2))
def test_every_composition_returned_is_exact(A, B):
    try:
        _check_composition(A, B)
    except ShapeError as err:
        assert "composition" in str(err) and "mode" in str(err)


@given(layouts(max_rank=3, pow2=True), layouts(max_rank=2, pow2=True, injective=True))
def test_power_of_two_compositions_never_refuse(A, B):
    _check_composition(A, B)


@given(layouts(max_rank=3, static=True), layouts(max_rank=2, static=True, injective=True))
def test_composition_of_static_layouts_is_exact(A, B):
    try:
        R = _check_composition(A, B)
    except ShapeError:
        return
    assert str(R).replace("_", "") == str(tla.composition(tla.Layout(tla.make_dynamic(A.shape), tla.make_dynamic(
        A.stride)), tla.Layout(tla.make_dynamic(B.shape), tla.make_dynamic(B.stride)))).replace("_", "")


def test_composition_examples():
    assert str(tla.composition(SL((6, 2), (8, 2)), SL((4, 3), (3, 1)))) == "((_2,_2),_3):((_24,_2),_8)"
    assert str(tla.composition(SL(20, 2), SL((4, 5), (1, 4)))) == "(_4,_5):(_2,_8)"
    assert str(tla.composition(SL((128, 128), (1, 128)), SL((16, 16), (1, 16)))) == "(_16,_16):(_1,_16)"
    # the walk stays inside one mode: exact even where C++ only has a weak divisibility check
    assert str(tla.composition(SL((6, 2), (1, 7)), SL(4, 1))) == "_4:_1"
    assert str(tla.composition(SL((3, 4), (1, 10)), SL(2, 2))) == "_2:_2"


def test_composition_keeps_the_stride_of_a_trailing_size_one_mode():
    """C++ coalesces A with ``coalesce_x``, which keeps A's function past its domain: a trailing
    size-1 mode's stride survives (pycute coalesces it away and returns 8:1)."""
    R = tla.composition(SL((4, 1), (1, 8)), SL(8, 1))
    assert str(R) == "(_4,_2):(_1,_8)"


def test_composition_with_a_tiler_drops_unhit_modes_like_cpp():
    A = SL((8, 8, 4), (8, 1, 64))
    assert str(tla.composition(A, (SL(4, 2), None))) == "(_4,_8):(_16,_1)"  # pycute keeps mode 2
    assert str(tla.composition(SL((8, 8), (8, 1)), (Int(4), Int(2)))) == "(_4,_2):(_8,_1)"
    with pytest.raises(ShapeError, match="rank"):
        tla.composition(SL((8, 8), (8, 1)), (2, 2, 2))


def test_composition_refuses_a_straddling_mode_and_names_it():
    """C++ refuses ``(4,6):(1,5) o 6:1`` at compile time; pycute silently returns a size-4 layout."""
    with pytest.raises(ShapeError) as err:
        tla.composition(SL((4, 6), (1, 5)), SL(6, 1))
    text = str(err.value)
    assert "mode () = _6:_1 of B" in text and "mode 0 (_4:_1) of A" in text


def test_composition_refuses_where_cpp_is_silently_wrong():
    """C++ CuTe's weak stride condition accepts a stride 4 walking a mode of 6 and returns
    ``(4,(2,4)):(1,(4,7))``, which is not A o B: B(2) = 8 -> A(8) = 9, the layout says 7."""
    A, B = SL((6, 4), (1, 7)), SL((4, 8), (1, 4))
    cpp = SL((4, (2, 4)), (1, (4, 7)))
    assert not np.array_equal(cpp.table(), values_of(A, B.table()))
    with pytest.raises(ShapeError, match=r"mode \(1,\) = _8:_4 of B steps across the boundary of mode 0"):
        tla.composition(A, B)
    with pytest.raises(ShapeError):
        tla.logical_divide(A, SL(4, 1))  # the same composition inside a divide


def test_composition_carries_between_modes_are_verified():
    """Two B modes that share an A mode: exact when their digits cannot carry, refused with a
    witness coordinate when they do (C++ returns (2,(2,4)):(8,(8,1)), wrong at (1,1))."""
    with pytest.raises(ShapeError, match=r"at B's coordinate \(1,1\)"):
        tla.composition(SL((4, 4), (4, 1)), SL((2, 8), (2, 2)))
    # overlapping B, but every sum stays inside A's first mode: verified and returned
    R = tla.composition(SL((8, 4), (1, 8)), SL((2, 2), (1, 1)))
    assert np.array_equal(R.table(), values_of(SL((8, 4), (1, 8)), SL((2, 2), (1, 1)).table()))


def test_composition_other_operands():
    assert tla.composition(SL(8, 2), None) == SL(8, 2)
    assert str(tla.composition(SL((4, 4), (4, 1)), Int(8))) == "(_4,_2):(_4,_1)"
    # negative strides walk A backwards (C++: _4:_-1); a swizzle on the right moves to the left
    assert str(tla.composition(SL(8, 1), SL(4, -1))) == "_4:_-1"
    assert str(tla.composition(SL(8, 1), tla.Swizzle(1, 0, 1))) == "Sw<1,0,1> o _0 o _8:_1"
    with pytest.raises(ShapeError):
        tla.composition(SL(8, 1), "4")


# ---- complement -----------------------------------------------------------------------------------------------


@given(layouts(max_rank=3, injective=True), st.sampled_from([1, 7, 16, 24, 64, 100]))
def test_complement_is_disjoint_ordered_and_fills_the_cotarget(L, cotarget):
    C = tla.complement(L, cotarget)
    F = tla.filter(L)
    M = tla.make_layout(F, C)
    table = M.table()
    assert np.array_equal(np.sort(table), np.arange(M.size)), "(L, complement) must tile [0, size) exactly"
    assert M.size >= cotarget
    c = C.table()
    assert np.all(np.diff(c) > 0)
    assert not set(c[1:].tolist()) & set(L.table().tolist())


def test_complement_examples():
    assert str(tla.complement(SL(4, 2), Int(24))) == "(_2,_3):(_1,_8)"
    assert str(tla.complement(SL((2, 2), (1, 6)), Int(24))) == "(_3,_2):(_2,_12)"
    assert str(tla.complement(SL(4, 0), Int(24))) == "_24:_1"
    assert str(tla.complement(SL((16,), (1,)), S((128, 128)))) == "_1024:_16"  # a shape cotarget (pycute: error)
    assert str(tla.complement(SL((16,), (2,)), S((6, 4)))) == "_2:_1"
    assert str(tla.complement(SL((2, 4), (1, 6)))) == "_3:_2"


def test_complement_of_strides_that_do_not_divide_follows_cpp():
    """C++ divides 3 // 2 and returns ``_1:_0`` for ``(2,2):(1,3)``: ordered and disjoint, leaving offset 2
    out; layoutkit returns the same (the contract on ``tla.complement`` says so)."""
    assert str(tla.complement(SL((2, 2), (1, 3)))) == "_1:_0"
    assert str(tla.complement(SL((4, 6), (1, 6)))) == "_1:_0"
    assert str(tla.complement(SL((4, 10), (1, 10)))) == "_2:_4"
    assert str(tla.complement(SL((3, 6), (1, 10)), Int(100))) == "(_3,_2):(_3,_60)"


def test_complement_refuses_non_complementable_layouts():
    with pytest.raises(ShapeError, match="overlaps"):
        tla.complement(SL((2, 3), (2, 2)))
    with pytest.raises(ShapeError):
        tla.complement(SL(4, 1), 0)
    with pytest.raises(UnsupportedError, match="negative"):
        tla.complement(tla.Layout(4, -1), 8)


# ---- inverses ---------------------------------------------------------------------------------------------------


@given(layouts(max_rank=4))
def test_right_inverse(L):
    R = tla.right_inverse(L)
    i = np.arange(R.size)
    assert np.array_equal(values_of(L, R.table()), i)


@given(layouts(max_rank=3, injective=True))
def test_left_inverse_of_injective_layouts(L):
    Li = tla.left_inverse(L)
    assert np.array_equal(values_of(Li, L.table()), np.arange(L.size))


@given(layouts(max_rank=3))
def test_left_inverse_is_a_quasi_inverse(L):
    try:
        Li = tla.left_inverse(L)
    except ShapeError:
        return
    t = L.table()
    back = values_of(Li, t)
    assert np.array_equal(values_of(L, back), t) and back.max() < L.size


def test_inverse_examples_where_pycute_differs():
    # a stride-0 mode does not hide the others (pycute: 1:0)
    assert str(tla.right_inverse(SL((2, 4, 4, 6), (4, 1, 0, 8)))) == "(_4,_2,_6):(_2,_1,_32)"
    assert str(tla.left_inverse(SL((2, 4, 4, 6), (4, 1, 0, 8)))) == "(_4,_2,_6):(_2,_1,_32)"
    assert str(tla.left_inverse(SL(4, 2))) == "(_2,_4):(_0,_1)"  # pycute: (2,4):(4,1)
    assert str(tla.left_inverse(SL(6, 0))) == "_6:_0"
    # ties among equal strides follow C++'s exchange sort
    assert str(tla.right_inverse(SL((6, 4, 4), (4, 4, 1)))) == "(_4,_4):(_24,_6)"
    assert str(tla.right_inverse(SL((4, 8), (8, 1)))) == "(_8,_4):(_4,_1)"
    assert str(tla.left_inverse(SL((2, 2), (1, 3)))) == "(_3,_2):(_1,_2)"
    with pytest.raises(ShapeError, match="not a multiple"):
        tla.left_inverse(SL((2, 2), (2, 3)))  # C++ refuses too
    with pytest.raises(ShapeError, match=r"no quasi-inverse: at index 3, L\(i\) = 2 goes back to index 4"):
        tla.left_inverse(SL((2, 2), (1, 1)))  # C++ returns _2:_2, which maps L(3) = 2 outside the domain


# ---- divides -----------------------------------------------------------------------------------------------------


@given(layouts(max_rank=3), layouts(max_rank=2, injective=True))
def test_logical_divide_values(A, T):
    try:
        D = tla.logical_divide(A, T)
    except ShapeError:
        return
    BC = tla.make_layout(T, tla.complement(T, tla.coalesce(A).shape))
    assert np.array_equal(D.table(), values_of(A, BC.table()))
    assert D.size == BC.size >= A.size
    assert np.array_equal(D.mode(0).table(), tla.composition(A, T).table())
    Z = tla.zipped_divide(A, T)
    assert np.array_equal(np.sort(Z.table()), np.sort(D.table())) and Z.rank == 2


@given(layouts(max_rank=3, pow2=True), layouts(max_rank=2, pow2=True, injective=True))
def test_divides_of_power_of_two_layouts(A, T):
    assume(T.cosize <= A.size)
    D = tla.logical_divide(A, T)
    assert D.size == A.size and D.mode(0).size == T.size
    assert np.array_equal(np.sort(D.table()), np.sort(A.table()))


def test_divide_examples():
    A = SL((128, 128), (1, 128))
    T = (Int(16), Int(16))
    assert str(tla.logical_divide(A, T)) == "((_16,_8),(_16,_8)):((_1,_16),(_128,_2048))"
    assert str(tla.zipped_divide(A, T)) == "((_16,_16),(_8,_8)):((_1,_128),(_16,_2048))"
    assert str(tla.tiled_divide(A, T)) == "((_16,_16),_8,_8):((_1,_128),_16,_2048)"
    assert str(tla.flat_divide(A, T)) == "(_16,_16,_8,_8):(_1,_128,_16,_2048)"
    assert str(tla.logical_divide(SL((4, 2, 3), (2, 1, 8)), SL(4, 2))) == "((_2,_2),(_2,_3)):((_4,_1),(_2,_8))"
    tile = tla.zipped_divide(SL((12, 32), (32, 1)), (SL((3, 2), (1, 6)), SL(8, 1)))
    assert str(tile) == "(((_3,_2),_8),(_2,_4)):(((_32,_192),_1),(_96,_8))"
    # a non-dividing tile rounds up the rest mode (C++ ceil semantics; the last mode is unbounded)
    assert str(tla.logical_divide(SL(10, 1), SL(4, 1))) == "(_4,_3):(_1,_4)"
    with pytest.raises(ShapeError, match="tiler has 3 modes"):
        tla.logical_divide(A, (2, 2, 2))
    with pytest.raises(ShapeError, match="rank-2"):
        tla.zipped_divide(SL((8, 8, 4), (1, 8, 64)), (Int(4), None, Int(2)))  # C++ refuses too


# ---- products -------------------------------------------------------------------------------------------------------


@given(layouts(max_rank=2, injective=True), layouts(max_rank=2, injective=True))
def test_logical_product_values(A, B):
    try:
        P = tla.logical_product(A, B)
    except ShapeError:
        return
    assert P.mode(0) == tla.Layout(A.shape, A.stride)
    assert P.size == A.size * B.size
    C = tla.complement(A, A.size * B.cosize)
    want = A.table()[:, None] + values_of(C, B.table())[None, :]
    assert np.array_equal(P.table(), want.T.reshape(-1))
    assert len(set(P.table().tolist())) == P.size  # injective blocks, injective tiler -> injective product
    for op in (tla.blocked_product, tla.raked_product):
        Q = op(A, B)
        assert Q.rank == max(A.rank, B.rank) and Q.size == P.size
        assert np.array_equal(np.sort(Q.table()), np.sort(P.table()))


def test_product_examples():
    assert str(tla.logical_product(SL((2, 2), (1, 2)), Int(3))) == "((_2,_2),_3):((_1,_2),_4)"  # pycute divides
    assert str(tla.logical_product(SL((2, 5), (5, 1)), SL((3, 4), (1, 3)))) == "((_2,_5),(_3,_4)):((_5,_1),(_10,_30))"
    assert str(tla.blocked_product(SL((2, 2), (1, 2)), SL((3, 4), (1, 3)))) == "((_2,_3),(_2,_4)):((_1,_4),(_2,_12))"
    assert str(tla.raked_product(SL((2, 2), (1, 2)), SL((3, 4), (1, 3)))) == "((_3,_2),(_4,_2)):((_4,_1),(_12,_2))"
    assert str(tla.tiled_product(SL((2, 2), (1, 2)), SL((3, 4), (1, 3)))) == "((_2,_2),_3,_4):((_1,_2),_4,_12)"
    assert str(tla.flat_product(SL((2, 2), (1, 2)), SL((3, 4), (1, 3)))) == "(_2,_2,_3,_4):(_1,_2,_4,_12)"
    assert str(tla.zipped_product(SL((2, 2), (1, 2)), (SL(2, 1), SL(2, 1)))) == "((_2,_2),(_2,_2)):((_1,_2),(_2,_1))"
    assert str(tla.blocked_product(SL(4, 1), SL(3, 1))) == "((_4,_3)):((_1,_4))"
    assert str(tla.blocked_product(SL(2, 2), SL(4, 1))) == "((_2,(_2,_2))):((_2,(_1,_4)))"  # measured from C++
    with pytest.raises(ShapeError):
        tla.logical_product(SL((2, 2), (1, 2)), (SL(2, 1), SL(3, 1)))  # C++ refuses too


# ---- swizzles -------------------------------------------------------------------------------------------------------


@given(st.integers(0, 3), st.integers(0, 3), st.integers(-5, 5))
def test_swizzle_is_an_involution_and_a_bijection(b, m, s):
    assume(abs(s) >= b)
    sw = tla.Swizzle(b, m, s)
    x = np.arange(sw.size)
    y = sw(x)
    assert np.array_equal(np.sort(y), x) and np.array_equal(sw(y), x)
    assert all(sw(int(v)) == int(w) for v, w in zip(x[:50], y[:50]))


def test_swizzled_layouts():
    sw = tla.Swizzle(3, 3, 3)
    inner = SL((8, 64), (64, 1))
    S8 = tla.composition(sw, inner)
    assert isinstance(S8, tla.ComposedLayout) and str(S8) == "Sw<3,3,3> o _0 o (_8,_64):(_64,_1)"
    assert S8(3, 9) == 209 and S8.size == 512 and S8.shape == inner.shape and S8.origin_shape == (8, 64)
    assert np.array_equal(S8.table(), sw(inner.table()))
    M = S8.to_layout()
    assert np.array_equal(M.table()[..., 0], S8.offset_table())
    assert M.is_bijective()
    inv = M.inverse()  # xor swizzles invert in closed form
    assert np.array_equal(inv.apply(M.table()), np.moveaxis(np.indices((8, 64)), 0, -1))
    # the algebra acts on the inner layout
    D = tla.zipped_divide(S8, (Int(8), Int(8)))
    assert isinstance(D, tla.ComposedLayout) and str(D.inner) == "((_8,_8),(_1,_8)):((_64,_1),(_0,_8))"
    assert np.array_equal(np.sort(D.table()), np.arange(512))
    T = tla.composition(S8, (Int(4), Int(8)))
    assert T(1, 1) == S8(1, 1) and T.size == 32
    R = tla.right_inverse(S8)
    assert np.array_equal(S8(R(np.arange(512))), np.arange(512))
    assert tla.coalesce(S8).inner == tla.coalesce(inner) and tla.complement(S8, 1024) == tla.complement(inner, 1024)
    assert tla.make_composed_layout(sw, 0, inner) == S8 and hash(S8) == hash(tla.composition(sw, inner))


def test_swizzle_errors():
    with pytest.raises(ShapeError, match="shift"):
        tla.Swizzle(3, 0, 2)
    with pytest.raises(ShapeError):
        tla.Swizzle(-1, 0, 2)
    with pytest.raises(LayoutError):
        tla.Swizzle(2, 0, 2)(-1)
    with pytest.raises(ShapeError):
        tla.ComposedLayout(tla.Swizzle(1, 0, 1), 0, "layout")


def test_swizzle_expression_is_symbolic():
    sw = tla.Swizzle(2, 0, 2)
    x = lk.Var("_i", 16)
    e = sw(x)
    assert isinstance(e, lk.Expr)
    layout = lk.Layout.from_exprs([16], [e])
    assert np.array_equal(layout.table()[:, 0], sw(np.arange(16)))
