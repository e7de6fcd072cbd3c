"""``plot_diff``: two layouts of one shape side by side with the cells where they differ marked."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from ..errors import ShapeError
from ..fragment.fragment import Fragment
from ._mpl import RC, pyplot, save
from .draw import LABEL_CELLS, cell_inches, draw_cells, figure_grid
from .grids import Panel, as_layout, coord_text, grid2d
from .titles import layout_title

SAME = (0xE6 / 255, 0xE6 / 255, 0xE6 / 255, 1.0)  # "#e6e6e6"
DIFFERENT = (0xD6 / 255, 0x27 / 255, 0x28 / 255, 1.0)  # "#d62728", matplotlib's tab:red


def cell_keys(obj: object) -> np.ndarray:
    """What a cell means, as text over the input shape: the output tuple of a Layout, or
    ``T<threads> L<slot>`` (every replica's thread, sorted) of a Fragment.

    >>> import layoutkit as lk
    >>> cell_keys(lk.Layout([2], lambda i: 1 - i)).tolist()
    ['1', '0']
    """
    layout = as_layout(obj)
    if isinstance(layout, Fragment):
        threads = np.sort(np.asarray(layout.thread_table()), axis=0)
        text = np.char.add("T", threads[0].astype(str))
        for r in range(1, threads.shape[0]):
            text = np.char.add(np.char.add(text, ","), threads[r].astype(str))
        return np.char.add(np.char.add(text, " L"), np.asarray(layout.index_table()).astype(str))
    return coord_text(np.asarray(layout.table()))


def difference_mask(a: object, b: object) -> np.ndarray:
    """Boolean mask over the input shape: True where ``a`` and ``b`` differ."""
    la, lb = as_layout(a), as_layout(b)
    if la.input_shape != lb.input_shape:
        raise ShapeError(f"plot_diff needs two layouts of one input shape; found {la.input_shape} and {lb.input_shape}")
    return cell_keys(la) != cell_keys(lb)


def plot_diff(
    a: object,
    b: object,
    save_directory: str | os.PathLike,
    name: str = "diff",
    formats: str | Sequence[str] = "png",
    grid_shape: Sequence[int] | None = None,
) -> list[str]:
    """Draw the cells of ``a`` and ``b`` (same input shape), differing cells in red, labelled
    ``<a> / <b>`` (same cells: grey, labelled once); return the written paths.

    >>> import tempfile, layoutkit as lk
    >>> a, b = lk.Layout([4, 4], lambda i, j: i * 4 + j), lk.Layout([4, 4], lambda i, j: i * 4 + (j ^ i))
    >>> with tempfile.TemporaryDirectory() as d:
    ...     len(plot_diff(a, b, d, "ab", formats="all"))
    3
    """
    plt = pyplot()
    with plt.rc_context(RC):
        mask = difference_mask(a, b)
        ka, kb = cell_keys(a), cell_keys(b)
        shape = as_layout(a).input_shape
        rows, cols = grid2d(shape, grid_shape)
        labels = np.where(mask, np.char.add(np.char.add(ka, " / "), kb), ka).reshape(rows, cols)
        n = int(mask.sum())
        title = f"{n} of {mask.size} cells differ" + (f" (first at {_first(mask)})" if n else "")
        panel = Panel(mask.reshape(rows, cols).astype(float), labels, title)
        rgba = np.where(mask.reshape(rows, cols, 1), np.array(DIFFERENT), np.array(SAME))
        labelled = rows * cols <= LABEL_CELLS
        length = max((len(s) for s in labels.ravel()), default=1) if labelled else 1
        (head_a, formula_a), (head_b, formula_b) = layout_title(as_layout(a)), layout_title(as_layout(b))
        cell = cell_inches(rows, cols, labelled, length)
        fig, (ax,), _ = figure_grid([(rows, cols, cell)], f"a: {head_a}\nb: {head_b}",
                                    f"a: {formula_a};  b: {formula_b}")
        draw_cells(fig, ax, panel, rgba, gid="diff-cells")
        return save(fig, save_directory, name, formats)


def _first(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(v) for v in np.argwhere(mask)[0])
