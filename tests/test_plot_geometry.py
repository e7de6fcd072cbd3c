"""The demo's figures (``layoutkit infer examples/gemm.py --plot``) read well: checked on their geometry (axes
extents in pixels at the saved dpi, title text, the colour array), never on pixels."""

from __future__ import annotations

import numpy as np
import pytest

import layoutkit as lk
from layoutkit import infer
from layoutkit.algebra.linear import F2Linear
from layoutkit.targets import nv

pytest.importorskip("matplotlib")

from layoutkit.plot import buffer_figure, plot_layout  # noqa: E402
from layoutkit.plot._mpl import SAVE_DPI  # noqa: E402
from layoutkit.plot.draw import MIN_CELL_PX, TICK_INCHES  # noqa: E402
from layoutkit.plot.schemes import CHUNK_COLORS, warp_lane_color  # noqa: E402


def _close(fig) -> None:
    import matplotlib.pyplot as plt

    plt.close(fig)


@pytest.fixture(scope="module")
def gemm_figures():
    """The figures ``layoutkit infer examples/gemm.py --plot`` writes (the demo's), by buffer."""
    prog = infer.programs.gemm(M=1024, N=1024, K=1024, bM=128, bN=128, bK=32, threads=128)
    result = infer.infer_layouts(prog, cost_model="register-count")
    figs = {name: buffer_figure(prog, name, layout) for name, layout in result.layout_map.items()}
    yield figs
    for fig in figs.values():
        _close(fig)


def _cell_axes(fig) -> list:
    """The axes that draw cells (not colour bars or keys): their mesh / image carries a ``cells`` gid."""
    return [ax for ax in fig.axes
            if any((child.get_gid() or "").startswith("cells") for child in ax.get_children())]


def _cells_px(fig, ax) -> tuple[float, float]:
    """Width and height of one cell in pixels at the saved dpi."""
    box = ax.get_window_extent()
    cols = abs(ax.get_xlim()[1] - ax.get_xlim()[0])
    rows = abs(ax.get_ylim()[1] - ax.get_ylim()[0])
    return box.width / cols, box.height / rows


def _colors(ax) -> np.ndarray:
    """The face colours of the axes' cells as ``rows x cols x 4``."""
    (mesh,) = [c for c in ax.get_children() if (c.get_gid() or "").startswith("cells")]
    rows = int(abs(ax.get_ylim()[0] - ax.get_ylim()[1]))
    if hasattr(mesh, "get_facecolor"):  # vector cells
        return np.asarray(mesh.get_facecolor()).reshape(rows, -1, 4)
    return np.asarray(mesh.get_array())  # a raster image of the cells (big grids)


def test_every_title_names_its_buffer_and_says_what_it_is(gemm_figures):
    titles = {name: fig.get_suptitle() for name, fig in gemm_figures.items()}
    assert titles == {
        "A_shared": "A_shared: 64-byte swizzle, 2 stages, float16",  # a 32-element fp16 row is 64 bytes
        "B_shared": "B_shared: 128-byte swizzle, 2 stages, float16",
        "C_local": "C_local: register fragment, 128 threads (4 warps) x 128 registers, float32",
    }
    for fig in gemm_figures.values():  # the formula is one subtitle line, not the title
        (sub,) = [t for t in fig.texts if t.get_gid() == "subtitle"]
        assert "\n" not in sub.get_text() and "->" in sub.get_text() or "thread:" in sub.get_text()


def test_every_drawn_cell_is_square_and_at_least_12_pixels(gemm_figures):
    for name, fig in gemm_figures.items():
        assert fig.dpi == SAVE_DPI
        axes = _cell_axes(fig)
        assert axes, name
        for ax in axes:
            w, h = _cells_px(fig, ax)
            assert min(w, h) >= MIN_CELL_PX, (name, ax.get_title(), w, h)
            assert abs(w - h) < 0.5, (name, ax.get_title(), w, h)


def test_shared_buffers_draw_16_byte_chunks(gemm_figures):
    ax = _cell_axes(gemm_figures["B_shared"])[0]
    assert ax.get_title() == "stage 0: [0, :, :]"
    assert ax.get_xlim() == (0.0, 16.0) and ax.get_ylim() == (32.0, 0.0)  # 128 fp16 columns = 16 chunks
    assert ax.get_xlabel() == "_k // 8"
    labels = [t.get_text() for t in ax.texts]
    assert labels[:8] == [f"c{k}" for k in range(8)]  # row 0: the chunks in order


def test_swizzle_colours_repeat_with_the_swizzle_period(gemm_figures):
    """128-byte swizzle: chunk ``c`` of row ``r`` lands in slot ``c ^ (r % 8)``, so the colours repeat every
    8 rows (and not sooner), and each row's 8 chunks of a 128-byte line take the 8 colours once each."""
    colors = _colors(_cell_axes(gemm_figures["B_shared"])[0])
    assert np.array_equal(colors[8:], colors[:-8])
    for period in (1, 2, 4):
        assert not np.array_equal(colors[period:], colors[:-period])
    palette = {tuple(np.round(c, 6)) for c in CHUNK_COLORS}
    for row in colors:
        assert {tuple(np.round(c, 6)) for c in row[:8]} == palette
    # 64-byte swizzle of A (two 32-element rows per 128-byte line): a period of 8 rows as well
    a = _colors(_cell_axes(gemm_figures["A_shared"])[0])
    assert np.array_equal(a[8:], a[:-8]) and not np.array_equal(a[4:], a[:-4])


def test_tall_tiles_are_cut_into_side_by_side_slices(gemm_figures):
    titles = [ax.get_title() for ax in _cell_axes(gemm_figures["A_shared"])]
    assert titles[:2] == ["stage 0: [0, :, :],\nrows 0-31", "stage 0: [0, :, :],\nrows 32-63"]
    assert len(titles) == 8  # 2 stages x 4 slices of 32 rows


def test_fragment_is_coloured_by_warp_and_lane_with_a_labelled_zoom(gemm_figures):
    fig = gemm_figures["C_local"]
    grid, zoom = _cell_axes(fig)
    colors = _colors(grid)
    # thread 0 holds (0, 0), thread 32 (warp 1) (64, 0), thread 64 (warp 2) (0, 64): one hue per warp
    assert np.allclose(colors[0, 0], warp_lane_color(0)) and np.allclose(colors[64, 0], warp_lane_color(32))
    assert np.allclose(colors[0, 64], warp_lane_color(64))
    assert np.abs(colors[0, 0][:3] - colors[64, 0][:3]).max() > 0.3
    assert zoom.get_title().startswith("zoom: rows 0-7, cols 0-7")
    texts = [t.get_text() for t in zoom.texts]
    assert len(texts) == 64 and texts[:4] == ["T0 L0", "T0 L1", "T1 L0", "T1 L1"]
    (key,) = [ax for ax in fig.axes if ax.get_gid() == "thread-key"]
    assert key.get_xlabel() == "lane" and key.get_ylabel() == "warp"


def test_a_3d_layout_that_is_not_a_pipeline_has_no_stage_titles():
    layout = lk.Layout([2, 8, 8], lambda i, j, k: (i, k, j))
    fig = plot_layout(layout)
    try:
        assert [ax.get_title() for ax in _cell_axes(fig)] == ["[0, :, :]", "[1, :, :]"]
    finally:
        _close(fig)


def test_a_1d_colour_bar_has_room_between_its_ticks():
    fig = plot_layout(lk.Layout([64], lambda i: 63 - i))
    try:
        bar = fig.axes[-1]
        ticks = [t for t in bar.get_yticks() if bar.get_ylim()[0] <= t <= bar.get_ylim()[1]]
        inches = bar.get_position().height * fig.get_size_inches()[1]
        span = bar.get_ylim()[1] - bar.get_ylim()[0]
        gaps = np.diff(ticks) * inches / span
        assert len(ticks) >= 3 and gaps.min() >= TICK_INCHES
    finally:
        _close(fig)


def test_plot_layout_draws_an_f2linear():
    mma = F2Linear.from_bases({"register": [[0, 1]], "lane": [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]]},
                              ["dim0", "dim1"])  # the 8 x 8 mma.sync accumulator block
    fig = plot_layout(mma)
    try:
        assert fig.get_suptitle().startswith("Fragment (8, 8)")
        (grid,) = _cell_axes(fig)
        assert [t.get_text() for t in grid.texts][:3] == ["T0 L0", "T0 L1", "T1 L0"]
    finally:
        _close(fig)
    plain = F2Linear.from_bases({"offset": [[0, 1], [1, 0]]}, ["dim0", "dim1"])
    fig = plot_layout(plain)
    try:
        assert fig.get_suptitle().startswith("Layout (4,)")
    finally:
        _close(fig)


def test_swizzle_drawn_alone_with_its_dtype_is_named():
    fig = plot_layout(nv.make_full_bank_swizzled_layout((32, 64), "float16"), name="tile", dtype="float16")
    try:
        assert fig.get_suptitle() == "tile: 128-byte swizzle, float16"
    finally:
        _close(fig)
