"""Free-level loop plans as TileLang 0.1.15 makes them, checked without TileLang: the expected tables are
TileLang's own for the same kernels (the oracle tests in ``test_frontend_tilelang_loops.py`` compare them
with TileLang itself where it is installed).

- A fragment loop whose points are more than the threads but not a multiple of them has no TileLang
  partition: an attempt rooted there fails, so another root lays the fragment out; only when every
  TileLang-like attempt fails does layoutkit deal whole rows (a fallback beyond TileLang).
- ``vector_cap`` (what the adapter reads off an opaque call) and ``align`` (what it proves of a global
  address) bound the plan's vector width.
- A fragment read only at an index from outside the loop (``Program.select`` of every dim) lays the
  loop out on every thread when fully replicated, and is refused when spread over threads.
"""

import numpy as np
import pytest

import layoutkit as lk
from layoutkit.errors import UnsupportedError
from layoutkit.infer import Program, infer_layouts
from layoutkit.infer.partition import deals_rows


def _ragged_root(rows=16, cols=14, group=32):
    """A ``rows x cols`` int32 fragment copied in from global memory, read as ``a[i, j // group]`` by a
    ``rows x cols * group`` loop storing to global memory (TileLang's issue 1374 kernel)."""
    p = Program(threads=128)
    A = p.tensor("A", (rows, cols), "int32")
    B = p.tensor("B", (rows, cols * group), "int32")
    a = p.alloc_fragment("a", (rows, cols), "int32")
    copy = p.copy(A, a)
    loop = p.parallel((rows, cols * group), writes=[(B, lambda i, j: (i, j))],
                      reads=[(B, lambda i, j: (i, j)), (a, lambda i, j: (i, j // group))])
    return p, copy, loop


def test_deals_rows_only_for_a_ragged_fragment_plan():
    assert deals_rows((16, 14), 1, 128, True)  # 224 points on 128 threads
    assert deals_rows((100, 7), 1, 128, True)
    assert not deals_rows((24, 16), 1, 128, True)  # 384 = 3 rounds
    assert not deals_rows((8, 8), 1, 128, True)  # fewer points than threads: replicated
    assert not deals_rows((16, 14), 1, 128, False)  # no fragment: padded and guarded instead


def test_ragged_copy_root_fails_and_the_loop_lays_the_fragment_out():
    p, copy, loop = _ragged_root()
    result = infer_layouts(p)
    lay = result.layout_map["a"]
    # TileLang: the loop is planned 4 int32 wide, the fragment completed from it through j // 32; the
    # 32 loop points of one element span 8 threads (4 each), replicated 8 ways
    assert lay.replicate_size == 8 and lay.local_size == 14 and lay.thread_extent == 128
    r, i, c = np.meshgrid(np.arange(8), np.arange(16), np.arange(14), indexing="ij")  # thread_table: [rep, i, c]
    np.testing.assert_array_equal(lay.thread_table(), (i * 14 + c) % 16 * 8 + r)
    np.testing.assert_array_equal(lay.table()[..., 0], (np.arange(16)[:, None] * 14 + np.arange(14)) // 16)
    plan = result.loop_layouts[loop.name]
    ii, jj = np.meshgrid(np.arange(16), np.arange(448), indexing="ij")
    np.testing.assert_array_equal(plan.thread_table()[0], (ii * 112 + jj // 4) % 128)
    assert result.derivations["a"][-1].op == loop.name  # not the copy's (ragged) plan
    assert result.loop_layouts[copy.name].replicate_size == 8


def test_a_ragged_fragment_nothing_else_lays_out_still_gets_whole_rows():
    """Every TileLang-like attempt fails (TileLang: "no available layout found"); the fallback deals the
    100 rows of 7 to 100 threads."""
    p = Program(threads=128)
    A = p.tensor("A", (100, 7), "float32")
    B = p.tensor("B", (100, 7), "float32")
    a = p.alloc_fragment("a", (100, 7), "float32")
    p.copy(A, a)
    p.parallel((100, 7), writes=[(B, lambda i, j: (i, j))], reads=[(a, lambda i, j: (i, j))])
    lay = infer_layouts(p).layout_map["a"]
    assert lay.thread_extent == 100 and lay.local_size == 7
    np.testing.assert_array_equal(lay.thread_table()[0], np.repeat(np.arange(100)[:, None], 7, axis=1))


@pytest.mark.parametrize("cap, thread", [
    (None, lambda i, j: i * 8 + j // 2),  # 64-bit elements: 2 per 128-bit vector
    (1, lambda i, j: i % 8 * 16 + j),  # an opaque call reading A[i, j]: scalar
])
def test_vector_cap_bounds_the_plan(cap, thread):
    """TileLang's plans of a 16 x 16 float64 global loop on 128 threads, with and without the call
    constraint of ``T.ieee_frsqrt(A[i, j])`` (its test_ieee_frsqrt_fp64_rejected kernel)."""
    p = Program(threads=128)
    A = p.tensor("A", (32, 32), "float64")
    B = p.tensor("B", (32, 32), "float64")
    loop = p.parallel((16, 16), writes=[(B, lambda i, j: (i, j))], reads=[(A, lambda i, j: (i, j))], vector_cap=cap)
    plan = infer_layouts(p).loop_layouts[loop.name]
    i, j = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
    np.testing.assert_array_equal(plan.thread_table()[0], thread(i, j))


@pytest.mark.parametrize("align, width", [(None, 16), (2, 2)])
def test_address_alignment_bounds_the_plan(align, width):
    """A 64 x 8192 uint8 loop on 128 threads: 16 wide when the address is known aligned (TileLang's issue
    2883 kernel: TileLang fuses the nest, or a condition pins the row, and the runtime stride drops out),
    2 wide when only an even stride is known."""
    p = Program(threads=128)
    src = p.tensor("src", (64, 8192), "uint8")
    dst = p.tensor("dst", (64, 8192), "uint8")
    loop = p.parallel((64, 8192), writes=[(dst, lambda i, j: (i, j))], reads=[(src, lambda i, j: (i, j))],
                      align=None if align is None else {"src": align, "dst": align})
    plan = infer_layouts(p).loop_layouts[loop.name]
    j = np.arange(8192)
    np.testing.assert_array_equal(plan.thread_table()[0, 0], j % (128 * width) // width)


def test_a_condition_cap_bounds_a_fused_plan():
    """``if j % 4 < 2`` in a 64 x 64 fp16 loop: TileLang's plan is 2 wide (the adapter reads the cap)."""
    p = Program(threads=128)
    A = p.tensor("A", (64, 64), "float16")
    B = p.tensor("B", (64, 64), "float16")
    loop = p.parallel((64, 64), writes=[(B, lambda i, j: (i, j))], reads=[(A, lambda i, j: (i, j))], vector_cap=2)
    assert str(infer_layouts(p).loop_layouts[loop.name].forward_thread) == "_i % 4 * 32 + _j // 2"


def test_plan_index_is_spelled_as_tilelang_spells_it():
    """The vector index, then its round: TileLang's lowering proves ``(i * 112 + j // 4) // 128`` bijective
    and not ``(i * 448 + j) // 512`` (the same table)."""
    from layoutkit.infer.partition import plan_partition

    plan, guard = plan_partition((16, 448), 4, 128, True, (0, 128))
    assert guard is None
    assert str(plan.forward_index[0]) == "(_i * 112 + _j // 4) // 128 * 4 + _j % 4"
    assert str(plan.forward_thread) == "(_i * 112 + _j // 4) % 128"
    ii, jj = np.meshgrid(np.arange(16), np.arange(448), indexing="ij")
    np.testing.assert_array_equal(plan.table()[..., 0], (ii * 448 + jj) // 512 * 4 + jj % 4)


def _outer_read(selected: bool, replicated: bool):
    """``x`` (128 elements) then read at one index by a loop of extent 1 storing to global memory: a
    constant ``x[0]``, or (``selected``) ``x[k]`` with ``k`` from outside the loop, read at ``k = 0``."""
    p = Program(threads=128)
    A, O = p.tensor("A", (128,), "float32"), p.tensor("O", (1,), "float32")
    x = p.alloc_fragment("x", (128,), "float32")
    if replicated:
        p.annotate_layout({x: lk.make_fully_replicated_fragment((128,), 128)})
    p.parallel((128,), writes=[(x, lambda i: (i,))], reads=[(A, lambda i: (i,))])
    op = p.parallel((1,), writes=[(O, lambda _: (0,))], reads=[(x, lambda _: (0,))])
    if selected:
        op = p.select(op, x, [0])
    return p, op.name


def test_a_fragment_read_only_at_an_outer_index_follows_a_replicated_layout():
    """Fully replicated: every thread reads ``x[k]`` whatever ``k``, so the loop is laid out on every thread
    (its store guarded to replica 0), as for the constant index."""
    for selected in (False, True):
        p, loop = _outer_read(selected, replicated=True)
        result = infer_layouts(p)
        assert result.loop_layouts[loop].replicate_size == 128
        assert str(result.loop_layouts[loop].forward_thread) == "_rep"
        assert result.guards[loop].holds(_thread=np.arange(3)).tolist() == [True, False, False]


def test_a_fragment_spread_over_threads_read_only_at_an_outer_index_is_refused():
    """A constant ``x[0]`` is no source of the loop (the loop's only fragment, at a constant index: the
    plan lays it out); ``x[k]`` is, and lives on thread ``k``: TileLang's loop layout is a function of
    ``k``, refused, naming the loop and the dim."""
    p, loop = _outer_read(selected=False, replicated=False)
    assert str(infer_layouts(p).loop_layouts[loop].forward_thread) == "_rep"
    p, loop = _outer_read(selected=True, replicated=False)
    with pytest.raises(UnsupportedError, match=rf"{loop}: fragment x laid out as Fragment\(\(128,\) .* "
                                               r"forward_thread: _i, .* is indexed only by variables from outside "
                                               r"the loop "
                                               r"\(dims \[0\]\)"):
        infer_layouts(p)
