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
from dataclasses import dataclass, replace

import numpy as np

from ..algebra.layout import Layout
from ..errors import LayoutError, ShapeError
from ..fragment.fragment import Fragment
from .schemes import CHUNK_COLORS, LINE_CHUNKS, bank_groups, chunk_elements, whole_chunks

MAX_REPLICA_PANELS = 4
"""Fragments with more replicas show this many panels (replica 0, 1, ...)."""
LABEL_GRID = 32 * 32
"""Grids up to this many cells carry per-cell labels (``draw.LABEL_CELLS``)."""
ZOOM = 8
"""Side of the labelled block a fragment too big to label gets beside its whole grid (an 8x8 MMA block)."""
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
    first_row: int = 0
    """Row index of the panel's first row (a slice of a taller grid numbers its rows from here)."""
    palette: tuple[tuple[float, float, float, float], ...] | None = None
    """Discrete colours: a cell of value ``v`` gets ``palette[int(v)]`` (the chunk colours), else a colormap."""


def as_layout(obj: object) -> Layout:
    """The ``lk.Layout`` (or Fragment) a plot draws: the one place that knows the input kinds.
    Fragments and swizzles are Layouts; TLA layouts are converted; an ``F2Linear`` (Triton's
    LinearLayout) becomes a Fragment when its in dims are register / lane / warp, else a Layout; a CuTe DSL
    layout is converted through ``tla.from_cute_dsl``."""
    from ..algebra.linear import HARDWARE_DIMS, F2Linear
    from ..tla.layout import Layout as TlaLayout

    if isinstance(obj, Layout):
        return obj
    if isinstance(obj, TlaLayout):
        return obj.to_layout()
    if isinstance(obj, F2Linear):
        if obj.in_dims and {n for n, _ in obj.in_dims} <= set(HARDWARE_DIMS):
            return Fragment.from_linear(obj)
        return Layout.from_linear(obj)
    if type(obj).__module__.startswith("cutlass."):  # a CuTe DSL layout, drawn while its @cute.jit function traces
        from ..tla.cute_dsl import from_cute_dsl
        from ..tla.swizzle import ComposedLayout

        converted = from_cute_dsl(obj)
        if isinstance(converted, (TlaLayout, ComposedLayout)):
            return converted.to_layout()
    raise LayoutError(
        "expected an lk.Layout, lk.Fragment, swizzle, layoutkit.tla.Layout, F2Linear or CuTe DSL layout to draw; found "
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


def layout_panels(obj: object, view: str = "input", grid_shape: Sequence[int] | None = None,
                  dtype: object = None, stages: int | None = None) -> list[Panel]:
    """Panels of a Layout / Fragment / TLA layout / F2Linear (see the module docstring).

    ``view="input"``: one cell per logical coordinate, labelled with its output (offset or tuple),
    or ``T<thread> L<slot>`` for fragments (one panel per replica, up to
    :data:`MAX_REPLICA_PANELS`, and a labelled :data:`ZOOM` x :data:`ZOOM` block when the whole grid
    is too big to label).  ``view="output"``: one cell per physical position, labelled with the
    logical coordinate stored there (empty when none; ``+`` when several).  ``dtype``: the element type
    of a memory layout, which colours cells by their 16-byte chunk (bank group) and draws whole chunks
    as one cell when the grid is too big to label; ``stages``: the leading dim is a pipeline of that
    many stages (its panels are titled ``stage k``).
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
    names = [v.name for v in layout.forward_vars]
    element_bytes = _element_bytes(dtype)
    lead = math.prod(shape[:-2]) if len(shape) >= 3 else 1
    if grid_shape is None and 1 < lead <= MAX_STAGE_PANELS:  # one panel per leading index (pipeline stage)
        rows, cols = shape[-2], shape[-1]
        offsets, labels = offsets.reshape(lead, rows, cols), labels.reshape(lead, rows, cols)
        pipeline = stages is not None and len(shape) == 3 and stages == shape[0]
        panels = []
        for k, idx in enumerate(np.ndindex(*shape[:-2])):
            where = ", ".join(map(str, idx))
            title = f"stage {where}: [{where}, :, :]" if pipeline else f"[{where}, :, :]"
            axis_labels = (f"{names[-2]} (dim {len(shape) - 2})", f"{names[-1]} (dim {len(shape) - 1})")
            panels += split_tall(_input_panel(layout, offsets[k], labels[k], title, element_bytes, axis_labels))
        return panels
    rows, cols = grid2d(shape, grid_shape)
    title = "input view" if lead == 1 or grid_shape is not None else (
        f"input view ({lead} leading positions folded into rows)")
    return split_tall(_input_panel(layout, offsets.reshape(rows, cols), labels.reshape(rows, cols), title,
                                   element_bytes))


TALL_ROWS = 32
"""A grid more than four times as tall as wide (and taller than this) is cut into slices of this many rows,
drawn side by side, so that its cells stay big without a figure metres tall."""


def split_tall(panel: Panel) -> list[Panel]:
    """``panel`` cut into side-by-side slices of :data:`TALL_ROWS` rows when it is much taller than wide.

    >>> p = Panel(np.zeros((128, 4)), np.full((128, 4), "x"), "A")
    >>> [(q.title, q.values.shape, q.first_row) for q in split_tall(p)][1]
    ('A, rows 32-63', (32, 4), 32)
    """
    rows, cols = panel.values.shape
    if rows <= TALL_ROWS or rows <= 4 * cols or rows % TALL_ROWS or panel.outline is not None:
        return [panel]
    out = []
    for start in range(0, rows, TALL_ROWS):
        part = slice(start, start + TALL_ROWS)
        out.append(replace(panel, values=panel.values[part], labels=panel.labels[part],
                           threads=None if panel.threads is None else panel.threads[part],
                           title=f"{panel.title}, rows {start}-{start + TALL_ROWS - 1}", first_row=start,
                           ylabel=panel.ylabel if start == 0 else ""))
    return out


def _element_bytes(dtype: object) -> int | None:
    if dtype is None:
        return None
    from ..dtypes import element_bits

    bits = element_bits(dtype)
    return bits // 8 if bits % 8 == 0 else None


def _input_panel(layout: Layout, offsets: np.ndarray, labels: np.ndarray, title: str,
                 element_bytes: int | None = None, axis_labels: tuple[str, str] = ("", "")) -> Panel:
    """Cells coloured by what shows the structure: the 16-byte chunk of a memory layout of known element
    type (whole chunks drawn as one cell when there are too many elements to label), the offset within
    its fractal for Ascend layouts (fractals outlined), else the offset within its row."""
    rows, cols = offsets.shape
    ylabel, xlabel = axis_labels
    tile = fractal_tile(layout) if layout.fractal is not None else None
    if tile is not None and rows % tile[0] == 0 and cols % tile[1] == 0:
        size = tile[0] * tile[1]
        order = np.char.add("F", (offsets[:: tile[0], :: tile[1]] // size).astype(str))
        return Panel((offsets % size).astype(float), labels, title, colorbar=(
            f"offset within its {tile[0]} x {tile[1]} fractal (outlined; F<k>: k-th fractal in memory)"),
            outline=tile, vmin=0, vmax=size - 1, tile_labels=order, xlabel=xlabel, ylabel=ylabel)
    per_chunk = chunk_elements(element_bytes) if element_bytes is not None else None
    if per_chunk is not None:
        groups = bank_groups(offsets, element_bytes or 1)
        key = "16-byte chunk of its 128-byte line (chunk c: banks 4c .. 4c+3)"
        if rows * cols > LABEL_GRID and whole_chunks(offsets, per_chunk):
            chunks = groups[:, ::per_chunk]
            return Panel(chunks.astype(float), np.char.add("c", chunks.astype(str)), title,
                         colorbar=f"one cell: a 16-byte chunk ({per_chunk} elements);\n{key}",
                         vmin=0, vmax=LINE_CHUNKS - 1, palette=CHUNK_COLORS, ylabel=ylabel,
                         xlabel=f"{xlabel.split(' (')[0] or 'column'} // {per_chunk}")
        return Panel(groups.astype(float), labels, title, colorbar=key, vmin=0, vmax=LINE_CHUNKS - 1,
                     palette=CHUNK_COLORS, xlabel=xlabel, ylabel=ylabel)
    if rows == 1:
        return Panel(offsets.astype(float), labels, title, colorbar="offset", xlabel=xlabel, ylabel=ylabel)
    return Panel((offsets % cols).astype(float), labels, title, colorbar=f"offset mod {cols} (place in its row)",
                 vmin=0, vmax=cols - 1, xlabel=xlabel, ylabel=ylabel)


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
    labelled = rows * cols <= LABEL_GRID
    panels = []
    for r in range(shown):
        t = threads[r].reshape(rows, cols)
        labels = np.char.add(np.char.add(np.char.add("T", t.astype(str)), " L"), slots)
        what = "T<thread> L<register> of each element" if labelled else "thread of each element"
        title = f"replica {r}{suffix}: {what}" if frag.replicate_size > 1 else what
        panels.append(Panel(t.astype(float), labels, title, t.astype(np.int64), colorbar="thread id"))
    if not labelled:  # the whole grid is too big to label: one labelled block beside it
        zr, zc = min(rows, ZOOM), min(cols, ZOOM)
        first = panels[0]
        panels.append(Panel(first.values[:zr, :zc], first.labels[:zr, :zc],
                            f"zoom: rows 0-{zr - 1}, cols 0-{zc - 1} (one {zr}x{zc} block), T<thread> L<register>",
                            None if first.threads is None else first.threads[:zr, :zc], colorbar="thread id"))
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

