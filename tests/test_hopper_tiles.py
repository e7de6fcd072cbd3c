"""sm_90a tile shapes: 64 and 128 rows by N in {64, 128, 192, 256} (fp16 / bf16), on the CPU harness.

wgmma's N is a multiple of 8 up to 256, so each tile's consumer warp groups take m64 blocks of it whole (one
group) or split it in halves (two groups: n32 .. n128).  One single-block kernel per shape runs with
``make test``; every shape with tails in M, N and K, both B layouts, both types and both consumer counts runs
with LAYOUTKIT_CUDA_CPU_SWEEP=1.  128 x 256 on one consumer group is refused: its accumulator alone takes 256
registers a thread, more than setmaxnreg gives (ptxas would spill and serialise the wgmma).
"""

from __future__ import annotations

import itertools
import re

import pytest

from layoutkit import codegen
from layoutkit.backends.nv import hopper, hopper_cuda
from layoutkit.errors import UnsupportedError
from layoutkit.infer import infer_layouts

from .test_hopper import SWEEP, _equal_numpy, _program, needs_cxx

F16, BF16 = "float16", "bfloat16"
# (bM, bN, consumer threads, transpose_B, dtype): each shape once, the layouts and types alternating
CHEAP = [(64, 64, 128, False, F16), (64, 128, 128, True, BF16), (64, 192, 128, False, BF16),
         (64, 256, 128, True, F16), (128, 64, 256, False, BF16), (128, 128, 128, True, F16),
         (128, 192, 256, True, F16), (128, 256, 256, False, BF16)]
EVERY = [(bM, bN, t, tb, dt) for bM, bN, tb, dt in itertools.product((64, 128), (64, 128, 192, 256), (False, True),
                                                                       (F16, BF16))
         for t in ((128, 256) if bM == 128 else (128,)) if bM * bN // t < hopper.MAX_CONSUMER_REGS]


def _cfg(tile, tail: bool):
    bM, bN, threads, tb, dtype = tile
    extra = 8 if tail else 0
    return (bM + extra, bN + extra, 128 + 2 * extra, bM, bN, 64, threads, 2, tb, dtype)


@pytest.mark.parametrize("tile", CHEAP, ids=str)
def test_each_tile_shape_plans_whole_wgmma_tiles_per_consumer_group(tile):
    bM, bN, threads, tb, _ = tile
    p = _program(_cfg(tile, False))
    h = hopper.plan(p, infer_layouts(p))
    groups = threads // 128
    n = bN // groups
    assert h.consumers == groups and h.threads == 128 + threads
    assert [[(t.m0, t.n0, t.n) for t in ts] for ts in h.tiles] == [
        [(m0, g * n, n) for m0 in range(0, bM, 64)] for g in range(groups)]
    src = hopper_cuda.print_module(h)
    mma = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16", src)
    assert set(mma) == {str(n)} and len(mma) == (bM // 64) * (64 // 16)  # one code path serves every group


@needs_cxx
@pytest.mark.parametrize("tile", CHEAP, ids=str)
def test_each_tile_shape_equals_numpy_on_the_cpu_harness(tile):
    cfg = _cfg(tile, False)
    p = _program(cfg)
    assert _equal_numpy(cfg, codegen.emit_cuda(p, infer_layouts(p)))


@needs_cxx
@pytest.mark.skipif(not SWEEP, reason="the full sweep runs with `make test-cuda-cpu` (LAYOUTKIT_CUDA_CPU_SWEEP=1)")
@pytest.mark.parametrize("tile", EVERY, ids=str)
def test_every_tile_shape_with_tails_equals_numpy(tile):
    cfg = _cfg(tile, True)
    p = _program(cfg)
    assert _equal_numpy(cfg, codegen.emit_cuda(p, infer_layouts(p)))


def test_a_tile_whose_accumulator_exceeds_the_consumer_register_budget_is_refused():
    p = _program(_cfg((128, 256, 128, False, F16), False))  # 256 accumulator registers a consumer thread
    with pytest.raises(UnsupportedError, match=r"holds 256 registers a thread; setmaxnreg gives a consumer thread "
                                               r"at most 240"):
        codegen.emit_cuda(p, infer_layouts(p))
    assert len(EVERY) == 44  # of 48: 128 x 256 on one group (either B layout and type) left out
