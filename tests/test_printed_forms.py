"""One printed form per object and typed refusals: layouts print the same in reprs and errors, F2Linear
prints as Triton's LinearLayout, and small APIs raise typed errors instead of returning None or leaking
ModuleNotFoundError."""

from __future__ import annotations

import sys

import pytest

import layoutkit as lk
from layoutkit.algebra.linear import F2Linear
from layoutkit.errors import OptionalDependencyError, ShapeError, UnsupportedError
from layoutkit.targets import nv


def test_describe_is_the_repr_when_the_output_shape_is_known():
    layout = lk.Layout([4, 8], lambda i, j: (j, i))
    assert layout.describe() == str(layout) == "Layout((4, 8) -> (8, 4), transform: (_i, _j) -> (_j, _i))"
    frag = lk.Fragment([4, 4], forward_thread_fn=lambda i, j: j, forward_index_fn=lambda i, j: i)
    frag.thread_extent  # noqa: B018 - computed once, then the message shows it too
    assert frag.describe() == str(frag)


def test_describe_never_enumerates_and_says_so_with_a_question_mark():
    layout = lk.Layout([6, 10], lambda i, j: (j % 5 * 12 + i * 2 + j // 5,))
    assert layout.describe() == "Layout((6, 10) -> (?), transform: (_i, _j) -> (_j % 5 * 12 + _i * 2 + _j // 5,))"
    assert str(layout).startswith("Layout((6, 10) -> (60,), transform:")


def test_errors_print_layouts_in_the_repr_form():
    with pytest.raises(lk.LayoutError) as err:
        lk.Layout([4, 4], lambda i, j: i * 3 + j).to_linear()
    assert str(err.value).startswith("Layout((4, 4) -> (13,), transform: (_i, _j) -> (_i * 3 + _j,)) is not F2-linear")


def test_f2linear_prints_as_triton_linear_layout():
    mma = F2Linear.from_bases({"register": [[0, 1], [8, 0]], "lane": [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]],
                               "warp": []}, {"dim0": 16, "dim1": 8})
    assert str(mma) == (
        "\n"
        " - register=1 -> (0, 1)\n"
        "   register=2 -> (8, 0)\n"
        " - lane=1 -> (0, 2)\n"
        "   lane=2 -> (0, 4)\n"
        "   lane=4 -> (1, 0)\n"
        "   lane=8 -> (2, 0)\n"
        "   lane=16 -> (4, 0)\n"
        " - warp is a size 1 dimension\n"
        "where out dims are: [dim0 (size 16), dim1 (size 8)]"
    )
    assert repr(mma).startswith("F2Linear(in_dims=")  # the constructor form stays the repr


def test_swizzle_kind_refuses_a_layout():
    with pytest.raises(ShapeError, match=r"expects a tla.Swizzle .* found Layout .*swizzle_info"):
        nv.swizzle_kind(nv.make_full_bank_swizzled_layout((16, 64), "float16"), "float16")
    assert nv.swizzle_kind(nv.cute_swizzle("full", "float16"), "float16") == "full"


def test_to_tilelang_without_tilelang_names_the_extra(monkeypatch):
    from layoutkit.frontends import tilelang as tl_frontend

    monkeypatch.setitem(sys.modules, "tilelang", None)  # `import tilelang` fails as when it is not installed
    with pytest.raises(OptionalDependencyError, match=r"pip install 'layoutkit\[tilelang\]'") as err:
        tl_frontend.to_tilelang(lk.Layout([4], lambda i: i))
    assert err.value.extra == "tilelang"
    assert isinstance(err.value, UnsupportedError) and isinstance(err.value, ImportError)
    with pytest.raises(UnsupportedError, match="expected a layoutkit Layout"):  # the input is checked first
        tl_frontend.to_tilelang("not a layout")
