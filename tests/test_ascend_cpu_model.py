"""The printed Ascend C kernels compiled with g++ against the CPU model of the Ascend C API
(layoutkit.testing.ascend_cpu) and run on every AI core of the launch: equal to numpy, to the IR executor and
to the op-level executor; multi-core tile loops; injected bugs caught by the model."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from layoutkit.backends.ascend import ir
from layoutkit.backends.ascend.ascend_c import print_kernel
from layoutkit.backends.ascend.execute import run
from layoutkit.backends.ascend.lower import lower
from layoutkit.backends.ascend.passes import run_ascend_passes
from layoutkit.backends.ascend.reference import bf16_bits, bf16_value, run_ascend
from layoutkit.infer import infer_layouts
from layoutkit.testing.ascend_cpu import AscendCpuError, compiler, run_ascend_c, run_kernel

from .test_codegen_ascend import _epilogue_case, gemm, inputs, split_k

pytestmark = pytest.mark.skipif(compiler() is None, reason="the Ascend C CPU model needs a C++17 compiler")
LARGE = os.environ.get("LAYOUTKIT_ASCEND_CPU_LARGE") == "1"


def _gemm_case(M, N, K, bm, bn, bk, dtype="float16", tA=False, tB=False, relu=False):
    p = gemm(M, N, K, bm, bn, bk, dtype, tA, tB, relu)
    a, b, want = inputs(M, N, K, dtype, tA, tB)
    return p, infer_layouts(p), {"A": a, "B": b}, np.maximum(want, 0) if relu else want


def _split_k_case():
    p = split_k(40, 24, 72, 32, 32, 32)
    a, b, want = inputs(40, 24, 72)
    c = np.random.default_rng(5).normal(size=(40, 24)).astype(np.float32)
    return p, infer_layouts(p), {"A": a, "B": b, "C": c}, c + want


def _epilogue(M, N, K, bm, bn, bk, computes, bias=True, c_dtype="float32"):
    p, r, arrays, prod = _epilogue_case(M, N, K, bm, bn, bk, computes, bias, c_dtype)
    want = prod
    for fn in computes:
        kind, _, value = fn.partition(":")
        c = np.float32(value or 0)
        want = {"add": want + arrays.get("Bias", 0), "relu": np.maximum(want, 0), "muls": want * c,
                "adds": want + c, "maxs": np.maximum(want, c)}[kind]
    if c_dtype == "float16":
        want = want.astype(np.float16).astype(np.float32)
    elif c_dtype == "bfloat16":
        want = bf16_value(bf16_bits(want))
    return p, r, arrays, want


CASES = {
    "fp16-one-tile": (lambda: _gemm_case(64, 64, 64, 64, 64, 64), {}),
    "fp16-tails-100x72x40": (lambda: _gemm_case(100, 72, 40, 64, 64, 32), {}),
    "fp16-250^3": (lambda: _gemm_case(250, 250, 250, 128, 128, 128), {}),
    "bf16-tails": (lambda: _gemm_case(70, 40, 90, 32, 32, 32, "bfloat16"), {}),
    "transpose-A": (lambda: _gemm_case(70, 40, 90, 32, 32, 32, tA=True), {}),
    "transpose-B": (lambda: _gemm_case(70, 40, 90, 32, 32, 32, tB=True), {}),
    "transpose-AB": (lambda: _gemm_case(70, 40, 90, 32, 32, 32, tA=True, tB=True), {}),
    "relu-fixpipe": (lambda: _gemm_case(100, 72, 40, 64, 64, 32, relu=True), {}),
    "split-k-atomic": (_split_k_case, {}),
    "double-buffer-tails": (lambda: _gemm_case(300, 200, 100, 64, 64, 32), {"double_buffer": True}),
    "bias-relu-vector": (lambda: _epilogue(100, 72, 40, 64, 64, 32, ["add", "relu"]), {}),
    "bias-relu-vector-bf16-out": (lambda: _epilogue(100, 72, 40, 64, 64, 32, ["add", "relu"], c_dtype="bfloat16"),
                                  {}),
    "bias-relu-vector-80-rows": (lambda: _epilogue(80, 64, 32, 64, 64, 32, ["add", "relu"]), {}),
    "scalar-vector-double-buffer": (lambda: _epilogue(70, 96, 40, 32, 32, 32, ["adds:1.5", "maxs:0", "muls:-2"],
                                                      bias=False), {"double_buffer": True}),
}


@pytest.fixture(scope="module")
def built():
    """Each case lowered once (its kernel compiles once per text; the runner caches the executable)."""
    cache: dict = {}

    def get(name):
        if name not in cache:
            make, kw = CASES[name]
            p, r, arrays, want = make()
            cache[name] = (p, r, arrays, want, lower(p, r, **kw))
        return cache[name]
    return get


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_kernel_runs_on_the_cpu_model_for_every_block(name, built):
    p, r, arrays, want, k = built(name)
    assert isinstance(k.body[0], ir.TileLoop) and "AscendC::GetBlockIdx()" in print_kernel(k)
    got = run_kernel(k, arrays)["C"]                       # every AI core 0 .. block_dim - 1
    wide = p.buffers["C"].dtype == "float32"               # fp32 out: only the additions round
    np.testing.assert_allclose(np.asarray(got, np.float32), want, rtol=1e-5 if wide else 1e-2,
                               atol=3e-3 if wide else 1e-2)
    # the IR executor and the op-level executor accumulate in the same k order as the model, but the
    # host compiler may contract or reorder float arithmetic: equal up to one unit of the output's rounding
    _agree(got, run(k, arrays)["C"], wide)
    q, _ = run_ascend_passes(p, r)
    _agree(got, run_ascend(q, arrays)["C"], wide)
    # fewer AI cores than planned: each takes more tiles (split-K partial sums land in another order)
    if k.block_dim > 2:
        _agree(run_kernel(k, arrays, block_num=2)["C"], got, wide)


def _agree(a, b, wide: bool) -> None:
    """Equal but for the last rounding step: an fp32 ulp for fp32 outputs, a half-precision ulp for 16-bit."""
    np.testing.assert_allclose(np.asarray(a, np.float32), np.asarray(b, np.float32),
                               rtol=2.0**-22 if wide else 2.0**-9, atol=1e-6)


def test_large_kernels_call_get_block_idx_and_loop():
    for shape, tiles, cores in (((250, 250, 250, 128, 128, 128), 4, 4), ((1024, 1024, 1024, 128, 128, 128), 64, 20)):
        p = gemm(*shape)
        k = lower(p, infer_layouts(p))
        src = print_kernel(k)
        assert "uint32_t core = AscendC::GetBlockIdx();" in src
        assert f"for (uint32_t t = core; t < {tiles}; t += AscendC::GetBlockNum()) {{" in src
        assert k.block_dim == cores
        # no unrolled tile lists: one store, a full and (250) a tail K step, loops over K steps and fractal rows
        assert src.count("AscendC::Fixpipe<") == 1 and src.count("AscendC::Mmad(") <= 2
        assert src.count("for (uint32_t ") >= 2 and len(src.splitlines()) < 200
    assert "uint32_t mActual = 250 - mi * 128 < 128 ? 250 - mi * 128 : 128;" in print_kernel(
        lower(gemm(250, 250, 250, 128, 128, 128), infer_layouts(gemm(250, 250, 250, 128, 128, 128))))


@pytest.mark.skipif(not LARGE, reason="the 1024^3 CPU-model run is opt-in (LAYOUTKIT_ASCEND_CPU_LARGE=1)")
def test_1024_cube_runs_on_the_cpu_model():
    p, r, arrays, want = _gemm_case(1024, 1024, 1024, 128, 128, 128)
    k = lower(p, r)
    got = run_kernel(k, arrays)["C"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-2)
    _agree(got, run(k, arrays)["C"], p.buffers["C"].dtype == "float32")


# ---- injected bugs --------------------------------------------------------------------------------------------

def _caught(k, src: str, arrays, want) -> bool:
    """Whether the CPU model rejects the mutated source or computes a wrong result."""
    try:
        got = run_kernel(k, arrays, source=src)["C"]
    except AscendCpuError:
        return True
    return not np.allclose(np.asarray(got, np.float32), want, rtol=1e-3, atol=1e-2)


def _mutate(src: str, pattern: str, repl: str) -> str:
    out, n = re.subn(pattern, repl, src, count=1)
    assert n == 1, pattern
    return out


MUTATIONS = {
    "drop-a-WaitFlag": (r"\n *AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE1>\(EVENT_ID0\);", ""),
    "drop-M-FIX-wait": (r"\n *AscendC::WaitFlag<AscendC::HardEvent::M_FIX>\(EVENT_ID0\);", ""),
    "swap-Nd2NzParams-fields": (r"p\.nValue = mActual; p\.dValue = 32;", "p.nValue = 32; p.dValue = mActual;"),
    "wrong-C0": (r"A_l0\[fr \* 512\]", "A_l0[fr * 256]"),                 # fractals of 16 x 8, not 16 x 16
    "off-by-one-tail": (r"uint32_t mActual = 100 - mi \* 64 < 64 \? 100 - mi \* 64 : 64;",
                        "uint32_t mActual = 99 - mi * 64 < 64 ? 99 - mi * 64 : 64;"),
    "off-by-one-nValue": (r"p\.nValue = mActual;", "p.nValue = mActual - 1;"),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_injected_bugs_are_caught(mutation, built):
    _, _, arrays, want, k = built("fp16-tails-100x72x40")
    src = print_kernel(k)
    assert not _caught(k, src, arrays, want)
    assert _caught(k, _mutate(src, *MUTATIONS[mutation]), arrays, want)


def test_missing_cross_core_wait_is_caught(built):
    _, _, arrays, want, k = built("bias-relu-vector")
    src = print_kernel(k)
    broken = _mutate(src, r"\n *AscendC::CrossCoreWaitFlag\(0\);", "")      # a vector core reads before the cube
    with pytest.raises(AscendCpuError, match="race|uninitialised|never waited"):
        run_kernel(k, arrays, source=broken)


# ---- the model itself ----------------------------------------------------------------------------------------

QUEUE_KERNEL = """
#include "kernel_operator.h"
extern "C" __global__ __aicore__ void scale(GM_ADDR x, GM_ADDR y)
{
    if ASCEND_IS_AIC { return; }
    AscendC::TPipe pipe;
    AscendC::GlobalTensor<float> x_gm, y_gm;
    x_gm.SetGlobalBuffer((__gm__ float *)x);
    y_gm.SetGlobalBuffer((__gm__ float *)y);
    AscendC::TQue<AscendC::TPosition::VECIN, 1> in;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> out;
    pipe.InitBuffer(in, 1, 256);
    pipe.InitBuffer(out, 1, 256);
    uint32_t part = AscendC::GetBlockIdx();  // 64 floats per vector core
    for (uint32_t h = 0; h < 2; ++h) {
        AscendC::LocalTensor<float> a = in.AllocTensor<float>();
        AscendC::DataCopyParams p; p.blockCount = 1; p.blockLen = 4; p.srcStride = 0; p.dstStride = 0;
        AscendC::DataCopy(a, x_gm[part * 64 + h * 32], p);
        ENQUE_IN
        AscendC::LocalTensor<float> b = DEQUE_IN;
        AscendC::LocalTensor<float> c = out.AllocTensor<float>();
        AscendC::Muls(c, b, (float)3, 32);
        out.EnQue(c);
        in.FreeTensor(b);
        AscendC::LocalTensor<float> d = out.DeQue<float>();
        AscendC::DataCopy(y_gm[part * 64 + h * 32], d, p);
        out.FreeTensor(d);
    }
}
"""


def _queue(src: str, blocks: int = 2):
    x = np.arange(256, dtype=np.float32)
    params = [("x", "float32", (256,)), ("y", "float32", (256,))]
    return x, run_ascend_c(src, "scale", params, {"x": x}, blocks)["y"]


def test_queues_order_the_pipes_and_a_missing_enque_is_a_race():
    ok = QUEUE_KERNEL.replace("ENQUE_IN", "in.EnQue(a);").replace("DEQUE_IN", "in.DeQue<float>()")
    x, y = _queue(ok)
    assert np.array_equal(y, 3 * x)                          # 2 AI cores x 2 vector cores x 64 floats
    racy = QUEUE_KERNEL.replace("ENQUE_IN", "").replace("DEQUE_IN", "a")
    with pytest.raises(AscendCpuError, match=r"pipe aiv0\.V touches .* after pipe aiv0\.MTE2 wrote it"):
        _queue(racy)


def test_out_of_bounds_and_overlapping_cores_are_caught():
    ok = QUEUE_KERNEL.replace("ENQUE_IN", "in.EnQue(a);").replace("DEQUE_IN", "in.DeQue<float>()")
    with pytest.raises(AscendCpuError, match=r"reads x\[\d+\], outside its 256 elements"):
        _queue(ok, blocks=3)                                  # a third AI core reads past the end of x
    overlap = ok.replace("y_gm[part * 64 + h * 32]", "y_gm[(part % 2) * 64 + h * 32]")
    with pytest.raises(AscendCpuError, match="was written by AI core"):
        _queue(overlap)


def test_a_dropped_wait_is_reported_as_a_race(built):
    _, _, arrays, _, k = built("fp16-tails-100x72x40")
    broken = _mutate(print_kernel(k), r"\n *AscendC::WaitFlag<AscendC::HardEvent::MTE1_M>\(EVENT_ID0\);", "")
    with pytest.raises(AscendCpuError, match=r"Mmad: pipe M touches L0A.* after pipe MTE1 wrote it.*\(a race\)"):
        run_kernel(k, arrays, source=broken)


def test_a_kernel_that_does_not_build_is_reported():
    with pytest.raises(AscendCpuError, match="does not build against the CPU model"):
        run_ascend_c('#include "kernel_operator.h"\nextern "C" void k(GM_ADDR x) { AscendC::Nope(x); }', "k",
                     [("x", "float32", (4,))], {}, 1)
