"""A fragment indexed ``jj * p + j`` inside a parallel loop, ``jj`` from a serial loop around it (TileLang's
examples/deepseek_mhc/example_mhc_pre.py): the adapter reads the access at ``jj = 0`` and checks that the
solved fragment's thread map repeats every ``p`` along that dim, which is when TileLang 0.1.15's loop
layout (the fragment's thread map at ``(i, jj * p + j)``, ``jj`` a free symbol) is the same for every
``jj``.  Layoutkit alone here; tests/test_frontend_tilelang.py compares the kernel with TileLang."""

from __future__ import annotations

import numpy as np
import pytest

import layoutkit as lk
from layoutkit.errors import UnsupportedError
from layoutkit.frontends.tilelang_select import Selection, check_selections
from layoutkit.infer import Program, infer_layouts


def test_a_thread_map_of_the_period_passes_and_one_without_is_refused_with_a_witness():
    f = lk.Fragment([8, 16], forward_thread_fn=lambda i, j: i * 4 + j % 4, forward_index_fn=lambda i, j: j // 4)
    check_selections([Selection("parallel#1", "x", (1,), "loop", 4)], {"x": f})
    check_selections([Selection("parallel#1", "x", (1,), "loop", 8)], {"x": f})  # a multiple of it
    with pytest.raises(UnsupportedError, match=r"does not repeat every 2 along that dim \(thread 0 at \[0, 0\], "
                                               r"2 at \[0, 2\]\)"):
        check_selections([Selection("parallel#1", "x", (1,), "loop `for i, j`", 2)], {"x": f})


def test_the_loop_over_a_strided_window_follows_the_gemm_operand():
    """x (64 x 64, fp16) is GEMM operand A; the loop (64 x 8) reads x[i, jj * 8 + j], read at jj = 0.
    Its layout is x's thread map on the first 8 columns, which repeats every 8 columns (the mma
    m16n8k16 A fragment: lane % 4 is (column % 8) // 2), so it holds for every jj."""
    p = Program(threads=128, target="sm_80")
    x = p.alloc_fragment("x", (64, 64), "float16")
    w = p.alloc_shared("w", (64, 64), "float16")
    acc = p.alloc_fragment("acc", (64, 64), "float32")
    part = p.alloc_fragment("part", (64, 8), "float32")
    loop = p.parallel((64, 8), writes=[(part, "lambda i, j: (i, j)")],
                      reads=[(part, "lambda i, j: (i, j)"), (x, "lambda i, j: (i, j)")])
    p.gemm(x, w, acc, transpose_B=True)
    result = infer_layouts(p)
    check_selections([Selection(loop.name, "x", (1,), "loop", 8)], result.layout_map)
    xs = result.layout_map["x"].thread_table()
    assert xs.shape == (2, 64, 64)  # two warps along N share each row block of A
    np.testing.assert_array_equal(xs[:, :, 8:16], xs[:, :, :8])  # period 8 along the columns
    ours = result.loop_layouts[loop.name].thread_table()
    np.testing.assert_array_equal(ours, xs[:, :, :8])
    assert ours[0, 0].tolist() == [0, 0, 1, 1, 2, 2, 3, 3]  # row 0: lane (column % 8) // 2
