"""plot_layout as TileLang calls it (signature, defaults, the Figure back without a directory, verbose),
and what makes a figure readable: stage panels, tick spacing, colour bars, thread colour bars and
labels, outlined Ascend fractals, a labelled bank heat map."""

from __future__ import annotations

import inspect
import os
import xml.etree.ElementTree as ET

import pytest

import layoutkit as lk
from layoutkit.targets import ascend, nv

pytest.importorskip("matplotlib")

from layoutkit.plot import plot_banks, plot_layout  # noqa: E402
from layoutkit.plot.draw import TICK_INCHES  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"


def _texts(path) -> list[str]:
    return ["".join(t.itertext()) for t in ET.parse(path).getroot().iter(f"{SVG}text")]


def _ids(path) -> set[str]:
    return {e.get("id") for e in ET.parse(path).getroot().iter() if e.get("id")}


def _close(fig) -> None:
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_signature_and_defaults_are_tilelangs():
    params = inspect.signature(plot_layout).parameters
    assert list(params)[:8] == ["layout", "save_directory", "name", "colormap", "verbose", "formats", "view",
                                "grid_shape"]
    assert params["name"].default == "layout" and params["formats"].default == "pdf"
    assert params["view"].default == "input" and params["verbose"].default is False
    assert params["save_directory"].default is None


def test_no_directory_returns_the_figure_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fig = plot_layout(lk.Layout([8, 8], lambda i, j: (j, i)))
    try:
        assert type(fig).__name__ == "Figure"
        assert len(fig.axes) == 2  # the grid and its colour bar
        assert fig.axes[1].get_ylabel() == "offset mod 8 (place in its row)"
    finally:
        _close(fig)
    assert list(tmp_path.iterdir()) == []


def test_directory_writes_pdf_by_default_and_positional_tilelang_order(tmp_path):
    layout = lk.Layout([4, 4], lambda i, j: i * 4 + j)
    assert plot_layout(layout, tmp_path) == [os.path.join(str(tmp_path), "layout.pdf")]
    paths = plot_layout(layout, tmp_path, "pos", "magma", False, "svg,png")
    assert [os.path.basename(p) for p in paths] == ["pos.svg", "pos.png"]


def test_verbose_prints_the_mapping(capsys):
    frag = lk.Fragment([2, 2], forward_thread_fn=lambda i, j: i, forward_index_fn=lambda i, j: j)
    _close(plot_layout(frag, verbose=True))
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["(0, 0) -> thread 0, local 0", "(0, 1) -> thread 0, local 1",
                     "(1, 0) -> thread 1, local 0", "(1, 1) -> thread 1, local 1"]
    _close(plot_layout(lk.Layout([2], lambda i: 1 - i), verbose=True))
    assert capsys.readouterr().out.splitlines() == ["(0,) -> (1,)", "(1,) -> (0,)"]


def test_stage_dimension_becomes_panels(tmp_path):
    swz = nv.make_full_bank_swizzled_layout((16, 64), "float16").expand([2])  # (2, 16, 64): two stages
    assert swz.input_shape == (2, 16, 64)
    (path,) = plot_layout(swz, tmp_path, "staged", formats="svg", stages=2)
    texts = " ".join(_texts(path))
    assert "stage 0: [0, :, :]" in texts and "stage 1: [1, :, :]" in texts
    assert {"cells", "cells1", "colorbar"} <= _ids(path)
    (path,) = plot_layout(swz, tmp_path, "not_a_pipeline", formats="svg")  # no stages: a plain leading dim
    texts = " ".join(_texts(path))
    assert "[0, :, :]" in texts and "stage" not in texts
    fig = plot_layout(swz)
    try:
        grid0, grid1 = fig.axes[:2]
        assert grid0.get_xlim() == (0.0, 64.0) and grid0.get_ylim() == (16.0, 0.0)  # 16 x 64 each, not 32 x 64
        assert grid1.get_ylabel() == "_j (dim 1)" and grid1.get_xlabel() == "_k (dim 2)"
    finally:
        _close(fig)


@pytest.mark.parametrize("n", [32, 128])
def test_ticks_never_run_together(n):
    fig = plot_layout(lk.Layout([n, n], lambda i, j: i * n + j))
    try:
        ax = fig.axes[0]
        width = fig.get_size_inches()[0] * ax.get_position().width
        ticks = ax.get_xticks()
        assert len(ticks) >= 4
        assert (ticks[1] - ticks[0]) * width / n >= TICK_INCHES
        assert [t.get_text() for t in ax.get_xticklabels()][:2] == ["0", str(int(ticks[1] - ticks[0]))]
    finally:
        _close(fig)


def test_small_fragment_is_labelled_by_thread_and_register_with_a_warp_lane_key(tmp_path):
    acc = nv.make_mma_store_layout(2, 2, 16, 16)  # 32 x 32 over 128 threads
    (path,) = plot_layout(acc, tmp_path, "acc", formats="svg")
    texts = _texts(path)
    assert "T0 L0" in texts and "T127 L7" in texts
    assert "thread = 32 x warp + lane" in texts and "thread-key" in _ids(path)
    (path,) = plot_layout(acc, tmp_path, "acc_cmap", formats="svg", colormap="viridis")  # a colormap: a thread bar
    assert "thread id" in _texts(path) and "thread-colorbar" in _ids(path)


def test_large_fragment_has_an_unlabelled_grid_a_labelled_zoom_and_a_key():
    acc = nv.make_mma_store_layout(2, 2, 64, 64)  # 128 x 128 over 128 threads
    fig = plot_layout(acc)
    try:
        grid, zoom, key = fig.axes
        assert "thread of each element" in grid.get_title()
        assert not [t for t in grid.texts if t.get_text().startswith("T")]
        assert zoom.get_title().startswith("zoom: rows 0-7, cols 0-7")
        assert [t.get_text() for t in zoom.texts][:3] == ["T0 L0", "T0 L1", "T1 L0"]
        assert key.get_xlabel() == "lane" and key.get_ylabel() == "warp"
        assert [t.get_text() for t in key.get_yticklabels()] == ["0", "1", "2", "3"]
    finally:
        _close(fig)


def test_ascend_fractals_are_outlined_and_numbered(tmp_path):
    nz = ascend.make_ascend_nz_layout((64, 64), "float16")  # zN: 16 x 16 fractals, column of fractals first
    (path,) = plot_layout(nz, tmp_path, "nz", formats="svg")
    assert {"outline-rows", "outline-cols"} <= _ids(path)
    texts = _texts(path)
    assert {f"F{k}" for k in range(16)} <= set(texts)
    assert any("offset within its 16 x 16 fractal" in t for t in texts)
    fig = plot_layout(nz)
    try:
        grid = fig.axes[0]
        names = {t.get_text(): t.get_position() for t in grid.texts}
        # F1 is the fractal under F0 (zN walks down the fractal column first)
        assert names["F0"] == (8.0, 8.0) and names["F1"] == (8.0, 24.0) and names["F4"] == (24.0, 8.0)
    finally:
        _close(fig)


def test_bank_heat_map_is_labelled(tmp_path):
    acc = nv.make_mma_store_layout(1, 1, 16, 16).repeat([1, 4], repeat_on_thread=False)
    plain = nv.make_linear_layout((16, 64), "float16")
    (path,) = plot_banks(plain, acc, "float16", tmp_path, "banks", instruction="st.shared.b32", formats="svg")
    texts = _texts(path)
    assert "bank" in texts and "phase (warp, instruction, phase)" in texts
    assert any(t.startswith("distinct words in the bank") for t in texts)
    assert any("128 wavefronts" in t and "8-way" in t for t in texts)
    assert "colorbar" in _ids(path)
    fig_texts = [t for t in texts if t.isdigit()]
    assert "8" in fig_texts  # the colour bar's top tick: 8-way (the scale is fixed up to 8-way)
