"""MMA atoms, load/store fragments (docs/reference.md#nvidia-mma-fragments), ldmatrix maps, WGMMA and Volta
fragments."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import layoutkit as lk
from layoutkit.targets import nv
from layoutkit.targets.nv.volta import make_volta_load_layout, make_volta_store_layout
from layoutkit.targets.nv.wgmma import make_wgmma_load_layout, make_wgmma_store_layout


def _check_covering(frag: lk.Fragment) -> None:
    """Every replica of every element has its own thread; replicate 1 -> injective."""
    threads = frag.thread_table().reshape(frag.replicate_size, -1)
    assert threads.min() >= 0
    assert np.all(np.diff(np.sort(threads, axis=0), axis=0) > 0)
    assert frag.prove_injective()


def test_reference_store_example():
    """The check of docs/reference.md#accumulator-store-fragment: 32x32 C, 128 threads, 2x2 warps."""
    C = nv.make_mma_store_layout(2, 2, 16, 16)
    i, j = np.indices((32, 32))
    assert np.array_equal(C.thread_table()[0], j // 16 * 64 + i // 16 * 32 + i % 8 * 4 + j % 8 // 2)
    assert np.array_equal(C.index_table(), j % 16 // 8 * 4 + i % 16 // 8 * 2 + j % 2)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int8", "float8_e4m3fn", "float32"])
@pytest.mark.parametrize("operand", ["A", "B"])
@pytest.mark.parametrize("transposed", [False, True])
def test_load_fragment_formula(dtype, operand, transposed):
    """The closed forms of docs/reference.md#operand-load-fragments over a 2x2 block with 2x2 atoms per warp."""
    atom = nv.mma_atom(dtype)
    brw, bcw, wrt, wct, chunk = 2, 2, 32, 32, 2 * atom.k
    frag = nv.make_mma_load_layout(operand, dtype, brw, bcw, wrt, wct, chunk, transposed)
    ms_s, ms_k, warp_s = 16, atom.k, 2
    local_size = ms_s * ms_k // 32
    shape = frag.input_shape
    r, c = np.indices(shape)
    s, k = (r, c) if (operand == "A") != transposed else (c, r)
    lane, local = atom.lane(s % ms_s, k % ms_k), atom.local(operand, s % ms_s, k % ms_k)
    index = local + local_size * ((s // ms_s) % warp_s + warp_s * (k // ms_k))
    bs = s // (ms_s * warp_s)
    assert np.array_equal(frag.index_table(), index)
    for q in range(frag.replicate_size):
        want = lane + 32 * bs + 32 * brw * q if operand == "A" else lane + 32 * q + 32 * brw * bs
        assert np.array_equal(frag.thread_table()[q], want)
    _check_covering(frag)


@pytest.mark.parametrize(
    ("brw", "bcw", "wrt", "wct", "chunk"),
    list(itertools.product([1, 2, 4], [1, 2], [16, 32, 64], [8, 16, 24, 32], [16, 32])),
)
def test_fragments_injective_and_covering(brw, bcw, wrt, wct, chunk):
    for op, tr in itertools.product("AB", [False, True]):
        frag = nv.make_mma_load_layout(op, "float16", brw, bcw, wrt, wct, chunk, tr)
        spatial = brw * wrt if op == "A" else bcw * wct
        assert sorted(frag.input_shape) == sorted((spatial, chunk))
        _check_covering(frag)
    C = nv.make_mma_store_layout(brw, bcw, wrt, wct)
    assert C.input_shape == (brw * wrt, bcw * wct) and C.thread_extent == 32 * brw * bcw
    _check_covering(C)
    assert C.local_size * C.thread_extent == C.size  # every register of every thread is used


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("A", "float16", 1, 1, 8, 16, 16), lk.ShapeError),  # warp_row_tiles < 16
        (("A", "float16", 1, 1, 24, 16, 16), lk.ShapeError),  # warp_row_tiles % 16
        (("B", "float16", 1, 1, 16, 4, 16), lk.ShapeError),  # warp_col_tiles < 8
        (("A", "int8", 1, 1, 16, 16, 24), lk.ShapeError),  # k = min(32, 24) = 24: no instruction
        (("A", "float16", 1, 1, 16, 16, 4), lk.ShapeError),  # k4 exists only for float64
        (("A", "float64", 1, 1, 16, 16, 4), lk.UnsupportedError),  # TileLang has no fp64 load layout
        (("C", "float16", 1, 1, 16, 16, 16), lk.ShapeError),
        (("A", "float16", 0, 1, 16, 16, 16), lk.ShapeError),
    ],
)
def test_load_errors(args, error):
    with pytest.raises(error) as info:
        nv.make_mma_load_layout(*args)
    assert "found" in str(info.value)


def test_chunk_cut_atoms_follow_tilelang_lane_extent():
    """8-bit with chunk 8: the atom uses lanes 0..29, and TileLang strides warps by 30."""
    frag = nv.make_mma_load_layout("A", "int8", 2, 2, 16, 16, 8)
    assert frag.thread_extent == 120 and frag.replicate_size == 2


def test_store_variants():
    fp64 = nv.make_mma_store_layout(1, 1, 8, 8, dtype="float64", accum_dtype="float64")
    assert fp64.is_equal(nv.make_gemm_fragment_8x8())
    turing = nv.make_mma_store_layout(1, 1, 16, 16, dtype="float16", arch="sm_75")  # m16n8k8: N atoms of 8
    assert turing.local_size == 8 and turing.is_equal(nv.make_mma_store_layout(1, 1, 16, 16))
    with pytest.raises(lk.UnsupportedError):
        nv.make_mma_store_layout(1, 1, 16, 16, dtype="float16", accum_dtype="float64")


def test_ldmatrix_maps():
    assert nv.ldmatrix_layout(4).is_equal(nv.make_mma_load_layout("A", "float16", 1, 1, 16, 16, 16))
    assert nv.ldmatrix_layout(1).is_equal(nv.make_gemm_fragment_8x8())
    assert nv.ldmatrix_layout(1, trans=True).is_equal(nv.make_gemm_fragment_8x8_transposed())
    # x4.trans over [K, N] fp16 gives the B fragment of a 16 x 16 (k x n) tile
    b = nv.make_mma_load_layout("B", "float16", 1, 1, 16, 16, 16)
    t4 = nv.ldmatrix_layout(4, trans=True)
    assert np.array_equal(np.sort(b.thread_table().ravel()), np.sort(t4.thread_table().ravel()))
    assert nv.stmatrix_layout(2).input_shape == (16, 8)
    assert nv.ldmatrix_layout(4, dtype="int8").input_shape == (16, 32)
    for num, trans in itertools.product((1, 2, 4), (False, True)):
        _check_covering(nv.ldmatrix_layout(num, trans))
    with pytest.raises(lk.UnsupportedError):
        nv.ldmatrix_layout(4, trans=True, dtype="int8")
    with pytest.raises(lk.ShapeError):
        nv.ldmatrix_layout(3)


def test_wgmma_and_volta_fragments():
    C = make_wgmma_store_layout(4, 2, 16, 64)
    assert C.input_shape == (64, 128) and C.thread_extent == 256
    _check_covering(C)
    with pytest.raises(lk.ShapeError):
        make_wgmma_store_layout(2, 2, 16, 64)  # needs whole warp groups
    A = make_wgmma_load_layout("float16", 4, 1, 16, 64, 32)
    assert A.input_shape == (64, 32)
    _check_covering(A)
    V = make_volta_store_layout(2, 2, 32, 32)
    _check_covering(V)
    VA = make_volta_load_layout("A", "float16", 2, 2, 32, 32, 16)
    assert VA.input_shape == (64, 16) and VA.replicate_size == 4
    with pytest.raises(lk.UnsupportedError):
        make_volta_load_layout("A", "float16", 2, 2, 32, 32, 16, transposed=True)
