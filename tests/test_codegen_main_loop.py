"""The NVIDIA GEMM lowering walks its main loop op by op, each op playing its kind's role (fill of C, copies of A
and B, then the gemm), not by the position of the ops; an op with no role, or a role twice or missing, is named."""

from __future__ import annotations

import numpy as np
import pytest

from layoutkit import codegen, infer
from layoutkit.errors import UnsupportedError


def _gemm(order: tuple[int, int, int] = (0, 1, 2), M=64, N=48, K=64, b=32) -> infer.Program:
    """The docs GEMM with its first three ops (fill C, copy A, copy B) put in ``order``."""
    p = infer.Program(threads=128, target="sm_80")
    A, B = p.tensor("A", (M, K), "float16"), p.tensor("B", (K, N), "float16")
    C = p.tensor("C", (M, N), "float16")
    A_s, B_s = p.alloc_shared("A_shared", (b, b), "float16"), p.alloc_shared("B_shared", (b, b), "float16")
    C_l = p.alloc_fragment("C_local", (b, b), "float32")
    p.clear(C_l)
    with p.pipelined(num_stages=2):
        p.copy(A[0, 0], A_s)
        p.copy(B[0, 0], B_s)
        p.gemm(A_s, B_s, C_l)
    p.copy(C_l, C[0, 0])
    p.ops[:3] = [p.ops[k] for k in order]
    return p


@pytest.mark.parametrize("order", [(0, 2, 1), (1, 2, 0), (2, 0, 1)], ids=["fill-B-A", "A-B-fill", "B-fill-A"])
def test_main_loop_in_any_order_lowers_to_the_canonical_kernel(order):
    canonical, p = _gemm(), _gemm(order)
    assert [op.name for op in p.ops[:3]] != [op.name for op in canonical.ops[:3]]
    r, rc = infer.infer_layouts(p), infer.infer_layouts(canonical)
    assert codegen.emit_cuda(p, r) == codegen.emit_cuda(canonical, rc)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((64, 48)).astype(np.float16)
    out = codegen.execute(p, r, {"A": a, "B": b})["C"]
    np.testing.assert_allclose(out.astype(np.float64), a.astype(np.float64) @ b, rtol=2.0**-9, atol=2.0**-9 * 64)


def test_a_stray_op_before_the_gemm_is_named():
    p = _gemm()
    extra = p.alloc_fragment("scratch", (32, 32), "float32")
    p.ops.insert(1, p.clear(extra))
    p.ops.pop()  # clear appended its op at the end as well
    with pytest.raises(UnsupportedError, match=r"fill#\d+ fills scratch before gemm#3; its main loop takes one fill, "
                                               "of the accumulator C_local"):
        codegen.lower(p, infer.infer_layouts(p))


def test_an_op_with_no_role_in_the_main_loop_is_named():
    p = _gemm()
    x = p.alloc_fragment("x", (32, 32), "float32")
    p.ops.insert(1, p.parallel((32, 32), writes=[(x, lambda i, j: (i, j))]))
    p.ops.pop()
    with pytest.raises(UnsupportedError, match=r"parallel#\d+ \(parallel\) before gemm#3 has no role in its main loop "
                                               r"\(roles: \['copy', 'fill'\]\)"):
        codegen.lower(p, infer.infer_layouts(p))


def test_a_main_loop_without_its_fill_is_named():
    p = _gemm()
    del p.ops[0]
    with pytest.raises(UnsupportedError, match="the main loop of gemm#3 has no fill of C_local"):
        codegen.lower(p, infer.infer_layouts(p))
