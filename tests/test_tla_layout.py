"""TLA layouts: IntTuples, (shape, stride, origin_shape), crd2offset, get_tile_layout, printing,
to_layout -- the seed's examples and the CATLASS TLA documentation examples (seeds/002)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import layoutkit as lk
from layoutkit import tla
from layoutkit.errors import CoordinateError, LayoutError, ShapeError, UnsupportedError

# ---- IntTuples --------------------------------------------------------------------------------------


def test_static_ints():
    assert tla._3 == 3 and tla.Int(3) == tla._3 and hash(tla._3) == hash(3)
    assert isinstance(tla._256, tla.Int) and isinstance(tla._1000, tla.Int)
    assert repr(tla._12) == "_12" and str(tla._0) == "_0"
    assert isinstance(tla._4 * tla._2, tla.Int) and tla._4 * tla._2 == 8
    assert type(tla._4 * 2) is int and type(2 * tla._4) is int
    assert isinstance(tla._7 // tla._2, tla.Int) and isinstance(-tla._2, tla.Int)
    from layoutkit.tla import _16

    assert _16 == 16 and isinstance(_16, tla.Int)
    with pytest.raises(AttributeError):
        tla._x  # noqa: B018
    with pytest.raises(AttributeError):
        tla._01  # noqa: B018
    with pytest.raises(ShapeError):
        tla.Int(2.5)
    assert pickle.loads(pickle.dumps(tla._5)) == 5 and isinstance(pickle.loads(pickle.dumps(tla._5)), tla.Int)


def test_int_tuple_structure():
    s = ((16, 7), (tla._16, 7), 3)
    assert tla.rank(s) == 3 and tla.rank(5) == 1
    assert tla.depth(s) == 2 and tla.depth(5) == 0 and tla.depth((1, 2)) == 1
    assert tla.get(s, 1, 0) == 16 and isinstance(tla.get(s, 1, 0), tla.Int)
    assert tla.get(5, 0) == 5
    assert tla.product(s) == 16 * 7 * 16 * 7 * 3 and tla.product(()) == 1
    assert tla.product_each(s) == (112, 112, 3)
    assert tla.flatten(s) == (16, 7, 16, 7, 3) and tla.flatten(9) == 9
    assert tla.unflatten((1, 2, 3, 4, 5), s) == ((1, 2), (3, 4), 5)
    assert tla.congruent(s, ((1, 2), (3, 4), 5)) and not tla.congruent(s, (1, 2, 3))
    assert tla.weakly_congruent((1, 2, 3), s) and not tla.weakly_congruent(s, (1, 2, 3))
    assert tla.compatible(24, (4, 6)) and not tla.compatible((4, 6), (6, 4))
    assert tla.ceil_div((6, 4), 4) == (2, 4) and tla.ceil_div(10, 4) == 3
    assert tla.compact_col_major((4, (2, 3))) == (1, (4, 8))
    assert tla.compact_row_major((4, (2, 3))) == (6, (3, 1))
    with pytest.raises(ShapeError, match="out of range"):
        tla.get((2, 3), 5)


def test_make_shape_stride_coord():
    assert tla.MakeShape(tla.MakeShape(16, 2), tla.MakeShape(16, 3)) == ((16, 2), (16, 3))
    assert tla.MakeStride(tla._12, tla._1) == (12, 1)
    assert tla.MakeCoord(1, 5) == (1, 5)
    assert tla.make_shape(2, [3, 4]) == (2, (3, 4)) and tla.make_shape([2, 3]) == ((2, 3),)
    assert tla.make_shape(np.int64(4)) == (4,) and type(tla.make_shape(np.int64(4))[0]) is int
    with pytest.raises(ShapeError, match="leaf"):
        tla.make_shape(2, "3")
    with pytest.raises(ShapeError):
        tla.make_shape(-1)
    with pytest.raises(ShapeError):
        tla.make_coord(True)
    with pytest.raises(ShapeError):
        tla.make_stride(1.5)


def test_printing():
    assert tla.to_str((tla._2, 4)) == "(_2,4)"
    assert tla.to_str(((16, 2), (16, 3))) == "((16,2),(16,3))"
    assert tla.to_str((tla._8,)) == "(_8)"
    assert str(tla.make_layout(tla.make_shape(tla._2, 4), tla.make_stride(tla._12, tla._1))) == "(_2,4):(_12,_1)"
    assert str(tla.Layout(8, 1)) == "8:1"
    t = tla.get_tile_layout(tla.make_layout(((4, 2), (4, 3)), ((4, 16), (1, 32)), (8, 12)), (4, 4), (6, 10))
    assert repr(t) == "((4,1),(4,1)):((4,16),(1,32)) (origin (2,2))"


# ---- the seed's examples ----------------------------------------------------------------------------


def test_seed_crd2offset_37():
    assert tla.crd2offset((1, 5), ((4, 2), (4, 3)), ((4, 16), (1, 32))) == 37
    shape = tla.make_shape(tla.make_shape(tla._4, tla._2), tla.make_shape(tla._4, tla._3))
    stride = tla.make_stride(tla.make_stride(tla._4, tla._16), tla.make_stride(tla._1, tla._32))
    assert tla.crd2offset(tla.MakeCoord(1, 5), shape, stride) == 37
    # row 1 -> (1 % 4) * 4 + (1 // 4) * 16 = 4; col 5 -> (5 % 4) * 1 + (5 // 4) * 32 = 33
    assert tla.make_layout(shape, stride)(1, 5) == 4 + 33


def test_seed_tail_tile_origin():
    a = tla.Layout(((4, 2), (4, 3)), ((4, 16), (1, 32)), (8, 12))
    a0 = tla.GetTileLayout(a, tla.MakeShape(4, 4), tla.MakeCoord(6, 10))
    assert a0.origin_shape == (2, 2)
    assert a0.stride == a.stride
    assert a0.shape == ((4, 1), (4, 1))


def test_seed_fractal_tile_shape():
    zn = tla.make_layout_from_tag("zN", "float16", 100, 100)
    assert zn.shape == ((16, 7), (16, 7)) and zn.origin_shape == (100, 100)
    tile = tla.get_tile_layout(zn, (32, 48), (0, 0))
    assert tile.shape == ((16, 2), (16, 3))
    assert tla.to_str(tile.shape) == "((_16,2),(_16,3))"
    assert tile.stride == zn.stride and tile.origin_shape == (32, 48)


def test_origin_shape_is_clipped_to_what_is_left():
    zn = tla.make_layout_from_tag("zN", "float16", 100, 100)
    assert tla.get_tile_layout(zn, (32, 48), (32, 48)).origin_shape == (32, 48)  # interior
    assert tla.get_tile_layout(zn, (32, 48), (96, 96)).origin_shape == (4, 4)  # tail
    assert tla.get_tile_layout(zn, (32, 48), (100, 0)).origin_shape == (0, 48)  # past the end
    assert tla.get_tile_layout(zn, (32, 48), (128, 160)).origin_shape == (0, 0)
    tail = tla.get_tile_layout(zn, (32, 48), (96, 96))
    assert tail.to_layout().input_shape == (4, 4)
    with pytest.raises(ShapeError, match="empty"):
        tla.get_tile_layout(zn, (32, 48), (100, 0)).to_layout()


def test_tile_accepts_parent_coordinates():
    """The last sub-mode of each mode is unbounded, so a tile maps its parent's absolute coordinates
    to the parent's offsets (the tile view carries the parent's stride)."""
    zn = tla.make_layout_from_tag("zN", "float16", 100, 100)
    tile = tla.get_tile_layout(zn, (32, 48), (32, 48))
    rows, cols = np.meshgrid(np.arange(32, 64), np.arange(48, 96), indexing="ij")
    assert np.array_equal(tile(rows, cols), zn(rows, cols))


def test_tile_of_flat_layouts():
    rm = tla.make_layout_from_tag("RowMajor", "float32", 100, 60)
    t = tla.get_tile_layout(rm, (16, 32), (96, 40))
    assert t.shape == (16, 32) and t.stride == (60, 1) and t.origin_shape == (4, 20)
    v = tla.make_layout(128)
    tv = tla.get_tile_layout(v, (32,), (112,))
    assert tv.shape == (32,) and tv.origin_shape == (16,)
    # an nZ parent (C0 inner rows) rounds the tile up to whole fractals
    nz = tla.make_layout_from_tag("nZ", "float32", 64, 64)
    assert tla.get_tile_layout(nz, (20, 20), (0, 0)).shape == ((8, 3), (16, 2))


def test_get_tile_layout_errors():
    zn = tla.make_layout_from_tag("zN", "float16", 64, 64)
    with pytest.raises(ShapeError, match="rank"):
        tla.get_tile_layout(zn, (16, 16, 16), (0, 0, 0))
    with pytest.raises(CoordinateError, match="rank 2"):
        tla.get_tile_layout(zn, (16, 16), (0,))
    with pytest.raises(ShapeError, match="flat"):
        tla.get_tile_layout(zn, ((16, 1), 16), (0, 0))
    with pytest.raises(CoordinateError, match="negative"):
        tla.get_tile_layout(zn, (16, 16), (-1, 0))
    with pytest.raises(ShapeError):
        tla.get_tile_layout(zn, (0, 16), (0, 0))
    deep = tla.Layout(((2, (2, 2)), 4), ((1, (2, 4)), 8))
    with pytest.raises(UnsupportedError, match="neither"):
        tla.get_tile_layout(deep, (4, 4), (0, 0))


# ---- CATLASS documentation examples (seed 002) --------------------------------------------------------


def test_doc_make_layout_examples():
    w2xh4 = tla.MakeLayout(tla.MakeShape(tla._2, 4), tla.MakeStride(tla._12, tla._1))
    assert str(w2xh4) == "(_2,4):(_12,_1)" and w2xh4.origin_shape == (2, 4)
    w32xh48 = tla.MakeLayout(tla.MakeShape(tla.MakeShape(16, 2), tla.MakeShape(16, 3)),
                             tla.MakeStride(tla.MakeStride(16, 256), tla.MakeStride(1, 512)))
    assert str(w32xh48) == "((16,2),(16,3)):((16,256),(1,512))"
    assert w32xh48.origin_shape == (32, 48)  # (16*2, 16*3)
    explicit = tla.MakeLayout(tla.MakeShape(tla._2, 4), tla.MakeStride(tla._12, tla._1), tla.MakeShape(2, 4))
    assert explicit == w2xh4
    explicit48 = tla.MakeLayout(w32xh48.shape, w32xh48.stride, tla.MakeShape(32, 48))
    assert explicit48 == w32xh48 and hash(explicit48) == hash(w32xh48)
    rm = tla.make_layout_from_tag("RowMajor", "float32", 2, 4)  # MakeLayout<float, RowMajor>(2, 4)
    assert str(rm) == "(2,4):(4,_1)" and rm.origin_shape == (2, 4)
    vec = tla.MakeLayout(128)  # VectorLayout
    assert str(vec) == "(128):(_1)" and vec.origin_shape == (128,) and tla.is_vector(vec)


def test_doc_2x3_row_and_column_major_tables():
    row = tla.make_layout((2, 3), (3, 1))
    col = tla.make_layout((2, 3), (1, 2))
    assert row.offset_table().tolist() == [[0, 1, 2], [3, 4, 5]]
    assert col.offset_table().tolist() == [[0, 2, 4], [1, 3, 5]]
    assert [row(i, j) for i in range(2) for j in range(3)] == [0, 1, 2, 3, 4, 5]
    assert [col(i, j) for i, j in [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]] == [0, 1, 2, 3, 4, 5]


def test_doc_nested_zn_example():
    """``((4,2),(4,3)):((4,16),(1,32))``: 4-row inner blocks repeated twice, 4-column blocks three
    times; logical size (8, 12)."""
    a = tla.make_layout(((4, 2), (4, 3)), ((4, 16), (1, 32)))
    assert a.origin_shape == (8, 12) and a.rank == 2 and a.depth == 2
    table = a.offset_table()
    i, j = np.meshgrid(np.arange(8), np.arange(12), indexing="ij")
    assert np.array_equal(table, (i % 4) * 4 + (i // 4) * 16 + (j % 4) + (j // 4) * 32)
    assert sorted(table.ravel().tolist()) == list(range(96))


# ---- Layout object ------------------------------------------------------------------------------------


def test_layout_construction_and_accessors():
    L = tla.Layout((4, (2, 3)), (2, (1, 8)))
    assert L.shape == (4, (2, 3)) and L.stride == (2, (1, 8)) and L.origin_shape == (4, 6)
    assert L.rank == 2 and len(L) == 2 and L.depth == 2 and L.size == 24 and L.cosize == 6 + 1 + 16 + 1
    assert str(L[1]) == "(2,3):(1,8)" and str(L.mode(1, 0)) == "2:1"
    assert [str(m) for m in L] == ["4:2", "(2,3):(1,8)"]
    assert tla.make_layout((4, 8)).stride == (1, 4)
    assert str(tla.make_layout(tla.make_layout(4, 2), tla.make_layout((2, 2), (1, 8)))) == "(4,(2,2)):(2,(1,8))"
    assert tla.Layout((2, 3), (3, 1), (2, 2)).origin_shape == (2, 2)
    assert tla.Layout(8, 1).origin_shape == (8,)


def test_layout_validation():
    with pytest.raises(ShapeError, match="congruent"):
        tla.Layout((4, 2), (1, (2, 2)))
    with pytest.raises(ShapeError, match=">= 1"):
        tla.Layout((4, 0), (1, 4))
    with pytest.raises(ShapeError, match="origin_shape"):
        tla.Layout((4, 2), (1, 4), (4,))
    with pytest.raises(ShapeError, match="origin_shape"):
        tla.Layout((4, 2), (1, 4), (4, (1, 2)))
    with pytest.raises(ShapeError):
        tla.make_layout((4, 2), (1, 4), (4, 2), (1,))
    with pytest.raises(ShapeError):
        tla.Layout("4", 1)


def test_layout_is_immutable_and_hashable():
    L = tla.make_layout((4, 8), (8, 1))
    with pytest.raises(AttributeError):
        L.shape = (2, 2)
    with pytest.raises(AttributeError):
        L.origin_shape = (1, 1)
    with pytest.raises(AttributeError):
        L.extra = 1
    d = {L: "a", tla.make_layout((4, 8), (8, 1)): "b"}
    assert len(d) == 1
    assert L != tla.make_layout((4, 8), (8, 1), (3, 8))  # the origin shape is part of a TLA layout
    assert pickle.loads(pickle.dumps(L)) == L
    assert L.with_origin_shape((2, 8)).origin_shape == (2, 8) and L.origin_shape == (4, 8)


def test_coordinates_and_errors():
    L = tla.make_layout(((4, 2), (4, 3)), ((4, 16), (1, 32)))
    assert L((1, 2), (3, 1)) == 1 * 4 + 2 * 16 + 3 + 32
    assert L(37) == L((37 % 8), 37 // 8)  # a 1-D index is colexicographic over the top-level modes
    with pytest.raises(CoordinateError, match="rank 3"):
        L(1, 2, 3)
    with pytest.raises(CoordinateError, match="negative"):
        L(-1, 0)
    with pytest.raises(CoordinateError, match="expected a non-negative integer"):
        L(1.5, 0)
    with pytest.raises(CoordinateError, match="the shape is the integer"):
        tla.make_layout((4, 8))((1, 2), 0)
    with pytest.raises(CoordinateError):
        L()
    with pytest.raises(ShapeError, match="congruent"):
        tla.crd2offset((1, 1), (4, 4), (1,))


def test_vectorised_evaluation_matches_scalar():
    L = tla.make_layout_from_tag("nZ", "int8", 70, 40)
    i, j = np.meshgrid(np.arange(70), np.arange(40), indexing="ij")
    got = L(i, j)
    want = np.array([[L(int(a), int(b)) for b in range(40)] for a in range(70)])
    assert np.array_equal(got, want) and np.array_equal(L.offset_table(), want)
    assert np.array_equal(L.table(), np.array([L(k) for k in range(L.size)]))


def test_idx2crd_and_crd2idx_follow_cpp():
    # integer index: colexicographic, last mode unbounded (pycute wraps it: (1, 0))
    assert tla.idx2crd(17, (4, 2)) == (1, 4)
    # tuple index: mode by mode (pycute uses the global prefix strides: ((1, 2), 0))
    assert tla.idx2crd((5, 1), ((2, 3), 4)) == ((1, 2), 1)
    assert tla.idx2crd(23, ((2, 3), 4)) == ((1, 2), 3)
    assert tla.idx2crd(17, (4, 2), (1, 4)) == (1, 0)  # with strides: (i // d) % s on every mode
    assert tla.crd2idx(((1, 2), 3), ((2, 3), 4)) == 23
    assert tla.crd2idx((5, 1), ((2, 3), 4)) == 11
    assert tla.crd2crd(13, (4, 8), (2, 16)) == (1, 6)
    for i in range(48):
        assert tla.crd2idx(tla.idx2crd(i, ((2, 3), (2, 4))), ((2, 3), (2, 4))) == i
    with pytest.raises(CoordinateError, match="rank"):
        tla.idx2crd((1, 2, 3), (4, 4))


# ---- to_layout -----------------------------------------------------------------------------------------


def test_to_layout_is_symbolic_and_exact():
    L = tla.make_layout(((4, 2), (4, 3)), ((4, 16), (1, 32)))
    M = L.to_layout()
    assert isinstance(M, lk.Layout) and M.input_shape == (8, 12) and len(M.forward_index) == 1
    assert str(M) == "Layout((8, 12) -> (96,), transform: (_i, _j) -> (_j // 4 * 32 + _i * 4 + _j % 4,))"
    assert np.array_equal(M.table()[..., 0], L.offset_table())
    assert M.prove_bijective("isl").verdict and M.prove_bijective("enumerate").verdict
    assert M.map_forward_index([1, 5]) == (37,)


def test_to_layout_over_the_origin_shape():
    zn = tla.make_layout_from_tag("zN", "bfloat16", 100, 40)
    M = zn.to_layout()
    assert M.input_shape == (100, 40)
    assert np.array_equal(M.table()[..., 0], zn.offset_table())
    assert not M.is_bijective()  # the padding rows/cols are never addressed
    padded = tla.make_layout_from_tag("zN", "bfloat16", 112, 48).to_layout()
    assert padded.prove_bijective("isl").verdict
    vec = tla.make_layout(16).to_layout()
    assert vec.input_shape == (16,) and str(vec) == "Layout((16,) -> (16,), transform: (_i,) -> (_i,))"


def test_size_cosize_helpers():
    L = tla.make_layout((4, 8), (8, 1))
    assert tla.size(L) == 32 and tla.cosize(L) == 32 and tla.size((2, (3, 4))) == 24
    assert tla.rank(L) == 2 and tla.depth(L) == 1 and tla.shape(L) == (4, 8) and tla.stride(L) == (8, 1)
    assert tla.origin_shape(L) == (4, 8)
    with pytest.raises(LayoutError):
        tla.cosize((4, 8))


@pytest.mark.parametrize("shape, stride", [
    ((1024, 1024), (1, 1024)),
    (((8, 16), (8, 16)), ((1, 64), (8, 1024))),
    ((4, (3, 5), 7), (35, (1, 3), -140)),
    ((6, 6), (0, 1)),
])
def test_layout_of_one_int64_array_per_mode_matches_the_scalar_calls(shape, stride):
    L = tla.make_layout(shape, stride)
    rng = np.random.default_rng(7)
    cols = [rng.integers(0, tla.size(s), 200, dtype=np.int64) for s in shape]
    got = L(*cols)
    assert got.dtype == np.int64
    assert got.tolist() == [L(*(int(c[k]) for c in cols)) for k in range(200)]


def test_layout_of_arrays_still_refuses_negatives_and_stays_exact():
    L = tla.make_layout((4, 4), (1, 2**61))
    with pytest.raises(lk.CoordinateError):
        L(np.array([0, -1]), np.array([0, 1]))
    near = L(np.array([0, 1], dtype=np.int64), np.array([3, 3], dtype=np.int64))  # 3 * 2**61 + 1 < 2**63
    assert near.tolist() == [3 * 2**61, 3 * 2**61 + 1]
    past = tla.make_layout((4, 4), (1, 2**62))
    with pytest.raises(lk.IntegerOverflowError):
        past(np.array([0, 1], dtype=np.int64), np.array([3, 3], dtype=np.int64))
