"""Instruction quality of the sm_80 GEMM kernel: bounds guards the launch proves are not printed, a tail keeps
them (and still computes the right values); the pipeline tail is peeled (no copy past the last k tile)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from layoutkit import codegen
from layoutkit.algebra.nodes import Var
from layoutkit.backends.nv import ir
from layoutkit.backends.nv.guards import proved
from layoutkit.infer import infer_layouts, programs


def _cuda(**kw) -> str:
    p = programs.gemm(**kw)
    return codegen.emit_cuda(p, infer_layouts(p))


def test_a_divisible_gemm_prints_no_bounds_guard():
    src = _cuda(M=256, N=256, K=256, bM=128, bN=128, bK=32, threads=128, num_stages=2)
    assert "if (" not in src and "ok" not in src.replace("lk_smem", "")
    assert "cp.async.cg.shared.global [%0], [%1], 16;" in src


@pytest.mark.parametrize("shape", [(100, 128, 128), (128, 72, 128), (128, 128, 72)], ids=["M", "N", "K"])
def test_a_tail_keeps_its_guard_and_computes_the_product(shape):
    M, N, K = shape
    p = programs.gemm(M=M, N=N, K=K, bM=64, bN=64, bK=32, threads=128, num_stages=2)
    r = infer_layouts(p)
    src = codegen.emit_cuda(p, r)
    assert ("if (" in src) if K == 128 else ("ok ?" in src)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    out = codegen.execute(p, r, {"A": a, "B": b})["C"].astype(np.float64)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=2.0**-9, atol=2.0**-9 * K)


@given(st.integers(1, 512), st.integers(1, 8), st.integers(1, 600))
def test_a_guard_is_proved_exactly_when_every_thread_passes(threads, blocks, bound):
    expr = ir.BX * threads + ir.TID
    extents = {ir.TID: Var("tid", threads), ir.BX: Var("bx", blocks)}
    assert proved(expr, bound, extents) == (blocks * threads <= bound)


@pytest.mark.parametrize("stages, K", [(2, 256), (3, 256), (4, 256), (2, 224), (4, 64), (3, 32)])
def test_the_pipeline_tail_is_peeled(stages, K):
    src = _cuda(M=128, N=128, K=K, bM=64, bN=64, bK=32, threads=128, num_stages=stages)
    kt = K // 32
    drain = src.split("commit_group")[-1]  # after the last copy is issued
    drained = min(stages - 1, kt)
    waits = [int(n) for n in re.findall(r"wait_group (\d+)", drain)]
    assert waits == list(range(drained - 1, -1, -1))
    assert "cp.async" not in drain.replace("cp.async.wait_group", "")
    assert drain.count("mma.sync") == drained + (kt >= stages)  # and the last steady step's compute
    rounds, first = divmod(max(kt - stages + 1, 0), stages)
    steps = 1 + first + (stages if rounds else 0)  # the prologue, the steady steps before and in the loop
    assert src.count("cp.async.cg") == 2 * steps


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_the_k_loop_addresses_shared_memory_at_fixed_stages(stages):
    """The steady loop is unrolled by the stage count: no shared address in it depends on the k index (the
    stage offsets become immediates), and only the global addresses advance with it."""
    src = _cuda(M=128, N=128, K=512, bM=64, bN=64, bK=32, threads=128, num_stages=stages)
    loop = src.split("#pragma unroll 1\n")[1]
    shared = re.findall(r"&[AB]_s\[([^\]]*)\]", loop)
    assert shared and not any("ko" in a for a in shared)
    assert all("ko" in a for a in re.findall(r"&[AB]\[([^\]]*)\]", loop))
