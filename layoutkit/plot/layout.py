"""``plot_layout``: draw a Layout, Fragment, TLA layout or swizzle (TileLang's ``plot_layout``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._mpl import RC, check_formats, check_name, pyplot, save
from .draw import (
    LABEL_CELLS,
    colorbar_for_threads,
    colorbar_for_values,
    draw_cells,
    figure,
    rgba_grid,
    thread_colors,
    value_range,
)
from .grids import Panel, as_layout, describe, layout_panels

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
) -> Any:
    """Draw ``layout``; with ``save_directory``, write ``save_directory/name.<format>`` and return the
    written paths, else return the matplotlib ``Figure``.  The signature and defaults are TileLang's
    ``tilelang.tools.plot_layout`` (except that no directory means "give me the figure" rather than
    ``./tmp``).

    * ``lk.Layout`` / swizzles / ``layoutkit.tla.Layout``: one cell per logical coordinate, labelled
      with its output and coloured by its offset (modulo the row width, or within its fractal for
      Ascend layouts, whose fractals are outlined), with a colour bar (``view="input"``); or one cell
      per physical position labelled with the logical coordinate stored there (``view="output"``).
      Rank-3+ layouts with a few leading positions (pipeline stages) get one panel per position.
    * ``lk.Fragment``: cells coloured by thread, labelled ``T<thread> L<register>`` where the labels
      fit (up to 32x32 cells), with a thread-id colour bar; one panel per replica; ``view="output"``
      shows a thread x register grid naming the element in each register.

    ``formats``: ``"pdf"``, ``"png"``, ``"svg"``, ``"all"``, a comma-separated string or a list;
    ``colormap``: a matplotlib colormap name; ``verbose``: also print every coordinate's image;
    ``grid_shape``: ``(rows, cols)`` to fold the cells differently.

    >>> import tempfile, layoutkit as lk
    >>> frag = lk.Fragment([4, 4], forward_thread_fn=lambda i, j: i * 2 + j // 2)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     [os.path.basename(p) for p in plot_layout(frag, d, "frag", formats="svg")]
    ['frag.svg']
    >>> fig = plot_layout(lk.Layout([4, 4], lambda i, j: (j, i)))   # no directory: the Figure
    >>> type(fig).__name__, len(fig.axes)   # the grid and its colour bar
    ('Figure', 2)
    """
    if save_directory is not None:  # refuse a bad name or format before drawing anything
        check_formats(formats)
        check_name(name)
    plt = pyplot()
    with plt.rc_context(RC):
        panels = layout_panels(layout, view, grid_shape)
        if verbose:
            print_mapping(layout)
        fig = draw_panels(panels, describe(layout), colormap, view)
        if save_directory is None:
            return fig
        return save(fig, save_directory, name, formats)


def draw_panels(panels: list[Panel], title: str, colormap: str | None, view: str = "input") -> Any:
    """One figure of ``panels`` on a common colour scale, with the colour bar the first panel asks for."""
    rows, cols = panels[0].values.shape
    labelled = rows * cols <= LABEL_CELLS
    length = max((len(s) for s in panels[0].labels.ravel()), default=1) if labelled else 1
    want_bar = bool(panels[0].colorbar)
    fig, axes, cax = figure(len(panels), rows, cols, labelled, length, title, colorbar=want_bar)
    by_thread = panels[0].threads is not None
    colors = thread_colors(panels, colormap) if by_thread else None
    lo, hi = value_range(panels)
    for k, (ax, panel) in enumerate(zip(axes, panels)):
        rgba = rgba_grid(panel, colors, colormap, vmin=lo, vmax=hi)
        draw_cells(fig, ax, panel, rgba, gid=f"cells{k}" if k else "cells")
    if cax is not None:
        if colors:
            colorbar_for_threads(fig, cax, colors)
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
