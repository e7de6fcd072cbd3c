"""What a cell's colour means: the colour schemes of the figures.

* Shared memory (a layout drawn with its element type): the 16-byte chunk of its 128-byte line a cell
  lands in, i.e. its group of four banks (:func:`bank_groups`), on a qualitative 8-colour palette, so
  an XOR swizzle shows as the permutation it applies to the chunks of each row, repeating with the
  swizzle's period.
* Register fragments: the warp as the hue and the lane as the shade (:func:`warp_lane_colors`), so
  neighbouring warps never look alike and the lanes of one warp read as one family.

>>> import numpy as np
>>> bank_groups(np.array([[0, 8, 16], [64, 72, 80]]), 2).tolist()   # fp16: 8 elements per chunk
[[0, 1, 2], [0, 1, 2]]
>>> colors = warp_lane_colors([0, 1, 32])
>>> colors[0] != colors[32], len(colors)
(True, 3)
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

CHUNK_BYTES = 16
"""A shared-memory chunk: the unit a bank swizzle permutes (4 banks of 4 bytes)."""
LINE_CHUNKS = 8
"""Chunks in one 128-byte line: the 32 banks, so chunk ``c`` of a line is banks ``4c .. 4c+3``."""
WARP_SIZE = 32

Rgba = tuple[float, float, float, float]

CHUNK_COLORS: tuple[Rgba, ...] = tuple(
    (int(h[1:3], 16) / 255, int(h[3:5], 16) / 255, int(h[5:7], 16) / 255, 1.0)
    for h in ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#edc948", "#76b7b2", "#9c755f")
)
"""Eight clearly distinct colours (Tableau 10's first eight), one per 16-byte chunk of a 128-byte line."""

WARP_HUES: tuple[Rgba, ...] = CHUNK_COLORS + tuple(
    (int(h[1:3], 16) / 255, int(h[3:5], 16) / 255, int(h[5:7], 16) / 255, 1.0) for h in ("#ff9da7", "#bab0ac")
)
"""Ten hues, one per warp (warps beyond ten reuse them in order)."""

LANE_FADE = 0.6
"""Lane 31 of a warp is its hue mixed this much with white; lane 0 is the pure hue."""


def chunk_elements(element_bytes: int) -> int | None:
    """Elements per 16-byte chunk, or None for elements that do not pack one.

    >>> chunk_elements(2), chunk_elements(4), chunk_elements(32)
    (8, 4, None)
    """
    if element_bytes <= 0 or element_bytes > CHUNK_BYTES or CHUNK_BYTES % element_bytes:
        return None
    return CHUNK_BYTES // element_bytes


def bank_groups(offsets: np.ndarray, element_bytes: int) -> np.ndarray:
    """``(offset * bytes // 16) % 8``: the 16-byte chunk of its 128-byte line each element lands in (its
    four banks).  Law: every element of one aligned 16-byte chunk gets the same group."""
    return (np.asarray(offsets, dtype=np.int64) * int(element_bytes) // CHUNK_BYTES) % LINE_CHUNKS


def whole_chunks(offsets: np.ndarray, per_chunk: int) -> bool:
    """Whether every run of ``per_chunk`` consecutive cells of a row is one aligned 16-byte chunk in
    memory (consecutive offsets from a multiple of ``per_chunk``), so it can be drawn as one cell.

    >>> whole_chunks(np.array([[8, 9, 0, 1]]), 2), whole_chunks(np.array([[1, 2, 3, 4]]), 2)
    (True, False)
    """
    rows, cols = offsets.shape
    if per_chunk <= 1 or cols % per_chunk:
        return False
    runs = offsets.reshape(rows, cols // per_chunk, per_chunk)
    first = runs[..., :1]
    return bool(np.all(first % per_chunk == 0) and np.all(runs == first + np.arange(per_chunk)))


def warp_lane_color(thread: int) -> Rgba:
    """The colour of ``thread``: its warp's hue, lighter for a higher lane."""
    warp, lane = divmod(int(thread), WARP_SIZE)
    base = np.asarray(WARP_HUES[warp % len(WARP_HUES)][:3])
    fade = LANE_FADE * lane / (WARP_SIZE - 1)
    r, g, b = (base * (1 - fade) + fade).tolist()
    return (r, g, b, 1.0)


def warp_lane_colors(threads: Iterable[int]) -> dict[int, Rgba]:
    """:func:`warp_lane_color` of every thread id in ``threads``."""
    return {int(t): warp_lane_color(int(t)) for t in threads}
