"""The GEMM layout rule: instruction choice, swizzles over pipeline stages, store/load fragments."""

from __future__ import annotations

import numpy as np
import pytest

import layoutkit as lk
from layoutkit.targets import nv
from layoutkit.targets.nv.gemm import GemmOperand, pipelined_shape
from layoutkit.targets.nv.volta import make_volta_store_layout
from layoutkit.targets.nv.wgmma import make_wgmma_store_layout


def test_docs_gemm_matches_tilelang_inference():
    """TileLang's LayoutInference on the docs GEMM (32x32x32, 128 threads, sm_80, 2 stages)."""
    r = nv.gemm_layouts(("shared.dyn", (2, 32, 32), "float16"), ("shared.dyn", (2, 32, 32), "float16"),
                        ("local.fragment", (32, 32), "float32"), threads=128, arch="sm_80")
    i, j, k = np.indices((2, 32, 32))
    want = np.stack([i, 0 * i, j // 8, j % 8 * 32 + ((k // 16 + j % 8 // 4) % 2) * 16
                     + ((k % 16 // 8 + j % 4 // 2) % 2) * 8 + k % 8], axis=-1)  # TileLang's printed A_shared
    for name in ("A", "B"):
        assert np.array_equal(r[name].table(), want)
        assert r[name].is_equal(nv.make_half_bank_swizzled_layout((32, 32), "float16").expand([2]))
    C = r["C"]
    assert C.thread_range == (0, 128)
    ci, cj = np.indices((32, 32))
    assert np.array_equal(C.thread_table()[0], cj // 16 * 64 + ci // 16 * 32 + ci % 8 * 4 + cj % 8 // 2)
    assert np.array_equal(C.index_table(), cj % 16 // 8 * 4 + ci % 16 // 8 * 2 + cj % 2)
    assert pipelined_shape((32, 32), 2) == (2, 32, 32)


@pytest.mark.parametrize("a_scope", ["shared", "local.fragment"])
@pytest.mark.parametrize("b_scope", ["shared", "local.fragment"])
@pytest.mark.parametrize(("trans_a", "trans_b"), [(False, False), (True, True)])
def test_register_operands_get_load_fragments(a_scope, b_scope, trans_a, trans_b):
    a_shape = (32, 64) if trans_a else (64, 32)
    b_shape = (64, 32) if trans_b else (32, 64)
    r = nv.gemm_layouts((a_scope, a_shape, "float16"), (b_scope, b_shape, "float16"),
                        ("local.fragment", (64, 64), "float32"), transpose_A=trans_a, transpose_B=trans_b,
                        threads=128, policy="square")
    m, n = r.warp_partition
    assert (m, n) == (2, 2) and r.instruction == "mma"
    for name, scope, shape, trans in (("A", a_scope, a_shape, trans_a), ("B", b_scope, b_shape, trans_b)):
        got = r[name]
        if scope == "shared":
            assert got == nv.make_swizzled_layout(shape, "float16")  # defaults, whatever the transpose
        else:
            want = nv.make_mma_load_layout(name, "float16", m, n, 64 // m, 64 // n, 32, trans)
            assert isinstance(got, lk.Fragment) and got.is_equal(want) and got.thread_range == (0, 128)
            assert got.input_shape == shape
    assert r["C"].is_equal(nv.make_mma_store_layout(m, n, 64 // m, 64 // n))


def test_hopper_wgmma():
    r = nv.gemm_layouts(("shared", (2, 64, 64), "float16"), ("shared", (2, 64, 128), "float16"),
                        ("local.fragment", (64, 128), "float32"), threads=128, arch="sm_90")
    assert r.instruction == "wgmma" and r.warp_partition == (4, 1)
    assert r["A"].swizzle.kind == "full" and r["A"].input_shape == (2, 64, 64)  # continuity K = 64
    assert r["B"].swizzle.kind == "full"  # B [K, N]: continuity = instruction N = 128
    assert r["C"].is_equal(make_wgmma_store_layout(4, 1, 16, 128))
    consumer = nv.gemm_layouts(("shared", (64, 64), "float16"), ("shared", (64, 64), "float16"),
                               ("local.fragment", (64, 64), "float32"), thread_range=(128, 128), arch="sm_90")
    assert consumer["C"].thread_range == (128, 128)
    fp32 = nv.gemm_layouts(("shared", (64, 32), "float32"), ("shared", (32, 64), "float32"),
                           ("local.fragment", (64, 64), "float32"), arch="sm_90")
    assert fp32.instruction == "mma"  # float32 operands are not tf32: no WGMMA


def test_volta_and_fma():
    r = nv.gemm_layouts(("shared", (64, 32), "float16"), ("shared", (32, 64), "float16"),
                        ("local.fragment", (64, 64), "float32"), arch="sm_70")
    assert r.instruction == "mma" and r.warp_partition == (2, 2)
    assert r["A"] == nv.make_volta_swizzled_layout((64, 32), "float16", True, True)
    assert r["B"] == nv.make_volta_swizzled_layout((32, 64), "float16", False, False)
    assert r["C"].is_equal(make_volta_store_layout(2, 2, 32, 32))
    f = nv.gemm_layouts(("shared", (64, 32), "bfloat16"), ("shared", (32, 64), "bfloat16"),
                        ("local.fragment", (64, 64), "float32"), threads=64, arch="sm_70")
    assert f.instruction == "fma" and f.warp_partition == (1, 2) and set(f.layouts) == {"C"}
    flat = np.arange(64 * 64).reshape(64, 64)
    assert np.array_equal(f["C"].thread_table()[0], flat % 64)
    assert np.array_equal(f["C"].index_table(), flat // 64)


def test_errors():
    with pytest.raises(lk.ShapeError):  # K disagrees
        nv.gemm_layouts(("shared", (64, 32), "float16"), ("shared", (16, 64), "float16"),
                        ("local.fragment", (64, 64), "float32"))
    with pytest.raises(nv.GemmScopeError, match="C is in 'shared'"):  # MMA accumulates into a fragment only
        nv.gemm_layouts(("shared", (64, 32), "float16"), ("shared", (32, 64), "float16"),
                        ("shared", (64, 64), "float32"))
    with pytest.raises(nv.WarpPartitionError):
        nv.gemm_layouts(("shared", (16, 32), "float16"), ("shared", (32, 8), "float16"),
                        ("local.fragment", (16, 8), "float32"), threads=128)
    with pytest.raises(lk.ShapeError):
        GemmOperand("shared", (64,), "float16")
    with pytest.raises(lk.UnsupportedError, match="only as a TCGEN05 GEMM"):  # tensor memory before sm_100
        nv.gemm_layouts(("shared", (128, 64), "float16"), ("shared", (64, 128), "float16"),
                        ("shared.tmem", (128, 128), "float32"), arch="sm_90")
    r = nv.gemm_layouts(("shared", (128, 64), "float16"), ("shared", (64, 128), "float16"),
                        ("shared.tmem", (128, 128), "float32"), arch="sm_100")
    assert r.instruction == "tcgen05" and r["C"](5, 9) == (5, 9)
    assert nv.select_gemm_instruction(("shared", (128, 64), "float16"), ("shared", (64, 128), "float16"),
                                      ("shared.tmem", (128, 128), "float32"), arch="sm_100") == "tcgen05"
