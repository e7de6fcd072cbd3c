"""``plot_layout``: draw a Layout, Fragment, TLA layout or swizzle (TileLang's ``plot_layout``)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from ._mpl import RC, pyplot, save
from .draw import LABEL_CELLS, draw_cells, figure, rgba_grid, thread_colors
from .grids import describe, layout_panels


def plot_layout(
    obj: object,
    save_directory: str | os.PathLike,
    name: str = "layout",
    formats: str | Sequence[str] = "png",
    view: str = "input",
    colormap: str | None = None,
    grid_shape: Sequence[int] | None = None,
) -> list[str]:
    """Draw ``obj`` and write ``save_directory/name.<format>``; return the written paths.

    * ``lk.Layout`` / swizzles / ``layoutkit.tla.Layout``: one cell per logical coordinate,
      coloured by its offset and labelled with its output (``view="input"``), or one cell per
      physical position labelled with the logical coordinate stored there (``view="output"``).
    * ``lk.Fragment``: cells coloured by thread (one colour per thread) and labelled
      ``T<thread> L<slot>``, one panel per replica; ``view="output"`` shows a thread x register
      grid naming the element in each register.

    ``formats``: ``"png"``, ``"svg"``, ``"pdf"``, ``"all"`` or a list; ``colormap``: a matplotlib
    colormap name; ``grid_shape``: ``(rows, cols)`` to fold the cells differently.  Grids up to
    64x64 cells carry per-cell labels (SVG text elements); larger ones are one image with ticks.

    >>> import tempfile, layoutkit as lk
    >>> frag = lk.Fragment([4, 4], forward_thread_fn=lambda i, j: i * 2 + j // 2)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     [os.path.basename(p) for p in plot_layout(frag, d, "frag", formats="svg")]
    ['frag.svg']
    """
    plt = pyplot()
    with plt.rc_context(RC):
        panels = layout_panels(obj, view, grid_shape)
        rows, cols = panels[0].values.shape
        labelled = rows * cols <= LABEL_CELLS
        length = max((len(s) for s in panels[0].labels.ravel()), default=1) if labelled else 1
        fig, axes = figure(len(panels), rows, cols, labelled, length, describe(obj))
        colors = thread_colors(panels, colormap) if view == "input" and panels[0].threads is not None else None
        for k, (ax, panel) in enumerate(zip(axes, panels)):
            draw_cells(fig, ax, panel, rgba_grid(panel, colors, colormap), gid=f"cells{k}" if k else "cells")
        return save(fig, save_directory, name, formats)
