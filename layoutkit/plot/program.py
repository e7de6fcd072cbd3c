"""The figures of a solved program's buffers: each named after its buffer, drawn with the buffer's element
type (shared memory coloured by 16-byte chunk) and its pipeline stages (what ``layoutkit infer --plot``
writes).

>>> import layoutkit as lk
>>> from layoutkit import infer
>>> prog = infer.programs.gemm(M=64, N=64, K=64, bM=64, bN=64, bK=32)
>>> result = infer.infer_layouts(prog)
>>> fig = buffer_figure(prog, "B_shared", result.layout_map["B_shared"])
>>> fig.get_suptitle()
'B_shared: 128-byte swizzle, 2 stages, float16'
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from ..algebra.layout import Layout
from .layout import plot_layout


def pipeline_stages(program: Any, name: str, layout: Layout) -> int | None:
    """The stages of buffer ``name`` when its layout has a stage dim in front of the declared shape
    (a buffer written in a pipelined loop), else None."""
    shape = tuple(program.buffers[name].shape)
    lead = tuple(layout.input_shape)
    return int(lead[0]) if len(lead) == len(shape) + 1 and lead[1:] == shape else None


def buffer_figure(program: Any, name: str, layout: Layout) -> Any:
    """The matplotlib Figure of buffer ``name`` of ``program`` laid out as ``layout``."""
    return plot_layout(layout, None, name, dtype=program.buffers[name].dtype,
                       stages=pipeline_stages(program, name, layout))


def plot_buffers(program: Any, layouts: Mapping[str, Layout], save_directory: str | os.PathLike,
                 prefix: str = "", formats: str | Sequence[str] = "png") -> list[str]:
    """Write one figure per buffer of ``layouts`` as ``save_directory/<prefix><name>.<format>``; return
    the paths."""
    paths: list[str] = []
    for name, layout in layouts.items():
        paths += plot_layout(layout, save_directory, f"{prefix}{name}", formats=formats,
                             dtype=program.buffers[name].dtype, stages=pipeline_stages(program, name, layout))
    return paths
