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


@pytest.mark.parametrize("stages, K", [(2, 256), (3, 256), (4, 256), (4, 64), (3, 32)])
def test_the_pipeline_tail_is_peeled(stages, K):
    src = _cuda(M=128, N=128, K=K, bM=64, bN=64, bK=32, threads=128, num_stages=stages)
    kt = K // 32
    steady = kt >= stages
    body = src.split("for (int ko")[-1] if steady else src.split("commit_group")[-1]
    waits = [int(n) for n in re.findall(r"wait_group (\d+)", body)]
    drained = min(stages - 1, kt)  # tiles computed after the last copy is issued
    assert waits[-drained:] == list(range(drained - 1, -1, -1))
    copies = 2 * (2 if steady else 1)  # A and B in the prologue (and the steady loop)
    assert src.count("cp.async.cg") == copies
    assert src.count("mma.sync") == drained + steady
