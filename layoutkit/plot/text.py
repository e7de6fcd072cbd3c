"""Small ASCII tables of a Layout or Fragment (the four-line view is ``Fragment.text()``).

>>> import layoutkit as lk
>>> print(ascii_table(lk.Layout([2, 3], lambda i, j: j * 2 + i)))
     0  1  2
  0  0  2  4
  1  1  3  5
>>> print(ascii_table(lk.Fragment([2, 2], forward_thread_fn=lambda i, j: j)))
         0      1
  0  T0:L0  T1:L0
  1  T0:L1  T1:L1
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import ShapeError
from ..fragment.fragment import Fragment
from .grids import as_layout, coord_text, grid2d

MAX_CELLS = 1024
"""Default largest table ``ascii_table`` prints."""


def cell_text(obj: object) -> np.ndarray:
    """Text of every input coordinate: the output (offset or tuple) of a Layout, or ``T<t>:L<l>``
    of a Fragment (threads of every replica joined by ``,``)."""
    layout = as_layout(obj)
    if isinstance(layout, Fragment):
        threads = np.asarray(layout.thread_table())
        text = np.char.add("T", threads[0].astype(str))
        for r in range(1, threads.shape[0]):
            text = np.char.add(np.char.add(text, ","), threads[r].astype(str))
        return np.char.add(np.char.add(text, ":L"), np.asarray(layout.index_table()).astype(str))
    return coord_text(np.asarray(layout.table()))


def ascii_table(obj: object, max_cells: int = MAX_CELLS, grid_shape: Sequence[int] | None = None) -> str:
    """A rows x cols table of ``obj`` (rank-1 shapes are one row, higher ranks fold their leading
    dims into rows); :class:`~layoutkit.ShapeError` beyond ``max_cells`` cells."""
    layout = as_layout(obj)
    if layout.size > max_cells:
        raise ShapeError(
            f"{layout.size} cells is more than max_cells={max_cells} for an ASCII table of {layout.input_shape}; "
            "plot it instead or raise max_cells"
        )
    rows, cols = grid2d(layout.input_shape, grid_shape)
    cells = cell_text(layout).reshape(rows, cols)
    width = max(max(len(s) for s in cells.ravel()), len(str(cols - 1)))
    head = len(str(rows - 1))
    lines = [" " * (head + 2) + "  " + "  ".join(str(c).rjust(width) for c in range(cols))]
    for r in range(rows):
        lines.append(str(r).rjust(head + 2) + "  " + "  ".join(s.rjust(width) for s in cells[r]))
    return "\n".join(line.rstrip() for line in lines)
