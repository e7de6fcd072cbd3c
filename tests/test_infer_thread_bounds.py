"""Program constructs TileLang kernels need, checked without TileLang: ops bound to part of the block
(``Program.thread_bounds``, TileLang's thread bounds under ``if tx < 128``), the tile atomics
``atomic_max`` / ``atomic_min`` and scalars onto regions, and ``wgmma_gemm(...)``
(``T.wgmma_gemm``).  The TileLang kernels that use them are compared with TileLang in
``tests/test_frontend_tilelang_bounds.py``."""

import contextlib

import pytest

from layoutkit.errors import ShapeError, UnsupportedError
from layoutkit.infer import OpValidationError, Program, infer_layouts
from layoutkit.testing.assertions import same_tables


def _masked(threads: int, bounds=None):
    p = Program(threads=threads, target="sm_80")
    A, B = p.tensor("A", (128, 128), "float16"), p.tensor("B", (128, 128), "float16")
    x = p.alloc_fragment("x", (128, 128), "float32")
    with p.thread_bounds(*bounds) if bounds else contextlib.nullcontext():
        p.copy(A, x)
        op = p.parallel((128, 128), writes=[(x, "lambda i, j: (i, j)")], reads=[(x, "lambda i, j: (i, j)")])
        p.copy(x, B)
    return p, op


def test_ops_bound_to_part_of_the_block_are_laid_out_on_those_threads():
    """Inside ``thread_bounds(128, 128)`` of a 256-thread block, the loop and the fragment are laid out
    on 128 threads (the 128-thread block's layout), bound to threads [128, 256)."""
    p, op = _masked(256, (128, 128))
    assert all(o.args["thread_range"] == [128, 128] for o in p.ops)
    r = infer_layouts(p)
    x = r.layout_map["x"]
    assert (str(x.forward_thread), str(x.forward_index[0])) == ("_i % 8 * 16 + _j // 8", "_i // 8 * 8 + _j % 8")
    assert x.thread_range == (128, 128) and x.thread_extent == 128
    assert r.loop_layouts[op.name].thread_range == (128, 128)
    alone = infer_layouts(_masked(128)[0]).layout_map["x"]
    assert same_tables(x, alone.bind_thread_range(128, 128))
    # the whole block's threads, as an op outside any bound
    whole, _ = _masked(256)
    assert infer_layouts(whole).layout_map["x"].thread_extent == 256


def test_thread_bounds_round_trip_and_are_checked():
    p, _ = _masked(256, (0, 128))
    again = Program.from_json(p.to_json())
    assert [o.args["thread_range"] for o in again.ops] == [[0, 128]] * 3
    assert same_tables(infer_layouts(again).layout_map["x"], infer_layouts(p).layout_map["x"])
    q = Program(threads=256)
    with q.thread_bounds(0, 256):  # the whole block records nothing
        op = q.fill(q.alloc_fragment("y", (4,), "float32"), 0.0)
    assert "thread_range" not in op.args
    for start, extent in ((128, 256), (-1, 4), (0, 0), (1.5, 4)):
        with pytest.raises(ShapeError, match=r"thread_bounds: expected threads \[start, start \+ extent\) inside the "
                                             r"block's 256"):
            with q.thread_bounds(start, extent):
                pass


def test_tile_atomic_max_and_min_propose_no_layout():
    """A fragment read by a tile ``atomic_max`` / ``atomic_min`` is laid out by its other users alone."""
    p = Program(threads=128)
    A, O = p.tensor("A", (64, 64), "float32"), p.tensor("O", (64, 64), "float32")
    x = p.alloc_fragment("x", (64, 64), "float32")
    copy = p.copy(A, x)
    mx, mn = p.atomic_max(O, x), p.atomic_min(O[0:64, 0:64], x)
    assert (mx.kind, mx.loop, mn.kind, mn.args["src"]) == ("atomic_max", (64, 64), "atomic_min", "x")
    r = infer_layouts(p)
    assert [d.op for d in r.explain("x")] == [copy.name]
    assert str(r.layout_map["x"].forward_thread) == "_i % 8 * 16 + _j // 4"


def test_scalar_onto_a_region_loops_over_it():
    p = Program(threads=128)
    A = p.tensor("A", (128, 128), "float32")
    op = p.atomic_add(A[32:64, 0:32], 1.0)
    assert (op.kind, op.loop, op.args["value"], op.args["dst_region"]) == ("atomic_add", (32, 32), 1.0,
                                                                           ((32, 0), (32, 32)))
    assert [str(e) for e in op.accesses[0].indices] == ["_i + 32", "_j"] and op.accesses[0].is_write
    assert p.atomic_max(A[5, 0:16], 0.5).loop == (16,)  # unit dims stay at their start
    point = p.atomic_add(A[3, 4], 2.0, return_prev=True)  # one element: the element form
    assert point.loop is None and point.args["starts"] == [3, 4] and point.args["return_prev"]
    with pytest.raises(OpValidationError, match="cannot return the previous value"):
        p.atomic_add(A[0:8, 0:8], 1.0, return_prev=True)
    assert infer_layouts(p).layout_map == {}


def _gemm(target: str, wgmma: bool):
    p = Program(threads=128, target=target)
    A, B = p.alloc_shared("A_s", (64, 32), "float16"), p.alloc_shared("B_s", (32, 64), "float16")
    C = p.alloc_fragment("C", (64, 64), "float32")
    (p.wgmma_gemm if wgmma else p.gemm)(A, B, C)
    return p


def test_wgmma_gemm_is_the_gemm_where_wgmma_is_selected_and_refused_elsewhere():
    forced, plain = infer_layouts(_gemm("sm_90", True)), infer_layouts(_gemm("sm_90", False))
    assert _gemm("sm_90", True).ops[0].args["wgmma"] and "wgmma" not in _gemm("sm_90", False).ops[0].args
    for buf in ("A_s", "B_s", "C"):
        assert same_tables(forced.layout_map[buf], plain.layout_map[buf]), buf
    with pytest.raises(UnsupportedError, match=r"gemm#0: T.wgmma_gemm requires WGMMA lowering .* on sm_80 with 128 "
                                               r"threads and A shared.dyn \[64, 32\] float16, .*T.gemm selects mma"):
        infer_layouts(_gemm("sm_80", True))
