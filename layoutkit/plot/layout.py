"""``plot_layout``: draw a Layout, Fragment, TLA layout, F2Linear or swizzle (TileLang's ``plot_layout``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._mpl import RC, check_formats, check_name, pyplot, save
from .draw import (
    LABEL_CELLS,
    cell_inches,
    colorbar_for_palette,
    colorbar_for_threads,
    colorbar_for_values,
    draw_cells,
    figure_grid,
    rgba_grid,
    thread_colors,
    thread_key,
    value_range,
)
from .grids import Panel, as_layout, layout_panels
from .schemes import WARP_SIZE
from .titles import layout_title

LABEL_BUDGET = 384
"""Cell labels per figure: matplotlib draws a text in about a millisecond, so past this many the later
panels (further stages, slices or replicas, drawn at the same cell size) keep their colours only."""
VERBOSE_LINES = 4096
"""``verbose=True`` prints the mapping of at most this many coordinates (then says how many more)."""


def plot_layout(
    layout: object,
    save_directory: str | os.PathLike | None = None,
    name: str = "layout",
    colormap: str | None = None,
    verbose: bool = False,
    formats: str | Sequence[str] = "pdf",
    view: str = "input",
    grid_shape: Sequence[int] | None = None,
    *,
    title: str | None = None,
    dtype: object = None,
    stages: int | None = None,
) -> Any:
    """Draw ``layout``; with ``save_directory``, write ``save_directory/name.<format>`` and return the
    written paths, else return the matplotlib ``Figure``.  The signature and defaults are TileLang's
    ``tilelang.tools.plot_layout`` (except that no directory means "give me the figure" rather than
    ``./tmp``); the keyword-only ``title``, ``dtype`` and ``stages`` are layoutkit's.

    Input kinds (one dispatch point, :func:`~.grids.as_layout`): ``lk.Layout`` and swizzles,
    ``lk.Fragment``, ``layoutkit.tla`` layouts, ``F2Linear`` (a Triton LinearLayout: a Fragment when its
    in dims are register / lane / warp, else a Layout).

    * Memory layouts: one square cell per logical coordinate, labelled with its output.  With ``dtype``
      the colour is the 16-byte chunk of its 128-byte line the element lands in (its group of 4 banks,
      8 distinct colours), so a bank swizzle shows as its XOR permutation, repeating with its period, and
      a grid too big to label draws each whole chunk as one cell; without, the offset within its row
      (Ascend layouts: within its fractal, fractals outlined).  ``view="output"``: one cell per physical
      position labelled with the logical coordinate stored there.  Rank-3+ layouts with a few leading
      positions get one panel per position (``stages``: the leading dim is a pipeline of that many
      stages, and the panels say ``stage k``).
    * ``lk.Fragment``: cells coloured by warp (hue) and lane (shade), with a warp x lane key; labelled
      ``T<thread> L<register>`` up to 32x32 cells, else with a labelled 8x8 block beside the whole grid;
      one panel per replica; ``view="output"`` shows a thread x register grid naming each register's element.

    The title names what is drawn (``name`` unless it is the default, the kind, ``stages``, ``dtype``;
    or ``title``); the formula is the subtitle.  Every cell is square and at least
    :data:`~.draw.MIN_CELL_PX` pixels wide at the saved resolution.

    ``formats``: ``"pdf"``, ``"png"``, ``"svg"``, ``"all"``, a comma-separated string or a list;
    ``colormap``: a matplotlib colormap name (replaces the chunk and warp / lane colours); ``verbose``:
    also print every coordinate's image; ``grid_shape``: ``(rows, cols)`` to fold the cells differently.

    >>> import tempfile, layoutkit as lk
    >>> frag = lk.Fragment([4, 4], forward_thread_fn=lambda i, j: i * 2 + j // 2)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     [os.path.basename(p) for p in plot_layout(frag, d, "frag", formats="svg")]
    ['frag.svg']
    >>> fig = plot_layout(lk.Layout([4, 4], lambda i, j: (j, i)))   # no directory: the Figure
    >>> type(fig).__name__, len(fig.axes), fig.get_suptitle()   # the grid and its colour bar
    ('Figure', 2, 'Layout (4, 4) -> (4, 4)')
    """
    if save_directory is not None:  # refuse a bad name or format before drawing anything
        check_formats(formats)
        check_name(name)
    plt = pyplot()
    with plt.rc_context(RC):
        resolved = as_layout(layout)
        panels = layout_panels(resolved, view, grid_shape, dtype=dtype, stages=stages)
        if verbose:
            print_mapping(resolved)
        head, formula = layout_title(resolved, None if name == "layout" else name, dtype, stages)
        fig = draw_panels(panels, head if title is None else title, colormap, view, subtitle=formula)
        if save_directory is None:
            return fig
        return save(fig, save_directory, name, formats)


def draw_panels(panels: list[Panel], title: str, colormap: str | None, view: str = "input",
                subtitle: str = "") -> Any:
    """One figure of ``panels`` (each with square cells sized for its labels) on a common colour scale,
    with the key the first panel asks for: a warp x lane key (fragments), a discrete chunk bar, or a
    colour bar."""
    longest: dict[tuple[int, int], int] = {}  # panels of one grid shape (stages, replicas) get one cell size
    for panel in panels:
        shape = panel.values.shape
        longest[shape] = max(longest.get(shape, 1), max((len(s) for s in panel.labels.ravel()), default=1))
    sizes = []
    for panel in panels:
        rows, cols = panel.values.shape
        labelled = rows * cols <= LABEL_CELLS
        sizes.append((rows, cols, cell_inches(rows, cols, labelled, longest[rows, cols] if labelled else 1)))
    by_thread = panels[0].threads is not None
    colors = thread_colors(panels, colormap) if by_thread else None
    side = "" if not panels[0].colorbar else "key" if by_thread and colormap is None else "bar"
    warps = max(colors) // WARP_SIZE + 1 if colors else 1
    fig, axes, cax = figure_grid(sizes, title, subtitle, side, key_shape=(warps, WARP_SIZE))
    lo, hi = value_range(panels)
    budget = LABEL_BUDGET
    for k, (ax, panel) in enumerate(zip(axes, panels)):
        rgba = rgba_grid(panel, colors, colormap, vmin=lo, vmax=hi)
        cells = panel.values.size
        labelled = cells <= LABEL_CELLS and (cells <= budget or k == 0)
        budget -= cells if labelled else 0
        draw_cells(fig, ax, panel, rgba, gid=f"cells{k}" if k else "cells", labelled=labelled,
                   grid_lines=cells <= LABEL_CELLS)
    if cax is not None:
        if side == "key" and colors:
            thread_key(fig, cax, colors)
        elif colors:
            colorbar_for_threads(fig, cax, colors)
        elif panels[0].palette is not None and colormap is None:
            colorbar_for_palette(fig, cax, panels[0].palette, panels[0].colorbar)
        else:
            colorbar_for_values(fig, cax, lo, hi, colormap, panels[0].colorbar)
    return fig


def print_mapping(obj: object, limit: int = VERBOSE_LINES) -> None:
    """Print ``coord -> image`` for every logical coordinate (a fragment: ``-> thread T, local L`` per
    replica), at most ``limit`` lines.

    >>> import layoutkit as lk
    >>> print_mapping(lk.Fragment([2], forward_thread_fn=lambda i: i))
    (0,) -> thread 0, local 0
    (1,) -> thread 1, local 0
    """
    from ..fragment.fragment import Fragment

    layout = as_layout(obj)
    coords = np.stack(np.unravel_index(np.arange(layout.size), layout.input_shape), axis=-1)
    if isinstance(layout, Fragment):
        threads = np.asarray(layout.thread_table()).reshape(layout.replicate_size, -1)
        index = np.asarray(layout.index_table()).reshape(-1)
        lines = (f"{tuple(int(v) for v in c)} -> " + "; ".join(
            f"thread {int(threads[r, k])}, local {int(index[k])}" for r in range(threads.shape[0]))
            for k, c in enumerate(coords[:limit]))
    else:
        table = np.asarray(layout.table()).reshape(layout.size, -1)
        lines = (f"{tuple(int(v) for v in c)} -> {tuple(int(v) for v in t)}"
                 for c, t in zip(coords[:limit], table[:limit]))
    for line in lines:
        print(line)
    if layout.size > limit:
        print(f"... ({layout.size - limit} more coordinates)")
