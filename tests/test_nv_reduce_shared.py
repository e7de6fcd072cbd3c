"""Reductions whose threads sharing an output row form no xor group (ragged rows: an 8 x 12 tile on 32
threads) lower through shared memory, and the executor agrees with numpy."""

from __future__ import annotations

import numpy as np
import pytest

from layoutkit import codegen, infer
from layoutkit.infer import programs


@pytest.mark.parametrize("M, bM, bN, kind", [(8, 8, 12, "sum"), (8, 8, 12, "max"), (16, 8, 12, "min"),
                                             (24, 8, 12, "sum")])
def test_ragged_rows_reduce_like_numpy(M, bM, bN, kind):
    p = programs.tile_reduce(M=M, N=bN, bM=bM, bN=bN, kind=kind, threads=32)
    r = infer.infer_layouts(p)
    assert "_rep" in str(r.layout_map["r"].forward_thread)  # the ragged layout the solver infers
    a = np.random.default_rng(M).standard_normal((M, bN)).astype(np.float32)
    out = codegen.execute(p, r, {"A": a})["R"]
    np.testing.assert_allclose(out, getattr(np, kind)(a, axis=1), rtol=1e-5, atol=1e-5)
    source = codegen.emit_cuda(p, r)
    assert "r_stage1" in source and "__shfl_xor_sync" not in source


def test_xor_groups_keep_the_butterfly():
    p = programs.tile_reduce(M=64, N=128, bM=64, bN=128)
    source = codegen.emit_cuda(p, infer.infer_layouts(p))
    assert "__shfl_xor_sync" in source and "_stage" not in source


def test_the_issue_program_lowers():
    p = infer.Program(threads=32)
    G = p.tensor("G", (8, 12), "float32")
    O = p.tensor("O", (8,), "float32")
    f0 = p.alloc_fragment("f0", (8, 12), "float32")
    f1 = p.alloc_fragment("f1", (8,), "float32")
    p.copy(G[0:8, 0:12], f0)
    p.reduce(f0, f1, dim=1, kind="sum")
    p.copy(f1, O[0:8])
    a = np.arange(96, dtype=np.float32).reshape(8, 12)
    out = codegen.execute(p, infer.infer_layouts(p), {"G": a})["O"]
    np.testing.assert_array_equal(out, a.sum(axis=1))  # small integers: exact in any order
