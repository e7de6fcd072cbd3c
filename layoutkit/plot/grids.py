"""Turn a Layout, Fragment, TLA layout or swizzle into 2-D cell grids (numbers and labels).

A :class:`Panel` is what one axes draws: ``values`` (float, NaN for an empty cell) chooses the
colour, ``labels`` the text of each cell.  Grids are 2-D: rank-1 shapes become one row (rows of 32
when longer), higher ranks
fold their leading dims into rows, and ``grid_shape`` reshapes explicitly (same cell count, or a
larger box for the output view).

>>> import layoutkit as lk
>>> p = layout_panels(lk.Layout([2, 2], lambda i, j: (j, i)))[0]
>>> p.labels.tolist()
[['(0,0)', '(1,0)'], ['(0,1)', '(1,1)']]
>>> layout_panels(lk.Layout([2, 2], lambda i, j: (j, i)), view="output")[0].labels.tolist()
[['(0,0)', '(1,0)'], ['(0,1)', '(1,1)']]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..algebra.layout import Layout
from ..errors import LayoutError, ShapeError
from ..fragment.fragment import Fragment

MAX_REPLICA_PANELS = 4
"""Fragments with more replicas show this many panels (replica 0, 1, ...)."""
LABEL_GRID = 32 * 32
"""Grids up to this many cells carry per-cell labels (``draw.LABEL_CELLS``)."""
MAX_STAGE_PANELS = 8
"""Layouts of rank 3 or more with at most this many leading positions (pipeline stages) show one panel
per position; more are folded into rows."""


@dataclass
class Panel:
    """One grid: ``values[r, c]`` (float, NaN = empty), ``labels[r, c]`` (str), a title, and for
    fragments the integer ``threads`` of each cell (-1 = empty)."""

    values: np.ndarray
    labels: np.ndarray
    title: str
    threads: np.ndarray | None = None
    xlabel: str = ""
    ylabel: str = ""
    colorbar: str = ""
    """What the colours mean (the colour bar's label); empty: no colour bar."""
    outline: tuple[int, int] | None = None
    """``(rows, cols)`` of the tiles to outline (an Ascend fractal), or None."""
    vmin: float | None = None
    vmax: float | None = None
    tile_labels: np.ndarray | None = None
    """Text at the centre of each outlined tile (``F<k>``: the k-th fractal in memory)."""


def as_layout(obj: object) -> Layout:
    """An ``lk.Layout`` (Fragments and swizzles are Layouts; TLA and CuTe DSL layouts are converted, the latter
    through ``tla.from_cute_dsl``)."""
    if isinstance(obj, Layout):
        return obj
    from ..tla.layout import Layout as TlaLayout

    if isinstance(obj, TlaLayout):
        return obj.to_layout()
    if type(obj).__module__.startswith("cutlass."):  # a CuTe DSL layout, drawn while its @cute.jit function traces
        from ..tla.cute_dsl import from_cute_dsl
        from ..tla.swizzle import ComposedLayout

        converted = from_cute_dsl(obj)
        if isinstance(converted, (TlaLayout, ComposedLayout)):
            return converted.to_layout()
    raise LayoutError(
        f"expected an lk.Layout, lk.Fragment, swizzle, layoutkit.tla.Layout or CuTe DSL layout to draw; found "
        f"{type(obj).__name__}"
    )


def grid2d(shape: Sequence[int], grid_shape: Sequence[int] | None = None) -> tuple[int, int]:
    """Rows x cols of the grid that shows ``shape`` (row-major).

    >>> grid2d([8]), grid2d([2, 4, 8]), grid2d([64], (8, 8)), grid2d([128]), grid2d([37])
    ((1, 8), (8, 8), (8, 8), (4, 32), (1, 37))
    """
    size = math.prod(shape)
    if grid_shape is not None:
        g = tuple(int(v) for v in grid_shape)
        if len(g) != 2 or min(g) <= 0 or g[0] * g[1] != size:
            raise ShapeError(f"grid_shape must be (rows, cols) with rows * cols = {size}; found {tuple(grid_shape)}")
        return g[0], g[1]
    if len(shape) == 1:  # a long row folds into rows of up to 32 (row-major), so it stays readable
        n = int(shape[0])
        cols = next((c for c in range(32, 7, -1) if n > 32 and n % c == 0), n)
        return n // cols, cols
    return size // int(shape[-1]), int(shape[-1])


def coord_text(table: np.ndarray) -> np.ndarray:
    """``table[..., m]`` -> strings: ``"17"`` for one output, ``"(2,1)"`` for several."""
    if table.shape[-1] == 1:
        return table[..., 0].astype(str)
    parts = [table[..., k].astype(str) for k in range(table.shape[-1])]
    out = parts[0]
    for p in parts[1:]:
        out = np.char.add(np.char.add(out, ","), p)
    return np.char.add(np.char.add("(", out), ")")


def _out_grid(layout: Layout, grid_shape: Sequence[int] | None) -> tuple[int, int]:
    out = layout.output_shape
    if grid_shape is not None:
        g = tuple(int(v) for v in grid_shape)
        if len(g) != 2 or min(g) <= 0 or g[0] * g[1] < math.prod(out):
            raise ShapeError(
                f"grid_shape for the output view must be (rows, cols) covering {math.prod(out)} positions; "
                f"found {tuple(grid_shape)}"
            )
        return g[0], g[1]
    if len(out) == 2:
        return out[0], out[1]
    cols = layout.input_shape[-1]  # rank 1 or >= 3: the row-major offsets, as wide as the input rows
    return -(-math.prod(out) // cols), cols


def layout_panels(obj: object, view: str = "input", grid_shape: Sequence[int] | None = None) -> list[Panel]:
    """Panels of a Layout / Fragment / TLA layout (see the module docstring).

    ``view="input"``: one cell per logical coordinate, labelled with its output (offset or tuple),
    or ``T<thread> L<slot>`` for fragments (one panel per replica, up to
    :data:`MAX_REPLICA_PANELS`).  ``view="output"``: one cell per physical position, labelled with
    the logical coordinate stored there (empty when none; ``+`` when several).
    """
    if view not in ("input", "output"):
        raise ShapeError(f"view must be 'input' or 'output'; found {view!r}")
    layout = as_layout(obj)
    if isinstance(layout, Fragment):
        return _fragment_panels(layout, view, grid_shape)
    if view == "output":
        return [_output_panel(layout, grid_shape)]
    shape = layout.input_shape
    offsets = np.asarray(layout.linear_table())
    labels = coord_text(np.asarray(layout.table()))
    stages = math.prod(shape[:-2]) if len(shape) >= 3 else 1
    if grid_shape is None and 1 < stages <= MAX_STAGE_PANELS:  # one panel per stage (leading index)
        rows, cols = shape[-2], shape[-1]
        offsets, labels = offsets.reshape(stages, rows, cols), labels.reshape(stages, rows, cols)
        lead = list(np.ndindex(*shape[:-2]))
        names = [v.name for v in layout.forward_vars]
        panels = []
        for k, idx in enumerate(lead):
            where = ", ".join(map(str, idx))
            title = f"stage {where}: [{where}, :, :]" if len(idx) == 1 else f"[{where}, :, :]"
            panel = _input_panel(layout, offsets[k], labels[k], title)
            panel.ylabel, panel.xlabel = f"{names[-2]} (dim {len(shape) - 2})", f"{names[-1]} (dim {len(shape) - 1})"
            panels.append(panel)
        return panels
    rows, cols = grid2d(shape, grid_shape)
    title = "input view" if stages == 1 or grid_shape is not None else (
        f"input view ({stages} leading positions folded into rows)")
    return [_input_panel(layout, offsets.reshape(rows, cols), labels.reshape(rows, cols), title)]


def _input_panel(layout: Layout, offsets: np.ndarray, labels: np.ndarray, title: str) -> Panel:
    """Cells coloured by the offset, modulo what shows the structure: the fractal size of an Ascend
    layout (with the fractals outlined), the row width of a 2-D grid (the permutation in each row)."""
    rows, cols = offsets.shape
    tile = fractal_tile(layout) if layout.fractal is not None else None
    if tile is not None and rows % tile[0] == 0 and cols % tile[1] == 0:
        size = tile[0] * tile[1]
        order = np.char.add("F", (offsets[:: tile[0], :: tile[1]] // size).astype(str))
        return Panel((offsets % size).astype(float), labels, title, colorbar=(
            f"offset within its {tile[0]} x {tile[1]} fractal (outlined; F<k>: k-th fractal in memory)"),
            outline=tile, vmin=0, vmax=size - 1, tile_labels=order)
    if rows == 1:
        return Panel(offsets.astype(float), labels, title, colorbar="offset")
    return Panel((offsets % cols).astype(float), labels, title, colorbar=f"offset mod {cols} (place in its row)",
                 vmin=0, vmax=cols - 1)


def fractal_tile(layout: Layout) -> tuple[int, int] | None:
    """``(rows, cols)`` of one fractal on the logical grid of an Ascend fractal layout, else None.

    >>> from layoutkit.targets import ascend
    >>> fractal_tile(ascend.make_ascend_nz_layout((32, 64), "float16"))
    (16, 16)
    >>> fractal_tile(ascend.make_ascend_nz_layout((32, 64), "int8"))
    (16, 32)
    """
    from ..targets.ascend import fractal_info

    try:
        info = fractal_info(layout)
    except LayoutError:
        return None
    along = {info.c0_axis: info.c0, info.row16_axis: info.row_frac}
    tile = (along.get(0, 1), along.get(1, 1))
    return tile if tile[0] > 1 and tile[1] > 1 else None


def _output_panel(layout: Layout, grid_shape: Sequence[int] | None) -> Panel:
    rows, cols = _out_grid(layout, grid_shape)
    n = rows * cols
    flat_out = np.asarray(layout.linear_table()).reshape(-1)
    logical = np.arange(flat_out.size)
    values = np.full(n, np.nan)
    counts = np.bincount(flat_out, minlength=n)
    values[flat_out[::-1]] = logical[::-1] % layout.input_shape[-1]  # the first logical coordinate wins
    coords = np.stack(np.unravel_index(np.arange(flat_out.size), layout.input_shape), axis=-1)
    text = coord_text(coords)
    labels = np.full(n, "", dtype=text.dtype if text.size else "<U1")
    labels[flat_out[::-1]] = text[::-1]
    labels = np.where(counts > 1, np.char.add(labels, "+"), labels)
    title = "output view: the logical coordinate at each physical position"
    return Panel(values.reshape(rows, cols), labels.reshape(rows, cols), title,
                 colorbar="last index of the logical coordinate (grey: unused)")


def _fragment_panels(frag: Fragment, view: str, grid_shape: Sequence[int] | None) -> list[Panel]:
    threads = np.asarray(frag.thread_table())
    index = np.asarray(frag.index_table())
    if view == "output":
        return [_register_panel(frag, threads, index)]
    shown = min(frag.replicate_size, MAX_REPLICA_PANELS)
    suffix = "" if shown == frag.replicate_size else f" (showing {shown} of {frag.replicate_size})"
    rows, cols = grid2d(frag.input_shape, grid_shape)
    slots = index.reshape(rows, cols).astype(str)
    panels = []
    for r in range(shown):
        t = threads[r].reshape(rows, cols)
        labels = np.char.add(np.char.add(np.char.add("T", t.astype(str)), " L"), slots)
        what = "T<thread> L<register> of each element" if rows * cols <= LABEL_GRID else (
            "thread of each element (colour; too many cells for T<thread> L<register> labels)")
        title = f"replica {r}{suffix}: {what}" if frag.replicate_size > 1 else what
        panels.append(Panel(t.astype(float), labels, title, t.astype(np.int64), colorbar="thread id"))
    return panels


def _register_panel(frag: Fragment, threads: np.ndarray, index: np.ndarray) -> Panel:
    """Output view of a fragment: rows are threads, columns are registers; each cell names the
    logical coordinate held there (every replica; ``+`` when a slot holds several)."""
    rows, cols = frag.thread_extent, frag.local_size
    n_rep = threads.shape[0]
    flat = (threads.reshape(n_rep, -1) * cols + index.reshape(1, -1)).reshape(-1)
    logical = np.tile(np.arange(index.size), n_rep)
    n = rows * cols
    values = np.full(n, np.nan)
    values[flat[::-1]] = logical[::-1]
    coords = np.stack(np.unravel_index(logical, frag.input_shape), axis=-1)
    text = coord_text(coords)
    labels = np.full(n, "", dtype=text.dtype)
    labels[flat[::-1]] = text[::-1]
    labels = np.where(np.bincount(flat, minlength=n) > 1, np.char.add(labels, "+"), labels)
    cell_threads = np.full(n, -1, dtype=np.int64)
    cell_threads[flat] = threads.reshape(-1)
    return Panel(values.reshape(rows, cols), labels.reshape(rows, cols), "output view: the element in each register",
                 cell_threads.reshape(rows, cols), xlabel="register", ylabel="thread", colorbar="thread id")


def describe(obj: object) -> str:
    """The figure title: the object's text (TLA layouts as ``shape:stride``)."""
    from ..tla.layout import Layout as TlaLayout

    if isinstance(obj, TlaLayout):
        return f"TLA layout {obj} over {tuple(obj.origin_shape)}"
    text = str(obj)
    return text if len(text) <= 300 else text[:297] + "..."
