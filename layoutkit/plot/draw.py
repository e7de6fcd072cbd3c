"""Drawing cell grids with matplotlib: vector cells and text for small grids, an image beyond.

Grids up to :data:`VECTOR_CELLS` cells are drawn with ``pcolormesh`` (one SVG path per cell, in a
group whose id is the panel's ``gid``), and up to :data:`LABEL_CELLS` cells also get one text label
per cell (matplotlib spends about a millisecond per text, so labels stop at 32x32); larger grids are
one ``imshow`` raster image with tick labels only, so a 128x128 layout renders well under a second.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._mpl import palette, pyplot
from .grids import Panel

VECTOR_CELLS = 64 * 64
"""Grids with at most this many cells are drawn as vector cells."""

LABEL_CELLS = 32 * 32
"""Grids with at most this many cells get per-cell text labels."""

EMPTY = (0.92, 0.92, 0.92, 1.0)


MARGINS = (1.1, 0.3, 0.75, 0.55)
"""Inches around each panel: left (row labels), right, top (title, column ticks), bottom (x label)."""


def figure(panels: int, rows: int, cols: int, labelled: bool, label_len: int, title: str = "") -> tuple[Any, list]:
    """A figure with ``panels`` axes (up to 4 per row), cells sized for their labels, laid out in
    inches (no tight bbox pass, which would draw the figure twice), and ``title`` wrapped on top."""
    plt = pyplot()
    cell = max(0.3, min(1.2, 0.09 * label_len + 0.1)) if labelled else 0.08
    w = min(20.0, max(2.0, cols * cell))
    h = min(20.0, max(0.4, rows * cell))
    left, right, top, bottom = MARGINS
    ncols = min(panels, 4)
    nrows = -(-panels // ncols)
    width = ncols * (left + w + right)
    chars = max(40, int(width * 72 / 6.5))
    lines = [line for para in title.splitlines() for line in textwrap.wrap(para, width=chars)]
    head = 0.2 * len(lines) + (0.15 if lines else 0.0)
    height = head + nrows * (top + h + bottom)
    fig = plt.figure(figsize=(width, height))
    if lines:
        fig.text(0.5, 1 - 0.08 / height, "\n".join(lines), ha="center", va="top", fontsize=10)
    axes = []
    for k in range(panels):
        r, c = divmod(k, ncols)
        x0 = c * (left + w + right) + left
        y0 = height - head - r * (top + h + bottom) - top - h
        axes.append(fig.add_axes((x0 / width, y0 / height, w / width, h / height)))
    return fig, axes


def fontsize(fig: Any, ax: Any, rows: int, cols: int, label_len: int) -> float:
    """A font size (points) that fits ``label_len`` characters in one cell."""
    w, h = fig.get_size_inches()
    bbox = ax.get_position()
    cell_w = w * bbox.width / cols * 72
    cell_h = h * bbox.height / rows * 72
    return float(max(2.0, min(10.0, cell_w / (0.62 * max(1, label_len)), cell_h * 0.45)))


def rgba_grid(panel: Panel, colors: dict[int, tuple] | None, colormap: str | None,
              vmin: float | None = None, vmax: float | None = None) -> np.ndarray:
    """``rows x cols x 4`` colours: by thread when ``colors`` is given, else ``colormap`` over
    ``values`` (default viridis); NaN cells are light grey."""
    plt = pyplot()
    rows, cols = panel.values.shape
    out = np.empty((rows, cols, 4))
    out[...] = EMPTY
    if colors is not None and panel.threads is not None:
        for t, c in colors.items():
            out[panel.threads == t] = c
        return out
    vals = panel.values
    ok = ~np.isnan(vals)
    if ok.any():
        lo = float(np.nanmin(vals)) if vmin is None else vmin
        hi = float(np.nanmax(vals)) if vmax is None else vmax
        norm = (vals - lo) / (hi - lo) if hi > lo else np.zeros_like(vals)
        cmap = plt.get_cmap(colormap or "viridis")
        out[ok] = cmap(np.clip(norm[ok], 0.0, 1.0))
    return out


def thread_colors(panels: Sequence[Panel], colormap: str | None) -> dict[int, tuple]:
    """One distinct colour per thread appearing in any panel."""
    ids = sorted({int(t) for p in panels if p.threads is not None for t in np.unique(p.threads) if t >= 0})
    return dict(zip(ids, palette(len(ids), colormap)))


def draw_cells(fig: Any, ax: Any, panel: Panel, rgba: np.ndarray, gid: str, labelled: bool | None = None) -> None:
    """Draw one panel: cells, labels (small grids, or as ``labelled`` says), ticks, title; row 0
    at the top."""
    rows, cols = panel.values.shape
    labelled = rows * cols <= LABEL_CELLS if labelled is None else labelled
    if labelled or rows * cols <= VECTOR_CELLS:
        mesh = ax.pcolormesh(np.arange(cols + 1), np.arange(rows + 1), np.zeros((rows, cols)),
                             edgecolors="white" if labelled else "none", linewidth=0.5)
        mesh.set_array(None)
        mesh.set_facecolor(rgba.reshape(-1, 4))
        mesh.set_gid(gid)
        ax.set_xlim(0, cols)
        ax.set_ylim(rows, 0)
    else:
        image = ax.imshow(rgba, interpolation="nearest", aspect="auto", extent=(0, cols, rows, 0))
        image.set_gid(gid)
    if labelled:
        length = max((len(s) for s in panel.labels.ravel()), default=1)
        size = fontsize(fig, ax, rows, cols, length)
        light = rgba[..., :3] @ np.array([0.299, 0.587, 0.114]) < 0.5
        for r in range(rows):
            for c in range(cols):
                text = panel.labels[r, c]
                if text:
                    ax.text(c + 0.5, r + 0.5, text, ha="center", va="center", fontsize=size, parse_math=False,
                            color="white" if light[r, c] else "black")
    for axis, n in ((ax.xaxis, cols), (ax.yaxis, rows)):
        ticks = range(0, n, _tick_step(n))
        axis.set_ticks([t + 0.5 for t in ticks])
        axis.set_ticklabels([str(t) for t in ticks])
    ax.xaxis.tick_top()
    ax.tick_params(labelsize=7, length=0)
    ax.set_title(panel.title, fontsize=9, pad=14)
    if panel.xlabel:
        ax.set_xlabel(panel.xlabel, fontsize=8)
    if panel.ylabel:
        ax.set_ylabel(panel.ylabel, fontsize=8)


def _tick_step(n: int) -> int:
    """Every index up to 32, then about 16 ticks."""
    return 1 if n <= 32 else max(1, n // 16)
