"""Constructs the TileLang adapter reads as TileLang 0.1.15 does, checked against TileLang itself: ops under
a condition on ``threadIdx.x`` (laid out on the threads it leaves), kernels written without ``T.Kernel``
(one thread), ``T.wgmma_gemm`` (a GEMM forced onto WGMMA), the atomics (``T.atomic_max`` / ``atomic_min``
tiles, element atomics with no vector form, scalars onto regions), a region running past a
``T.Tensor`` view of a parameter or a ``T.make_tensor`` over a pointer, and (sm_90a) TMA copies into shared
column slices moving with an unrolled loop.  Their kernels are in :mod:`tests.tilelang_kernels`, so
``tests/test_frontend_tilelang.py`` also compares them table for table, lowers them annotated and compiles
them; here, what the Program holds and the specific layouts.  The same constructs without TileLang are
in ``tests/test_infer_thread_bounds.py``."""

import functools
import shutil
import subprocess
from pathlib import Path

import pytest

from .tilelang_env import require_tilelang  # noqa: E402

require_tilelang()

import tilelang  # noqa: E402

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


# ---- a pointer-made tensor read past its rows; shared starts moving in a wide dim -----------------

def test_pointer_made_tensor_read_past_its_rows_is_read():
    """``T.make_tensor(ptrs[g], (13, 64))`` read 64 rows at a time from a runtime start (a grouped GEMM's
    group): TileLang guards the rows past 13, so the Program's tensor grows to the region, as a
    parameter's does, and the copies equal TileLang's; the fragment is the plain copy layout."""
    _equal("pointer_rows")
    run = run_of("pointer_rows")
    assert run.program.buffers["A"].shape == (64, 64)
    (load,) = [op for op in run.program.ops if op.kind == "copy" and op.args["src"] == "A"]
    assert load.args["src_region"] == ((0, 0), (64, 32))
    x = ours("pointer_rows").layout_map["x"]
    assert (str(x.forward_thread), x.local_size) == ("_i % 32 * 4 + _j // 8", 16)


@functools.cache
def _column_slices():
    return tilelang_inference(K.column_slices(), {"kind": "cuda", "arch": "sm_90a"})


def test_tma_copy_into_column_slices_moving_with_an_unrolled_loop():
    """sm_90a: ``T.tma_copy(A[:, j*64:(j+1)*64], a[:, j*64:(j+1)*64])`` in an unrolled loop over ``j`` (a shared
    start moving in a dim 64 wide) and a ``T.wgmma_gemm`` per slice with ``clear_accum=j == 0``.  A shared
    buffer has one layout, so the start reads as one start of its alignment (``j * 64`` as 64, inside
    the 256 columns); the run-time ``clear_accum`` reads as "may accumulate" (no layout depends on it).
    Equal to TileLang's tables; ``a`` is the 128-byte swizzle over 64-column atoms."""
    run = _column_slices()
    assert not run.failed, run.error
    result = infer_layouts(run.program)
    for buf, theirs in run.layouts.items():
        assert same_tables(result.layout_map[buf], theirs), buf
    assert sorted(run.layouts) == ["a", "b", "c"]
    copies = [op for op in run.program.ops if op.kind == "copy" and op.args["dst"] in ("a", "b")]
    assert [op.args["dst_region"] for op in copies] == [((0, 64), (64, 64))] * 2
    (gemm,) = [op for op in run.program.ops if op.kind == "gemm"]
    assert gemm.args["wgmma"] and gemm.args["clear_accum"] is False
    assert str(result.layout_map["a"]) == ("Layout((64, 256) -> (4, 8, 512), transform: (_i, _j) -> "
                                           "(_j // 64, _i // 8, _i % 8 * 64 + (_j % 64 // 8 ^ _i % 8) * 8 + _j % 8))")


def test_tma_copy_into_column_slices_fails_on_sm80_in_both():
    """sm_80 has no TMA: TileLang's copy stops ("requires TMA-capable target"), and layoutkit's WGMMA rule
    refuses the ``T.wgmma_gemm`` with a typed error (the suite records the flash-MLA example as both-fail)."""
    run = tilelang_inference(K.column_slices(), {"kind": "cuda", "arch": "sm_80"})
    assert run.failed and "requires TMA-capable target" in run.error
    with pytest.raises(UnsupportedError, match=r"gemm#\d+: T.wgmma_gemm requires WGMMA lowering"):
        infer_layouts(run.program)


def test_moving_shared_start_reads_the_alignment_of_its_values():
    """The representative start of ``base + coeff * k``: its gcd, or None where no region fits there."""
    from layoutkit.frontends.tilelang_starts import representative

    assert [representative(0, 64, 256, 64), representative(8, 64, 256, 64), representative(32, 48, 256, 64),
            representative(0, 256, 256, 64), representative(0, 0, 256, 64)] == [64, 8, 16, None, None]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_tma_copy_into_column_slices_lowers_and_compiles_for_sm90a(tmp_path):
    """Lowered by TileLang's pipeline with layoutkit as its layout pass (no fallback), compiled for sm_90a."""
    from layoutkit.frontends.tilelang import lower

    src = tmp_path / "column_slices.cu"
    src.write_text(lower(K.column_slices(), {"kind": "cuda", "arch": "sm_90a"}, fallback=False).kernel_source)
    root = Path(tilelang.__file__).resolve().parent
    cmd = ["nvcc", "-arch=sm_90a", "-std=c++17", "-w", "-c", str(src), "-o", str(tmp_path / "k.o"),
           f"-I{root / 'src'}", f"-I{root / '3rdparty' / 'cutlass' / 'include'}"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "k.o").stat().st_size > 0


def test_gemms_on_two_warp_groups_lay_each_accumulator_on_its_group():
    """``T.ws(0)`` / ``T.ws(1)`` put one GEMM on threads 0..127 and one on 128..255 of a 256-thread block:
    each accumulator is laid out over its own group's 128 threads (the same thread map, offset by the
    range), as TileLang does.  Read before thread bounds, both spanned all 256 threads and the tables
    differed (TileLang's warp-specialised copy/GEMM example was recorded ``differ`` on both halves)."""
    _equal("warp_group_gemms")
    result = ours("warp_group_gemms")
    c0, c1 = result.layout_map["c0"], result.layout_map["c1"]
    assert (c0.thread_range, c1.thread_range) == ((0, 128), (128, 128))
    thread = "_j // 16 * 64 + _i // 32 * 32 + _i % 8 * 4 + _j % 8 // 2"
    assert str(c0.forward_thread) == str(c1.forward_thread) == thread
    assert c1.local_size == 16
