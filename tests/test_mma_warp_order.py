"""MMA accumulator fragments in either warp order: layoutkit's (TileLang's emitter, one contiguous tile
per warp) and Triton's (``NvidiaMmaEncoding`` v2 ``warpsPerCTA``, warps interleaved per 16x8
instruction), checked against Triton 3.9's own linear layout of the encoding when triton imports."""

from __future__ import annotations

import numpy as np
import pytest

from layoutkit.errors import ShapeError, UnsupportedError
from layoutkit.targets import nv

CONFIGS = [(1, 1, 16, 8), (2, 2, 32, 32), (4, 1, 16, 16), (1, 4, 64, 16), (2, 4, 32, 16), (2, 1, 64, 64)]


def triton_mma_bases(brw, bcw, shape):
    try:
        from triton._C.libtriton import gluon_ir, ir
        from triton.experimental.gluon.language._layouts import NVMMADistributedLayout
    except Exception:  # noqa: BLE001 - any import failure means the oracle is absent
        pytest.skip("triton (gluon) is not installed")
    ctx = ir.context()
    ir.load_dialects(ctx)
    builder = gluon_ir.GluonOpBuilder(ctx)
    layout = NVMMADistributedLayout(version=[2, 0], warps_per_cta=[brw, bcw], instr_shape=[16, 8])
    ll = builder.to_linear_layout(layout._to_ir(builder), list(shape))
    return ll.reg_bases, ll.lane_bases, ll.warp_bases


@pytest.mark.oracle
@pytest.mark.parametrize("brw,bcw,wrt,wct", CONFIGS)
def test_triton_warp_order_is_tritons_mma_layout(brw, bcw, wrt, wct):
    C = nv.make_mma_store_layout(brw, bcw, wrt, wct, warp_order="triton")
    view = C.to_linear()
    reg, lane, warp = triton_mma_bases(brw, bcw, C.input_shape)
    assert [list(b) for b in view.bases[0]] == reg
    assert [list(b) for b in view.bases[1]] == lane
    assert [list(b) for b in view.bases[2]] == warp


@pytest.mark.parametrize("brw,bcw,wrt,wct", CONFIGS)
def test_both_orders_place_every_element_once_and_differ_only_in_warps(brw, bcw, wrt, wct):
    ours = nv.make_mma_store_layout(brw, bcw, wrt, wct)
    theirs = nv.make_mma_store_layout(brw, bcw, wrt, wct, warp_order="triton")
    for F in (ours, theirs):
        assert bool(F.prove_injective()) and F.thread_extent == 32 * brw * bcw and F.local_size == ours.local_size
    lane = lambda F: F.thread_table() % 32  # noqa: E731
    assert np.array_equal(lane(ours), lane(theirs))  # the same mma.sync atom in every instruction tile
    i, j = np.indices(ours.input_shape)
    warp = theirs.thread_table().reshape(ours.input_shape) // 32
    assert np.array_equal(warp, (j // 8) % bcw + bcw * ((i // 16) % brw))
    if (brw > 1 and wrt > 16) or (bcw > 1 and wct > 8):  # some warp holds several instruction tiles
        assert not np.array_equal(ours.thread_table(), theirs.thread_table())


def test_warp_order_is_checked():
    with pytest.raises(ShapeError, match="warp_order"):
        nv.make_mma_store_layout(1, 1, 16, 16, warp_order="row")
    with pytest.raises(UnsupportedError, match="m16n8"):
        nv.make_mma_store_layout(1, 1, 16, 16, dtype="float64", warp_order="triton")


def triton_dot_bases(op, brw, bcw, shape, k_width=2):
    from triton._C.libtriton import gluon_ir, ir
    from triton.experimental.gluon.language._layouts import DotOperandLayout, NVMMADistributedLayout

    ctx = ir.context()
    ir.load_dialects(ctx)
    builder = gluon_ir.GluonOpBuilder(ctx)
    mma = NVMMADistributedLayout(version=[2, 0], warps_per_cta=[brw, bcw], instr_shape=[16, 8])
    ll = builder.to_linear_layout(DotOperandLayout(operand_index=op, parent=mma, k_width=k_width)._to_ir(builder),
                                  list(shape))
    return ll.reg_bases, ll.lane_bases, ll.warp_bases


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", ["float16", "int8", "float32"])
@pytest.mark.parametrize("operand", ["A", "B"])
@pytest.mark.parametrize("brw,bcw,wrt,wct,chunk", [(1, 1, 16, 8, 16), (2, 2, 32, 16, 32), (4, 1, 32, 32, 16),
                                                  (1, 4, 16, 32, 64), (2, 4, 64, 16, 32)])
def test_triton_warp_order_operands_are_tritons_dot_operands(dtype, operand, brw, bcw, wrt, wct, chunk):
    triton_mma_bases(1, 1, (16, 8))  # skips without triton
    chunk = max(chunk, 32) if dtype == "int8" else chunk  # an int8 atom is 32 deep
    F = nv.make_mma_load_layout(operand, dtype, brw, bcw, wrt, wct, chunk, warp_order="triton")
    view = F.to_linear()
    k_width = 32 // nv.element_bits(dtype)
    reg, lane, warp = triton_dot_bases(0 if operand == "A" else 1, brw, bcw, F.input_shape, k_width)
    assert [list(b) for b in view.bases[0]] == reg
    assert [list(b) for b in view.bases[1]] == lane
    assert [list(b) for b in view.bases[2]] == warp


def test_triton_operand_order_is_checked():
    with pytest.raises(UnsupportedError, match="transposed"):
        nv.make_mma_load_layout("A", "int8", 1, 1, 16, 16, 32, True, warp_order="triton")
    with pytest.raises(ShapeError, match="warp_order"):
        nv.make_mma_load_layout("A", "float16", 1, 1, 16, 16, 16, warp_order="col")
