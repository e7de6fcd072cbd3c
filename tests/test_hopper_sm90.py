"""Plain ``target="sm_90"``: the GEMM follows the copy selection as on sm_90a (TileLang compiles sm_90 as
sm_90a): TMA-fed pipelines give the inference its producer + consumer thread range and the warp-specialised
wgmma kernel, compiled with ``-arch=sm_90a``; ``gemm_instruction="mma"`` keeps the ``mma.sync`` kernel.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from layoutkit import codegen
from layoutkit.backends import get_backend
from layoutkit.backends.nv import hopper
from layoutkit.errors import CodegenInputError, UnsupportedError
from layoutkit.infer import infer_layouts, programs
from layoutkit.testing.cuda_cpu import run_cuda

from .test_hopper import _arrays, _result, needs_cxx

# (M, N, K, bM, bN, bK, threads, stages, transpose_B)
TMA_FED = [(256, 256, 128, 128, 128, 64, 256, 3, False), (200, 136, 120, 128, 128, 32, 128, 2, True),
           (130, 72, 96, 64, 64, 32, 128, 3, False)]
SIMT_A = (130, 72, 100, 64, 64, 32, 256, 2, False)  # A rows of 200 bytes: no TMA load for A


def _program(cfg, target="sm_90", dtype="float16"):
    M, N, K, bM, bN, bK, threads, stages, tb = cfg
    return programs.gemm(M=M, N=N, K=K, bM=bM, bN=bN, bK=bK, threads=threads, num_stages=stages, dtype=dtype,
                         target=target, transpose_B=tb)


@pytest.mark.parametrize("cfg", TMA_FED + [SIMT_A], ids=str)
def test_the_thread_range_and_the_emitted_kernel_agree_on_sm90(cfg):
    p = _program(cfg)
    first, count = get_backend("sm_90").thread_range(p)
    r = infer_layouts(p)
    src = codegen.emit_cuda(p, r)
    if cfg != SIMT_A:  # every pipelined copy a TMA load: one producer warp group, then the consumers
        assert (first, count) == r.layout_map["C_local"].thread_range == (128, p.threads)
        assert f"__launch_bounds__({128 + p.threads}, 1)" in src and "const int tid = threadIdx.x - 128;" in src
        assert "wgmma.mma_async" in src and "cp.async.bulk.tensor.2d" in src and "mma.sync" not in src
    else:  # a SIMT producer copy (a producer partition as wide as the consumers): not lowered warp specialised
        assert (first, count) == (p.threads, p.threads) and not hopper.uses_hopper(p)
        assert "wgmma" not in src and "mma.sync.aligned.m16n8k16" in src


def test_sm90_and_sm90a_emit_the_same_kernel():
    cfg = TMA_FED[0]
    plain, arch = (codegen.emit_cuda(p, infer_layouts(p)) for p in (_program(cfg), _program(cfg, "sm_90a")))
    assert plain == arch


def test_the_mma_sync_kernel_stays_available_as_a_lowering_option():
    p = _program(TMA_FED[0])
    r = infer_layouts(p)
    k = codegen.lower(p, r, gemm_instruction="mma")
    src = codegen.emit_cuda(p, r, gemm_instruction="mma")
    assert k.threads == p.threads and "mma.sync.aligned.m16n8k16" in src and "wgmma" not in src
    assert isinstance(codegen.lower(p, r, gemm_instruction="wgmma"), hopper.HopperGemm)


def test_lowering_options_are_checked():
    p = _program(TMA_FED[0], target="sm_80")
    r = infer_layouts(p)
    with pytest.raises(UnsupportedError, match=r"gemm_instruction='wgmma': .*target is 'sm_80'"):
        codegen.lower(p, r, gemm_instruction="wgmma")
    q = _program(SIMT_A)
    with pytest.raises(UnsupportedError, match=r"pipelined copies \['copy#1'\] are no TMA loads"):
        codegen.emit_cuda(q, infer_layouts(q), gemm_instruction="wgmma")
    with pytest.raises(UnsupportedError, match=r"gemm_instruction must be one of \(None, 'wgmma', 'mma'\)"):
        codegen.lower(p, r, gemm_instruction="hgmma")
    with pytest.raises(CodegenInputError, match=r"lowering options \['unroll'\] are not the nv backend's"):
        codegen.lower(p, r, unroll=2)


@needs_cxx
@pytest.mark.parametrize("cfg", TMA_FED[:2], ids=str)
def test_the_emitted_sm90_kernel_equals_numpy_on_the_cpu_harness(cfg):
    p = _program(cfg)
    M, N, K, bM, bN, bK, threads, stages, tb = cfg
    arrays, ref = _arrays((M, N, K, bM, bN, bK, threads, stages, tb, "float16"))
    got = _result(run_cuda(codegen.emit_cuda(p, infer_layouts(p)), arrays), "float16")
    assert np.allclose(got, ref, rtol=2.0**-10, atol=1e-3)


def test_the_emitted_sm90_kernel_compiles_with_sm90a(tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc")
    p = _program(TMA_FED[0])
    (tmp_path / "k.cu").write_text(codegen.emit_cuda(p, infer_layouts(p)))
    res = subprocess.run([nvcc, "-arch=sm_90a", "-O3", "-cubin", "-Xptxas", "-v", str(tmp_path / "k.cu"), "-o",
                          str(tmp_path / "k.cubin")], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert re.search(r"0 bytes spill stores", res.stderr) and (tmp_path / "k.cubin").stat().st_size > 0


def test_a_refused_wgmma_lowering_names_the_mma_sync_option():
    from layoutkit.infer.program import Program

    q = programs.gemm_rowmax_bias(M=256, N=256, K=256, bM=128, bN=128, bK=64, threads=256, target="sm_90")
    r = infer_layouts(q)
    assert "wgmma" in codegen.emit_cuda(q, r)  # the row max through shared memory lowers on the consumers
    assert "mma.sync.aligned.m16n8k16" in codegen.emit_cuda(q, r, gemm_instruction="mma")
    p = Program(threads=128, target="sm_90")  # C staged in shared memory and read back: no TMA store follows
    A, B = p.tensor("A", (128, 64), "float16"), p.tensor("B", (64, 64), "float16")
    A_s, B_s = p.alloc_shared("A_shared", (64, 64), "float16"), p.alloc_shared("B_shared", (64, 64), "float16")
    C_l, S = p.alloc_fragment("C_local", (64, 64), "float32"), p.alloc_shared("S", (64, 64), "float16")
    D = p.alloc_fragment("D", (64, 64), "float32")
    p.clear(C_l)
    with p.pipelined(num_stages=2):
        p.copy(A[0, 0], A_s)
        p.copy(B[0, 0], B_s)
        p.gemm(A_s, B_s, C_l)
    p.copy(C_l, S)
    p.copy(S, D)
    with pytest.raises(UnsupportedError, match=r"stages C_local in shared S.*gemm_instruction='mma' gives the mma"):
        codegen.emit_cuda(p, infer_layouts(p))


def test_a_gemm_on_a_shared_sub_region_is_refused_before_the_layouts():
    from layoutkit.infer.program import Program

    p = Program(threads=128, target="sm_90")
    A, B, C = (p.tensor(n, (256, 256), "float16") for n in "ABC")
    A_s, B_s = p.alloc_shared("A_shared", (128, 64), "float16"), p.alloc_shared("B_shared", (32, 128), "float16")
    C_l = p.alloc_fragment("C_local", (128, 128), "float32")
    p.clear(C_l)
    with p.pipelined(num_stages=2):
        p.copy(A[0, 0], A_s)
        p.copy(B[0, 0], B_s)
        p.gemm(A_s[0:128, 0:32], B_s, C_l)
    p.copy(C_l, C[0, 0])
    with pytest.raises(UnsupportedError, match=r"gemm#3 reads the sub-region \(\(0, 0\), \(128, 32\)\) of A_shared"):
        codegen.emit_cuda(p, infer_layouts(p))


@pytest.mark.parametrize("threads", [512, 1024])
def test_more_than_two_consumer_warp_groups_is_refused_naming_the_mma_option(threads):
    """The kernel has setmaxnreg budgets for one or two consumer groups; more was a KeyError in the printer."""
    p = programs.gemm(threads=threads, target="sm_90")
    r = infer_layouts(p)
    with pytest.raises(UnsupportedError, match=f"{threads} consumer threads are {threads // 128} warp groups; the "
                                               r"warp-specialised kernel has 1 or 2 .* gemm_instruction='mma'"):
        codegen.emit_cuda(p, r)
    assert "mma.sync.aligned.m16n8k16" in codegen.emit_cuda(p, r, gemm_instruction="mma")
