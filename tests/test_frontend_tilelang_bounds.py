"""Constructs the TileLang adapter reads as TileLang 0.1.15 does, checked against TileLang itself: ops under
a condition on ``threadIdx.x`` (laid out on the threads it leaves), kernels written without ``T.Kernel``
(one thread), ``T.wgmma_gemm`` (a GEMM forced onto WGMMA), the atomics (``T.atomic_max`` / ``atomic_min``
tiles, element atomics with no vector form, scalars onto regions) and a region running past a
``T.Tensor`` view of a parameter.  Their kernels are in :mod:`tests.tilelang_kernels`, so
``tests/test_frontend_tilelang.py`` also compares them table for table, lowers them annotated and compiles
them; here, what the Program holds and the specific layouts.  The same constructs without TileLang are
in ``tests/test_infer_thread_bounds.py``."""

import functools

import pytest

from .tilelang_env import require_tilelang  # noqa: E402

require_tilelang()

from layoutkit.errors import UnsupportedError  # noqa: E402
from layoutkit.frontends.tilelang import check_selections, from_prim_func, tilelang_inference  # noqa: E402
from layoutkit.infer import infer_layouts  # noqa: E402
from layoutkit.testing.assertions import same_tables  # noqa: E402

from . import tilelang_kernels as K  # noqa: E402

pytestmark = pytest.mark.oracle


def _build(name: str):
    return (K.KERNELS.get(name) or K.NOT_LOWERED.get(name) or getattr(K, name))()


@functools.cache
def run_of(name: str, arch: str = "sm_80"):
    return tilelang_inference(_build(name), {"kind": "cuda", "arch": arch})


@functools.cache
def ours(name: str, arch: str = "sm_80"):
    run = run_of(name, arch)
    result = infer_layouts(run.program)
    check_selections(run.selections, result.layout_map)
    return result


def _equal(name: str, arch: str = "sm_80") -> None:
    run, result = run_of(name, arch), ours(name, arch)
    assert not run.failed, run.error
    assert run.layouts or run.loop_layouts
    for buf, theirs in run.layouts.items():
        assert same_tables(result.layout_map[buf], theirs), (name, buf)
    for op, theirs in run.loop_layouts.items():
        assert same_tables(result.loop_layouts[op], theirs), (name, op)


# ---- thread bounds --------------------------------------------------------------------------------

@pytest.mark.parametrize("name, start", [("masked_lower", 0), ("masked_upper", 128)])
def test_ops_under_a_thread_condition_run_on_the_threads_it_leaves(name, start):
    """``if tx < 128`` / ``if tx >= 128`` in a 256-thread block: TileLang's thread bounds of every op inside
    are the 128 threads the condition leaves; so are layoutkit's (each op records them)."""
    _equal(name)
    run, result = run_of(name), ours(name)
    assert run.program.threads == 256
    assert {tuple(op.args.get("thread_range", ())) for op in run.program.ops} == {(start, 128)}
    x = result.layout_map["x"]
    assert x.thread_range == (start, 128) and x.thread_extent == 128 and x.local_size == 128
    assert run.layouts["x"].thread_range == (start, 128)
    # the layout is the 128-thread block's, moved to the condition's threads
    alone = infer_layouts(from_prim_func(K.masked(threads=128), "sm_80")).layout_map["x"]
    assert same_tables(x, alone.bind_thread_range(start, 128))


def test_kernel_without_a_launch_is_laid_out_on_one_thread():
    """No ``T.Kernel``: TileLang's inference has no ``threadIdx.x`` and lays the kernel out on its default
    thread bounds ``[0, 1)``, one thread holding the whole fragment."""
    _equal("no_launch")
    run = run_of("no_launch")
    assert run.program.threads == 1
    x = ours("no_launch").layout_map["x"]
    assert (x.thread_extent, x.local_size, str(x.forward_thread)) == (1, 128, "0")
    assert run.layouts["x"].thread_range == (0, 1)


# ---- T.wgmma_gemm ---------------------------------------------------------------------------------

def test_wgmma_gemm_is_a_gemm_forced_onto_wgmma():
    """On sm_90a, ``T.wgmma_gemm`` over serial K slices equals TileLang's tables (and ``T.gemm``'s
    WGMMA layouts); on sm_80 TileLang's inference stops ("requires Hopper WGMMA lowering") and so does
    layoutkit's rule, with a typed error naming the op and the instruction T.gemm would select."""
    _equal("wgmma_gemm", "sm_90a")
    (gemm,) = [op for op in run_of("wgmma_gemm", "sm_90a").program.ops if op.kind == "gemm"]
    assert gemm.args["wgmma"] and "A_region" not in gemm.args  # one slice: the whole buffer
    sliced = tilelang_inference(K.wgmma_gemm(k_tiles=4), {"kind": "cuda", "arch": "sm_90a"})
    (gemm,) = [op for op in sliced.program.ops if op.kind == "gemm"]
    assert gemm.args["A_region"] == ((0, 0), (64, 16))  # the serial slice, read at k = 0
    result = infer_layouts(sliced.program)
    for buf, theirs in sliced.layouts.items():
        assert same_tables(result.layout_map[buf], theirs), buf
    run = run_of("wgmma_gemm", "sm_80")
    assert run.failed and "requires Hopper WGMMA lowering" in run.error
    with pytest.raises(UnsupportedError, match=r"gemm#\d+: T.wgmma_gemm requires WGMMA lowering .*on sm_80 with 128 "
                                               r"threads .*T.gemm selects mma"):
        infer_layouts(run.program)


# ---- atomics ----------------------------------------------------------------------------------------

def test_element_atomics_without_a_vector_form_plan_width_one_loops():
    """``atomic_max`` / ``atomic_min`` / ``atomic_load`` / ``atomic_store`` / ``atomic_add(return_prev=True)``
    have no vector form: TileLang's vectoriser keeps each loop at width 1, thread ``i % 2 * 16 + j``."""
    _equal("element_atomics_scalar")
    run = run_of("element_atomics_scalar")
    loops = [op for op in run.program.ops if op.kind == "parallel"]
    assert len(loops) == 4 and all(op.args["vector_cap"] == 1 for op in loops)
    for op in loops:
        lay = ours("element_atomics_scalar").loop_layouts[op.name]
        assert (str(lay.forward_thread), lay.local_size) == ("_i % 2 * 16 + _j", 8)


def test_tile_atomic_max_min_and_scalars_onto_regions_are_read():
    """Tile ``T.atomic_max`` / ``atomic_min`` propose no layout (the fragment ``x`` takes its copy's, as in
    TileLang); ``T.atomic_add(A[region], 1.0)`` and ``T.atomic_max(A[region], 0.5)`` loop over the region."""
    _equal("region_atomics")
    _equal("atomic_max_tile")
    ops = run_of("region_atomics").program.ops
    kinds = [(op.kind, op.args.get("value"), op.loop) for op in ops if op.kind.startswith("atomic")]
    assert kinds == [("atomic_max", None, (32, 32)), ("atomic_min", None, (32, 32)), ("atomic_max", None, (32, 32)),
                     ("atomic_add", 1.0, (32, 32)), ("atomic_max", 0.5, (32, 32))]
    (copy,) = [op for op in ops if op.kind == "copy" and op.args["dst"] == "x"]
    assert [d.op for d in ours("region_atomics").explain("x")] == [copy.name]  # set by its copy alone


def test_region_past_a_view_of_a_parameter_is_read():
    """``T.Tensor((576, 64), data=W.data)`` read 128 columns at a time: the view grows to the region (TileLang
    guards the reads past it), as a parameter tensor does."""
    _equal("view_past_the_tensor")
    program = run_of("view_past_the_tensor").program
    assert program.buffers["flat_view"].shape == (576, 128)
