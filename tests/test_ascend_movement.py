"""Ascend data movement models against element-by-element reference loops (the worked vectors of
docs/reference.md#ascend-data-movement-and-passes): ND2NZ with every Nd2NzParams field, bursts, the UB
scatter, L1 -> L0, fixpipe, OOB fills, tail tiles."""

from __future__ import annotations

import numpy as np
import pytest

from layoutkit.errors import CoordinateError, DtypeError, ShapeError, UnsupportedError
from layoutkit.targets import ascend
from layoutkit.targets.ascend import Nd2NzParams


def nd2nz_reference(src, dst, p: Nd2NzParams, c0):
    """The formula of the reference page, one element at a time (test oracle only)."""
    dst = dst.copy()
    for i in range(p.nd_num):
        for r in range(p.n_value):
            for c in range(-(-p.d_value // c0) * c0):
                at = i * p.dst_nz_matrix_stride + (c // c0) * p.dst_nz_c0_stride * c0 + r * p.dst_nz_n_stride * c0
                at += c % c0
                dst[at] = src[i * p.src_nd_matrix_stride + r * p.src_d_value + c] if c < p.d_value else 0
    return dst


@pytest.mark.parametrize(
    "dtype,params",
    [
        (np.float16, Nd2NzParams(1, 10, 8, 0, 8, 16, 1, 0)),
        (np.float32, Nd2NzParams(2, 5, 11, 70, 13, 8, 1, 256)),  # pitch 13 > dValue, 2 matrices
        (np.float16, Nd2NzParams(3, 4, 20, 100, 25, 8, 2, 400)),  # dstNzNStride 2: every other C0 row
        (np.int8, Nd2NzParams(1, 3, 40, 0, 40, 16, 1, 0)),
    ],
)
def test_nd2nz_matches_the_reference_formula(dtype, params):
    c0 = 32 // np.dtype(dtype).itemsize
    src = (np.arange(1, 1 + 512) % 97 + 1).astype(dtype)
    dst = np.full(2048, -7, dtype=dtype)
    want = nd2nz_reference(src, dst, params, c0)
    got = ascend.nd2nz(src, dst.copy(), params)
    assert np.array_equal(got, want)  # a data movement: elements are copied, never added, so bitwise holds
    back = ascend.nz2nd(got, params)
    ref = np.stack([
        src[i * params.src_nd_matrix_stride + np.arange(params.n_value)[:, None] * params.src_d_value
            + np.arange(params.d_value)]
        for i in range(params.nd_num)
    ])
    assert np.array_equal(back, ref)


def test_nd2nz_worked_vector_zero_fill_of_the_last_block():
    # GM (10, 8) bf16 (held as uint16) into a 16 x 16 NZ: cols 8..15 of rows < 10 are zero, rows >= 10 untouched.
    src = np.arange(1, 81, dtype=np.uint16)
    dst = np.full(256, 0xFFFF, dtype=np.uint16)
    ascend.nd2nz(src, dst, Nd2NzParams.for_matrix(10, 8), dtype="bfloat16")
    img = dst.reshape(16, 16)
    assert np.array_equal(img[:10, :8], src.reshape(10, 8))
    assert (img[:10, 8:] == 0).all() and (img[10:] == 0xFFFF).all()


def test_nd2nz_errors():
    with pytest.raises(CoordinateError):
        ascend.nd2nz(np.zeros(16, np.float16), np.zeros(16, np.float16), Nd2NzParams.for_matrix(2, 16))
    with pytest.raises(DtypeError):
        ascend.nd2nz(np.zeros(16, np.float32), np.zeros(256, np.float32), Nd2NzParams.for_matrix(1, 16), "float16")
    with pytest.raises(ShapeError):
        ascend.nd2nz(np.zeros(16, np.float16), np.zeros(256, np.float16), Nd2NzParams(1, -1, 16, 0, 16, 16, 1, 0))


def test_burst_copy_reference():
    src = np.arange(8 * 16, dtype=np.float16)
    dst = np.full(12 * 16, -1, dtype=np.float16)
    ascend.burst_copy(src, dst, n_burst=3, len_burst=2, src_gap=1, dst_gap=2, dst_offset=16)
    want = np.full(12 * 16, -1, dtype=np.float16)
    for b in range(3):
        s, d = b * 3 * 16, 16 + b * 4 * 16
        want[d : d + 32] = src[s : s + 32]
    assert np.array_equal(dst, want)
    with pytest.raises(CoordinateError):
        ascend.burst_copy(src, dst, n_burst=5, len_burst=2, src_gap=1)


def test_ub_scatter_and_insert_nd2nz():
    a = (np.arange(5 * 32) + 1).astype(np.float16).reshape(5, 32)
    s = ascend.ub_scatter_compact_nz(a)
    assert s.size == 2 * 6 * 16
    for r in range(5):
        for c in range(32):
            assert s[(c // 16) * 6 * 16 + r * 16 + c % 16] == a[r, c]
    assert (s.reshape(2, 6, 16)[:, 5] == 0).all()  # the spare row
    l1 = np.full(2 * 16 * 16, -1, np.float16)
    ascend.insert_nd2nz(a, l1, full_rows=16)
    img = l1.reshape(2, 16, 16)
    assert np.array_equal(ascend.nz2nd_matrix(img[:, None], 5, 32), a)
    assert (img[:, 5:] == -1).all()
    with pytest.raises(DtypeError, match="16/32-bit floats"):
        ascend.ub_scatter_compact_nz(np.zeros((2, 32), np.int8))
    with pytest.raises(DtypeError):
        ascend.ub_scatter_compact_nz(np.zeros((2, 32), np.int16))
    with pytest.raises(ShapeError, match="multiple of C0"):
        ascend.ub_scatter_compact_nz(np.zeros((2, 20), np.float16))


def test_l1_to_l0_and_fixpipe():
    rng = np.random.default_rng(0)
    a = rng.integers(-8, 8, (32, 48)).astype(np.float16)
    b = rng.integers(-8, 8, (48, 16)).astype(np.float16)
    la = ascend.make_ascend_nz_layout((32, 48), "float16")
    lb = ascend.make_ascend_major_mn_layout((48, 16), "float16")
    l1a = ascend.to_storage(a, ascend.fractal_info(la))
    l1b = ascend.to_storage(b, ascend.fractal_info(lb))
    l0a = ascend.load_l1_to_l0(l1a, la, la)
    l0b = ascend.load_l1_to_l0(l1b, lb, lb)
    # a MAD on the logical views, through the L0C fractal, out to GM with fixpipe
    A = ascend.from_storage(l0a, ascend.fractal_info(la))
    B = ascend.from_storage(l0b, ascend.fractal_info(lb))
    lc = ascend.make_ascend_l0c_layout((32, 16))
    acc = ascend.to_storage((A.astype(np.float32) @ B.astype(np.float32)), ascend.fractal_info(lc))
    gm = np.zeros((40, 20), np.float32)
    ascend.fixpipe_l0c_to_gm(acc, lc, gm, gm_coord=(20, 8))
    want = np.zeros((40, 20), np.float32)
    want[20:40, 8:20] = (a.astype(np.float32) @ b.astype(np.float32))[:20, :12]
    assert np.array_equal(gm, want)
    with pytest.raises(UnsupportedError):
        ascend.fixpipe_l0c_to_gm(l0a, la, gm)


def test_oob_fills_worked_vector():
    """GM (10, 8) bf16 into L1 (16, 32) MajorK: copy 10 x 8, fills (0,16)+(16,16) and (10,0)+(6,32)."""
    L = ascend.make_ascend_nz_layout((16, 32), "bfloat16")
    valid = (ascend.clamp_valid(16, 10, 0, 16, 0), ascend.clamp_valid(32, 8, 0, 32, 0))
    assert valid == (10, 8)
    fills = ascend.oob_padding_fills(valid, (16, 32), L)
    assert [f.region() for f in fills] == [((0, 16), (16, 16)), ((10, 6), (0, 32))]
    assert ascend.oob_padding_fills((16, 32), (16, 32), L) == []
    mn = ascend.make_ascend_major_mn_layout((32, 16), "bfloat16")
    assert [f.region() for f in ascend.oob_padding_fills((8, 10), (32, 16), mn)] == [
        ((16, 16), (0, 16)), ((0, 32), (10, 6))
    ]


def test_load_tile_worked_vector():
    gm = (np.arange(10 * 8) + 1).astype(np.float32).reshape(10, 8)
    gm16 = gm.astype(np.float16)
    L = ascend.make_ascend_nz_layout((16, 32), "float16")
    info = ascend.fractal_info(L)
    img = ascend.from_storage(ascend.load_tile(gm16, L, (16, 32), (0, 0), pad_value=0), info)
    assert np.array_equal(img[:10, :8], gm16) and (img[:10, 8:] == 0).all() and (img[10:] == 0).all()
    # no clamping (the tile fits): the rows past 20 of a 20-row tile are never written
    big = np.ones((64, 64), np.float16)
    L20 = ascend.make_ascend_nz_layout((20, 24), "float16")
    img = ascend.from_storage(ascend.load_tile(big, L20, (20, 24), (8, 8)), ascend.fractal_info(L20))
    assert img.shape == (32, 32)
    assert (img[:20, :24] == 1).all() and (img[:20, 24:] == 0).all() and np.isnan(img[20:]).all()
    with pytest.raises(ShapeError):
        ascend.load_tile(big, L20, (16, 24), (0, 0))
    with pytest.raises(UnsupportedError):
        ascend.load_tile(big, ascend.make_ascend_l0c_layout((16, 16)), (16, 16), (0, 0))
    with pytest.raises(CoordinateError):
        ascend.load_tile(big, L20, (20, 24), (-1, 0))


def test_load_tile_tail_with_pad_value_and_int_sentinel():
    gm = np.arange(1, 1 + 40 * 50, dtype=np.int32).reshape(40, 50)
    L = ascend.make_ascend_nz_layout((32, 32), "int32")
    img = ascend.from_storage(ascend.load_tile(gm, L, (32, 32), (32, 32), pad_value=7), ascend.fractal_info(L))
    assert np.array_equal(img[:8, :18], gm[32:, 32:])
    assert (img[:8, 18:24] == 0).all()  # DMA zero fill of the partial 32-byte block
    assert (img[:, 24:] == 7).all() and (img[8:, :] == 7).all()
    assert ascend.default_sentinel(np.int32) == np.iinfo(np.int32).min


def test_views_and_pickling():
    import pickle

    a = np.arange(64 * 64, dtype=np.float16).reshape(64, 64)[::2, 8:40]  # a non-contiguous GM view
    nz = ascend.nd2nz_matrix(a)
    assert np.array_equal(ascend.nz2nd_matrix(nz, 32, 32), a)
    with pytest.raises(ShapeError, match="contiguous"):
        ascend.nd2nz(np.zeros(16, np.float16), np.zeros((16, 32), np.float16)[:, ::2], Nd2NzParams.for_matrix(1, 16))
    L = ascend.make_ascend_major_mn_layout((2, 32, 16), "float32")
    back = pickle.loads(pickle.dumps(L))
    assert back == L and back.fractal == L.fractal
