"""Drawing cell grids with matplotlib: vector cells and text for small grids, an image beyond.

Grids up to :data:`VECTOR_CELLS` cells are drawn with ``pcolormesh`` (one SVG path per cell, in a
group whose id is the panel's ``gid``), and up to :data:`LABEL_CELLS` cells also get one text label
per cell (matplotlib spends about a millisecond per text, so labels stop at 32x32); larger grids are
one ``imshow`` raster image with tick labels only, so a 128x128 layout renders well under a second.

Every figure says what its colours mean: a colour bar (offsets, bank hits) or a thread-id colour bar
(fragments), ticks spaced so that their numbers never run together, tiles (Ascend fractals) outlined.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._mpl import SAVE_DPI, palette, pyplot
from .grids import Panel
from .schemes import WARP_SIZE, warp_lane_colors

VECTOR_CELLS = 64 * 64
"""Grids with at most this many cells are drawn as vector cells."""

LABEL_CELLS = 32 * 32
"""Grids with at most this many cells get per-cell text labels."""

EMPTY = (0.92, 0.92, 0.92, 1.0)

MARGINS = (0.85, 0.3, 0.75, 0.55)
"""Inches around each panel: left (row ticks and label), right, top (title, column ticks), bottom (x label)."""
COLORBAR = 1.15
"""Inches on the right of the figure for the colour bar and its label."""
MAX_WIDTH = 30.0
"""Panels per figure row are limited so that the figure stays about this many inches wide."""
GRID_INCHES = 7.0
"""Unlabelled grids are scaled so that their longer side is about this long (cells MIN_CELL .. 0.3 inch)."""
MIN_CELL_PX = 12
"""No drawn cell is smaller than this many pixels on its side at the saved resolution."""
MIN_CELL = 0.13
"""Inches of the smallest cell: :data:`MIN_CELL_PX` at :data:`~._mpl.SAVE_DPI` with a margin for rounding."""
TICK_INCHES = 0.28
"""Closest spacing of two tick labels."""
HEAD = (0.45, 0.25)
"""Inches above the panels for the title and for the subtitle (the formula)."""
KEY_CELL = 0.12
"""Side of one lane's cell in the warp x lane key of a fragment figure."""


def cell_inches(rows: int, cols: int, labelled: bool, label_len: int) -> float:
    """Side of one (square) cell: wide enough for its label, else the grid scaled to :data:`GRID_INCHES`,
    never below :data:`MIN_CELL`.

    >>> cell_inches(128, 128, False, 1), cell_inches(8, 8, False, 1), round(cell_inches(4, 4, True, 5), 2)
    (0.13, 0.3, 0.55)
    """
    if labelled:
        return max(0.3, min(1.2, 0.09 * label_len + 0.1))
    return max(MIN_CELL, min(0.3, GRID_INCHES / max(rows, cols)))


def figure(panels: int, rows: int, cols: int, labelled: bool, label_len: int, title: str = "",
           colorbar: bool = False, left: float | None = None) -> tuple[Any, list, Any]:
    """``panels`` axes of one size (see :func:`figure_grid`), cells sized for their labels, ``title``
    wrapped on top, and a colour-bar axes on the right when ``colorbar`` (else None)."""
    cell = cell_inches(rows, cols, labelled, label_len)
    fig, axes, cax = figure_grid([(rows, cols, cell)] * panels, title, "", "bar" if colorbar else "", left=left)
    return fig, axes, cax


def figure_grid(sizes: Sequence[tuple[int, int, float]], title: str, subtitle: str = "", side: str = "",
                key_shape: tuple[int, int] = (1, 1), left: float | None = None) -> tuple[Any, list, Any]:
    """A figure laid out in inches (no tight bbox pass, which would draw the figure twice) at the saved
    resolution: one axes per ``(rows, cols, cell)`` of ``sizes`` with square cells of ``cell`` inches,
    left to right and wrapping beyond :data:`MAX_WIDTH`; ``title`` on top (wrapped) and ``subtitle`` under
    it (one line, cut); on the right a colour bar (``side="bar"``), a ``key_shape`` grid of
    :data:`KEY_CELL` cells (``side="key"``: a fragment's warp x lane colours) or nothing."""
    plt = pyplot()
    m_left, right, top, bottom = MARGINS
    left = m_left if left is None else left
    boxes = [(c * cell, r * cell) for r, c, cell in sizes]  # square cells, whatever the grid's aspect
    rows_of: list[list[int]] = [[]]
    used = 0.0
    for k, (w, _) in enumerate(boxes):
        if rows_of[-1] and (used + left + w + right > MAX_WIDTH or len(rows_of[-1]) == 4):
            rows_of.append([])
            used = 0.0
        rows_of[-1].append(k)
        used += left + w + right
    if side == "key":
        side_w, side_h = key_shape[1] * KEY_CELL + 1.0, key_shape[0] * KEY_CELL * 2.5 + 1.2
    elif side == "bar":
        side_w, side_h = COLORBAR, max(1.8, min(6.0, 0.8 * max(h for _, h in boxes)))
    else:
        side_w = side_h = 0.0
    widths = [sum(left + boxes[k][0] + right for k in row) for row in rows_of]
    heights = [top + max(boxes[k][1] for k in row) + bottom for row in rows_of]
    heights[0] = max(heights[0], side_h + top)
    width = max(4.0, max(widths) + side_w)
    chars = max(40, int(width * 72 / 8.5))
    lines = [line for para in title.splitlines() for line in textwrap.wrap(para, width=chars)]
    head = (HEAD[0] + 0.22 * max(0, len(lines) - 1) if lines else 0.1) + (HEAD[1] if subtitle else 0.0)
    height = head + sum(heights)
    fig = plt.figure(figsize=(width, height), dpi=SAVE_DPI)
    if lines:
        fig.suptitle("\n".join(lines), y=1 - 0.12 / height, va="top", fontsize=13, fontweight="bold")
    if subtitle:
        cut = int(width * 72 / 5.2)
        text = subtitle if len(subtitle) <= cut else subtitle[: cut - 3] + "..."
        fig.text(0.5, 1 - (head - 0.1) / height, text, ha="center", va="bottom", fontsize=9, color="#444444",
                 gid="subtitle", parse_math=False)
    axes: list = [None] * len(boxes)
    y = height - head
    for row, row_h in zip(rows_of, heights):
        x = 0.0
        for k in row:
            w, h = boxes[k]
            x += left
            axes[k] = fig.add_axes(((x) / width, (y - top - h) / height, w / width, h / height))
            x += w + right
        y -= row_h
    cax = None
    if side:
        x0 = max(widths) + (0.6 if side == "key" else 0.1)
        w = key_shape[1] * KEY_CELL if side == "key" else 0.18
        h = key_shape[0] * KEY_CELL * 2.5 if side == "key" else side_h
        y0 = height - head - top - h
        cax = fig.add_axes((x0 / width, y0 / height, w / width, h / height))
    return fig, axes, cax


def fontsize(fig: Any, ax: Any, rows: int, cols: int, label_len: int) -> float:
    """A font size (points) that fits ``label_len`` characters in one cell."""
    w, h = fig.get_size_inches()
    bbox = ax.get_position()
    cell_w = w * bbox.width / cols * 72
    cell_h = h * bbox.height / rows * 72
    return float(max(2.0, min(10.0, cell_w / (0.62 * max(1, label_len)), cell_h * 0.45)))


def value_range(panels: Sequence[Panel]) -> tuple[float, float]:
    """The common colour scale of ``panels`` (their own ``vmin``/``vmax`` first, else the data)."""
    vals = [p.values[~np.isnan(p.values)] for p in panels]
    vals = [v for v in vals if v.size]
    lo = panels[0].vmin if panels[0].vmin is not None else (min(float(v.min()) for v in vals) if vals else 0.0)
    hi = panels[0].vmax if panels[0].vmax is not None else (max(float(v.max()) for v in vals) if vals else 1.0)
    return lo, hi


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
    if panel.palette is not None and colormap is None:  # discrete meanings (the chunk of a line): one colour each
        table = np.asarray(panel.palette)
        out[ok] = table[vals[ok].astype(np.int64) % len(table)]
        return out
    if ok.any():
        lo = float(np.nanmin(vals)) if vmin is None else vmin
        hi = float(np.nanmax(vals)) if vmax is None else vmax
        norm = (vals - lo) / (hi - lo) if hi > lo else np.zeros_like(vals)
        cmap = plt.get_cmap(colormap or "viridis")
        out[ok] = cmap(np.clip(norm[ok], 0.0, 1.0))
    return out


def thread_colors(panels: Sequence[Panel], colormap: str | None) -> dict[int, tuple]:
    """A colour per thread appearing in any panel: its warp's hue, shaded by its lane
    (:func:`~.schemes.warp_lane_color`), or with ``colormap`` samples of that colormap."""
    ids = sorted({int(t) for p in panels if p.threads is not None for t in np.unique(p.threads) if t >= 0})
    if colormap is None:
        return warp_lane_colors(ids)
    return dict(zip(ids, palette(len(ids), colormap)))


def draw_cells(fig: Any, ax: Any, panel: Panel, rgba: np.ndarray, gid: str, labelled: bool | None = None,
               grid_lines: bool | None = None) -> None:
    """Draw one panel: cells, labels (small grids, or as ``labelled`` says), ticks, outlines, title;
    row 0 at the top; white lines between the cells of a grid small enough to label (``grid_lines``)."""
    rows, cols = panel.values.shape
    labelled = rows * cols <= LABEL_CELLS if labelled is None else labelled
    grid_lines = labelled if grid_lines is None else grid_lines
    if labelled or grid_lines or rows * cols <= VECTOR_CELLS:
        mesh = ax.pcolormesh(np.arange(cols + 1), np.arange(rows + 1), np.zeros((rows, cols)),
                             edgecolors="white" if grid_lines else "none", linewidth=0.5)
        mesh.set_array(None)
        mesh.set_facecolor(rgba.reshape(-1, 4))
        mesh.set_gid(gid)
        ax.set_xlim(0, cols)
        ax.set_ylim(rows, 0)
    else:
        image = ax.imshow(rgba, interpolation="nearest", aspect="auto", extent=(0, cols, rows, 0))
        image.set_gid(gid)
    if labelled:
        _labels(fig, ax, panel, rgba)
    if panel.outline is not None:
        _outline(ax, rows, cols, panel.outline, panel.tile_labels)
    w, h = fig.get_size_inches()
    box = ax.get_position()
    for axis, n, inches, first in ((ax.xaxis, cols, w * box.width, 0), (ax.yaxis, rows, h * box.height,
                                                                          panel.first_row)):
        ticks = range(0, n, tick_step(n + first, inches / max(1, n)))
        axis.set_ticks([t + 0.5 for t in ticks])
        axis.set_ticklabels([str(t + first) for t in ticks])
    ax.xaxis.tick_top()
    ax.tick_params(labelsize=7, length=0)
    chars = max(20, int(w * box.width * 72 / 5.5))
    ax.set_title("\n".join(textwrap.wrap(panel.title, width=chars)), fontsize=9, pad=14)
    if panel.xlabel:
        ax.set_xlabel(panel.xlabel, fontsize=8)
    if panel.ylabel:
        ax.set_ylabel(panel.ylabel, fontsize=8)


def _labels(fig: Any, ax: Any, panel: Panel, rgba: np.ndarray) -> None:
    rows, cols = panel.values.shape
    length = max((len(s) for s in panel.labels.ravel()), default=1)
    size = fontsize(fig, ax, rows, cols, length)
    light = rgba[..., :3] @ np.array([0.299, 0.587, 0.114]) < 0.5
    for r in range(rows):
        for c in range(cols):
            text = panel.labels[r, c]
            if text:
                ax.text(c + 0.5, r + 0.5, text, ha="center", va="center", fontsize=size, parse_math=False,
                        color="white" if light[r, c] else "black")


def _outline(ax: Any, rows: int, cols: int, tile: tuple[int, int], names: np.ndarray | None) -> None:
    """Black lines around every ``tile[0] x tile[1]`` block (an Ascend fractal), and each block's name
    (its place in memory) in a white box at its centre when there are few enough blocks to read."""
    th, tw = tile
    ax.hlines(np.arange(0, rows + 1, th), 0, cols, colors="black", linewidth=1.2, gid="outline-rows")
    ax.vlines(np.arange(0, cols + 1, tw), 0, rows, colors="black", linewidth=1.2, gid="outline-cols")
    if names is None or names.size > 256:
        return
    for (r, c), text in np.ndenumerate(names):
        ax.text((c + 0.5) * tw, (r + 0.5) * th, text, ha="center", va="center", fontsize=8, parse_math=False,
                bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "alpha": 0.85, "linewidth": 0})


def tick_step(n: int, cell_inches: float) -> int:
    """Every index when the labels fit, else the smallest power of two (or 10, 20, 50 ... beyond 64)
    whose spacing is at least :data:`TICK_INCHES`, so that numbers never run together.

    >>> tick_step(16, 0.5), tick_step(32, 0.1), tick_step(128, 0.055), tick_step(1000, 0.007)
    (1, 4, 8, 64)
    """
    digits = len(str(max(0, n - 1)))
    need = max(TICK_INCHES, 0.09 * digits + 0.08)
    step = 1
    while step * cell_inches < need and step < n:
        step *= 2
    return step


def colorbar_for_values(fig: Any, cax: Any, lo: float, hi: float, colormap: str | None, label: str,
                        integer: bool = True) -> None:
    """A continuous colour bar from ``lo`` to ``hi`` on ``cax`` (integer ticks: offsets and counts)."""
    import matplotlib as mpl

    plt = pyplot()
    norm = mpl.colors.Normalize(vmin=lo, vmax=hi if hi > lo else lo + 1)
    bar = fig.colorbar(mpl.cm.ScalarMappable(norm=norm, cmap=plt.get_cmap(colormap or "viridis")), cax=cax)
    inches = cax.get_position().height * fig.get_size_inches()[1]
    bins = max(2, int(inches / TICK_INCHES))  # ticks at least TICK_INCHES apart, so their numbers never touch
    bar.ax.yaxis.set_major_locator(mpl.ticker.MaxNLocator(nbins=bins, integer=integer))
    bar.set_label(label, fontsize=8)
    bar.ax.tick_params(labelsize=7)
    cax.set_gid("colorbar")


def colorbar_for_threads(fig: Any, cax: Any, colors: dict[int, tuple]) -> None:
    """A discrete colour bar, one band per thread id, with readable tick spacing."""
    import matplotlib as mpl

    ids = sorted(colors)
    n = len(ids)
    cmap = mpl.colors.ListedColormap([colors[t] for t in ids])
    norm = mpl.colors.BoundaryNorm(np.arange(n + 1) - 0.5, n)
    bar = fig.colorbar(mpl.cm.ScalarMappable(norm=norm, cmap=cmap), cax=cax)
    inches = cax.get_position().height * fig.get_size_inches()[1]
    step = tick_step(n, inches / max(1, n))
    ticks = list(range(0, n, step))
    if ticks[-1] != n - 1 and (n - 1 - ticks[-1]) * inches / n >= TICK_INCHES:
        ticks.append(n - 1)
    bar.set_ticks(ticks)
    bar.set_ticklabels([str(ids[k]) for k in ticks])
    bar.set_label("thread id", fontsize=8)
    bar.ax.tick_params(labelsize=7)
    cax.set_gid("thread-colorbar")


def thread_key(fig: Any, cax: Any, colors: dict[int, tuple]) -> None:
    """The key of warp / lane colours: one row per warp, one cell per lane (thread ``32 * warp + lane``)."""
    ids = sorted(colors)
    warps = max(ids) // WARP_SIZE + 1 if ids else 1
    grid = np.ones((warps, WARP_SIZE, 4))
    for t in ids:
        grid[t // WARP_SIZE, t % WARP_SIZE] = colors[t]
    cax.imshow(grid, interpolation="nearest", aspect="auto", extent=(0, WARP_SIZE, warps, 0))
    cax.set_xticks([0.5, 8.5, 16.5, 24.5, 31.5])
    cax.set_xticklabels(["0", "8", "16", "24", "31"])
    step = tick_step(warps, cax.get_position().height * fig.get_size_inches()[1] / warps)
    cax.set_yticks([w + 0.5 for w in range(0, warps, step)])
    cax.set_yticklabels([str(w) for w in range(0, warps, step)])
    cax.tick_params(labelsize=7, length=0)
    cax.set_xlabel("lane", fontsize=8)
    cax.set_ylabel("warp", fontsize=8)
    cax.set_title(f"thread = {WARP_SIZE} x warp + lane", fontsize=8)
    cax.set_gid("thread-key")


def colorbar_for_palette(fig: Any, cax: Any, colors: Sequence[tuple], label: str) -> None:
    """A discrete colour bar, one band per value ``0 .. len(colors) - 1``, each band ticked ``c<k>``."""
    import matplotlib as mpl

    n = len(colors)
    cmap = mpl.colors.ListedColormap(list(colors))
    norm = mpl.colors.BoundaryNorm(np.arange(n + 1) - 0.5, n)
    bar = fig.colorbar(mpl.cm.ScalarMappable(norm=norm, cmap=cmap), cax=cax)
    bar.set_ticks(list(range(n)))
    bar.set_ticklabels([f"c{k}" for k in range(n)])
    bar.set_label(label, fontsize=8)
    bar.ax.tick_params(labelsize=7)
    cax.set_gid("colorbar")
