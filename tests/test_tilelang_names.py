"""TileLang habits on Layout / Fragment: the ``get_*`` accessors, the printed forms of TileLang 0.1.15
(recorded from ``T.Layout`` / ``T.Fragment``), and pycute's ``Layout(shape, stride)`` refused with a
pointer to ``tla.make_layout``."""

from __future__ import annotations

import pytest

import layoutkit as lk
from layoutkit import tla
from layoutkit.errors import ExprError, ShapeStrideError

# printed by TileLang 0.1.15 for the same constructions (T.Layout / T.Fragment)
TILELANG_LAYOUT = "Layout((16, 16) -> (8,), transform: (_i, _j) -> (_i // 2,))"
TILELANG_FRAGMENT = ("Fragment((16, 16) -> (8,), replicate: 1, thread: 32, forward_thread: _i * 2 + _j // 8, "
                     "forward_index: (_j % 8,))")
TILELANG_REPLICATED = ("Fragment((16, 16) -> (8,), replicate: 2, thread: 64, forward_thread: _rep * 32 + _i * 2 + "
                       "_j // 8, forward_index: (_j % 8,))")


def _layout():
    return lk.Layout([16, 16], lambda i, j: (i * 16 + j) // 32)


def _fragment(replicate: int = 1):
    if replicate == 1:
        return lk.Fragment([16, 16], forward_thread_fn=lambda i, j: i * 2 + j // 8, forward_index_fn=lambda i, j: j % 8)
    return lk.Fragment([16, 16], forward_thread_fn=lambda i, j, r: r * 32 + i * 2 + j // 8,
                       forward_index_fn=lambda i, j: j % 8, replicate=replicate)


def test_printed_forms_are_tilelangs():
    assert str(_layout()) == repr(_layout()) == TILELANG_LAYOUT
    assert str(_fragment()) == repr(_fragment()) == TILELANG_FRAGMENT
    assert str(_fragment(2)) == TILELANG_REPLICATED


def test_layout_accessors():
    L = _layout()
    assert L.get_input_shape() == L.input_size == (16, 16)
    assert L.get_output_shape() == (8,)
    assert [str(e) for e in L.get_forward_index()] == [str(e) for e in L.index] == ["_i // 2"]
    assert [v.name for v in L.get_forward_vars()] == ["_i", "_j"]
    M = lk.Layout([4, 8], lambda i, j: (j, i))
    assert str(M.get_linearized_forward_index()) == "_j * 4 + _i"


def test_fragment_accessors():
    F = _fragment(2)
    assert F.get_thread_size() == F.thread_extent == 64
    assert str(F.get_forward_thread()) == str(F.thread) == "_rep * 32 + _i * 2 + _j // 8"
    assert F.get_input_shape() == (16, 16) and F.get_output_shape() == (8,)
    assert [str(e) for e in F.get_forward_index()] == ["_j % 8"]
    assert F.replicate_size == 2 and F.thread_range is None


@pytest.mark.parametrize("shape, stride", [((2, 3), (3, 1)), ((4,), (1,)), ((4, 4), (1, 4)), (8, 1),
                                           ((2, (2, 2)), (1, (2, 4)))])
def test_pycute_shape_stride_is_refused_with_a_pointer(shape, stride):
    with pytest.raises(ShapeStrideError) as err:
        lk.Layout(shape, stride)
    text = str(err.value)
    assert "looks like pycute's Layout(shape, stride)" in text
    assert f"layoutkit.tla.make_layout({shape!r}, {stride!r})" in text
    assert isinstance(err.value, ExprError) and isinstance(err.value, lk.LayoutError)


def test_the_suggested_index_function_is_the_pycute_layout():
    with pytest.raises(ShapeStrideError, match=r"lk.Layout\(\[2, 3\], lambda i, j: i \* 3 \+ j \* 1\)"):
        lk.Layout((2, 3), (3, 1))
    # the suggestion and tla.make_layout agree element for element (row-major coordinates on both sides)
    suggested = lk.Layout([2, 3], lambda i, j: i * 3 + j * 1)
    cute = tla.make_layout((2, 3), (3, 1))
    assert [[suggested.map_forward_index([i, j])[0] for j in range(3)] for i in range(2)] == [
        [int(cute((i, j))) for j in range(3)] for i in range(2)]


def test_expressions_and_functions_still_build():
    i = lk.Var("_i", 4)
    assert lk.Layout([4], [i * 2]).output_shape == (7,)
    assert lk.Layout([2, 3], lambda i, j: (3, 1)).output_shape == (4, 2)  # a constant map, written as a function


@pytest.mark.oracle
def test_printed_forms_match_installed_tilelang():
    T = pytest.importorskip("tilelang.language")
    tl_layout = T.Layout([16, 16], lambda i, j: (i * 16 + j) // 32)
    tl_fragment = T.Fragment([16, 16], forward_thread_fn=lambda i, j: i * 2 + j // 8,
                             forward_index_fn=lambda i, j: j % 8)
    assert str(tl_layout) == str(_layout())
    assert str(tl_fragment) == str(_fragment())
    assert tuple(tl_layout.get_output_shape()) == _layout().get_output_shape()
    assert int(tl_fragment.get_thread_size()) == _fragment().get_thread_size()
