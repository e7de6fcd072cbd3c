"""Properties of the Ascend movement models over random shapes and dtypes (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from layoutkit.targets import ascend

NP_DTYPES = {"float16": np.float16, "bfloat16": np.uint16, "float32": np.float32, "int8": np.int8}


@given(
    rows=st.integers(1, 40),
    cols=st.integers(1, 70),
    dtype=st.sampled_from(sorted(NP_DTYPES)),
    seed=st.integers(0, 2**16),
)
def test_nd2nz_then_nz2nd_is_the_identity(rows, cols, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 100, (rows, cols)).astype(NP_DTYPES[dtype])
    nz = ascend.nd2nz_matrix(a, dtype)
    assert np.array_equal(ascend.nz2nd_matrix(nz, rows, cols, dtype), a)
    # the storage is the padded canonical MajorK image of the layout
    L = ascend.make_ascend_nz_layout((rows, cols), dtype)
    assert nz.shape == ascend.fractal_info(L).storage_shape
    assert np.array_equal(nz.reshape(-1)[ascend.storage_offset_table(L)], a)


@given(
    m=st.integers(1, 100),
    k=st.integers(1, 100),
    tile=st.tuples(st.integers(1, 48), st.integers(1, 48)),
    at=st.tuples(st.integers(0, 120), st.integers(0, 120)),
    major_mn=st.booleans(),
    dtype=st.sampled_from(["float16", "float32"]),
    pad=st.sampled_from([0.0, -3.0]),
)
def test_tail_tile_holds_the_valid_block_zeros_fills_and_sentinel(m, k, tile, at, major_mn, dtype, pad):
    gm = (np.arange(m * k).reshape(m, k) % 251 + 1).astype(dtype)
    make = ascend.make_ascend_major_mn_layout if major_mn else ascend.make_ascend_nz_layout
    L = make(tile, dtype)
    info = ascend.fractal_info(L)
    img = ascend.from_storage(ascend.load_tile(gm, L, tile, at, pad_value=pad), info)
    tr, tc = tile
    vr, vc = max(0, min(tr, m - at[0])), max(0, min(tc, k - at[1]))
    k0 = info.c0
    # independent model of what is written: data, DMA zeros, fills; sentinel elsewhere
    want = np.full(img.shape, np.nan, dtype=img.dtype)
    if major_mn:
        want[: -(-vr // k0) * k0, :vc] = 0
    else:
        want[:vr, : -(-vc // k0) * k0] = 0
    want[:vr, :vc] = gm[at[0] : at[0] + vr, at[1] : at[1] + vc]
    if vr < tr or vc < tc:
        r16 = -(-tr // 16) * 16 if not major_mn else -(-tr // k0) * k0
        c16 = -(-tc // k0) * k0 if not major_mn else -(-tc // 16) * 16
        if major_mn:
            want[-(-vr // k0) * k0 : r16, :c16] = pad
            want[:r16, vc:tc] = pad
        else:
            want[:r16, -(-vc // k0) * k0 : c16] = pad
            want[vr:tr, :c16] = pad
    assert np.array_equal(img, want, equal_nan=True)
    # the valid block is exactly the GM block, whatever the padding
    assert np.array_equal(img[:vr, :vc], gm[at[0] : at[0] + vr, at[1] : at[1] + vc])
    # no sentinel inside the logical tile when it was clamped (fills cover every tail)
    if vr < tr or vc < tc:
        assert not np.isnan(img[:tr, :tc]).any()


@given(rows=st.integers(1, 24), blocks=st.integers(1, 4), extra=st.integers(0, 9), f32=st.booleans())
def test_insert_nd2nz_equals_the_dma(rows, blocks, extra, f32):
    dt = np.float32 if f32 else np.float16
    c0 = 8 if f32 else 16
    a = (np.arange(rows * blocks * c0) + 1).astype(dt).reshape(rows, blocks * c0)
    full = rows + extra
    l1 = np.full(blocks * full * c0, -1, dt)
    ascend.insert_nd2nz(a, l1, full_rows=full)
    dma = np.full_like(l1, -1)
    ascend.nd2nz(a, dma, ascend.Nd2NzParams.for_matrix(rows, blocks * c0, nz_rows=full))
    assert np.array_equal(l1, dma)
