"""Figure titles: what is drawn, in words, with the formula as a subtitle.

The title names the buffer and what its layout is (``B_shared: 128-byte swizzle, 2 stages, float16``;
``C_local: register fragment, 128 threads (4 warps) x 128 registers, float32``); the subtitle is the
formula, cut to one line.

>>> import layoutkit as lk
>>> from layoutkit.targets import nv
>>> layout_title(nv.make_full_bank_swizzled_layout((32, 64), "float16"), "A_shared", "float16")[0]
'A_shared: 128-byte swizzle, float16'
>>> layout_title(lk.Layout([4, 8], lambda i, j: (j, i)))
('Layout (4, 8) -> (8, 4)', '(_i, _j) -> (_j, _i)')
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from ..algebra.layout import Layout
from ..errors import LayoutError
from ..fragment.fragment import Fragment
from .schemes import WARP_SIZE


def layout_title(layout: Layout, name: str | None = None, dtype: object = None, stages: int | None = None,
                 ) -> tuple[str, str]:
    """``(title, subtitle)`` of a figure of ``layout``: ``"<name>: <what it is>[, <stages> stages][, <dtype>]"``
    (without a name: the kind and shapes), and the formula."""
    pipeline = stages is not None and stages > 1 and len(layout.input_shape) >= 3 and layout.input_shape[0] == stages
    if isinstance(layout, Fragment):
        threads = layout.thread_extent
        warps = f" ({threads // WARP_SIZE} warps)" if threads % WARP_SIZE == 0 and threads > WARP_SIZE else ""
        what = (f"register fragment, {threads} threads{warps} x {layout.local_size} registers"
                + (f", {layout.replicate_size} replicas" if layout.replicate_size > 1 else ""))
        formula = (f"thread: {layout.forward_thread}; register: "
                   f"{', '.join(str(e) for e in layout.forward_index)}")
    else:
        kind = fractal_kind(layout) if layout.fractal is not None else None
        if kind is None and dtype is not None:
            kind = memory_kind(layout, dtype, stages if pipeline else None)
        what = kind or "layout"
        formula = f"{_tuple(v.name for v in layout.forward_vars)} -> {_tuple(layout.forward_index)}"
    parts = [what] + ([f"{stages} stages"] if pipeline else []) + ([_dtype_name(dtype)] if dtype is not None else [])
    shapes = f"{tuple(layout.input_shape)}"
    if not isinstance(layout, Fragment):
        try:
            shapes += f" -> {tuple(layout.output_shape)}"
        except LayoutError:
            pass
    if name:
        parts[0] = f"layout {shapes}" if parts[0] == "layout" else parts[0]
        return f"{name}: {', '.join(parts)}", formula
    head = "Fragment" if isinstance(layout, Fragment) else "Layout"
    extra = [p for p in parts if p != "layout"]
    return f"{head} {shapes}" + (f": {', '.join(extra)}" if extra else ""), formula


def memory_kind(layout: Layout, dtype: object, stages: int | None = None) -> str | None:
    """What a shared-memory layout of ``dtype`` elements is, read off one stage's offsets: a 32/64/128-byte
    swizzle, row-major, padded; None when it is none of them."""
    from ..targets.nv import (
        make_bank_swizzled_layout,
        make_linear_layout,
        make_padded_layout,
    )

    shape = tuple(layout.input_shape[1:] if stages else layout.input_shape)
    if len(shape) != 2:
        return None
    try:
        offsets = np.asarray(layout.linear_table()).reshape(-1, *shape)[0]
    except LayoutError:
        return None
    offsets = offsets - offsets.min()
    candidates: list[tuple[str, Callable[[], Layout]]] = [
        (f"{g}-byte swizzle", partial(make_bank_swizzled_layout, shape, dtype, g)) for g in (128, 64, 32)]
    candidates += [("row-major", partial(make_linear_layout, shape, dtype)),
                   ("padded rows", partial(make_padded_layout, shape, dtype))]
    for text, build in candidates:
        try:
            table = np.asarray(build().linear_table())
        except LayoutError:
            continue
        if table.shape == offsets.shape and np.array_equal(table, offsets):
            return text
    return None


def fractal_kind(layout: Layout) -> str | None:
    """An Ascend fractal layout in words (``"major_k fractal layout, 16 x 16 fractals"``), else None.

    >>> from layoutkit.targets import ascend
    >>> fractal_kind(ascend.make_ascend_nz_layout((32, 64), "float16"))
    'major_k fractal layout, 16 x 16 fractals'
    """
    from ..targets.ascend import fractal_info

    try:
        info = fractal_info(layout)
    except LayoutError:
        return None
    along = {info.c0_axis: info.c0, info.row16_axis: info.row_frac}
    return f"{info.kind.name.lower()} fractal layout, {along.get(0, 1)} x {along.get(1, 1)} fractals"


def _dtype_name(dtype: object) -> str:
    from ..dtypes import canonical_dtype

    try:
        return str(canonical_dtype(dtype))
    except LayoutError:
        return str(dtype)


def _tuple(items) -> str:
    texts = [str(x) for x in items]
    return f"({texts[0]},)" if len(texts) == 1 else f"({', '.join(texts)})"

