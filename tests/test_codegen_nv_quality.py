"""Instruction quality of the sm_80 GEMM kernel: bounds guards the launch proves are not printed, a tail keeps
them (and still computes the right values)."""

from __future__ import annotations

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
    assert "if (" not in src
    assert "< 256" not in src.split("for (int ko")[0]  # the prologue's copies are in bounds
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
