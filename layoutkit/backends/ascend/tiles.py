"""The multi-core tile loop of an Ascend kernel: which output tile each AI core computes and that
tile's valid extents (CATLASS's identity block swizzle and ``GetTileLayout`` origin shapes).

Kept apart from the statement IR of :mod:`.ir` (which re-exports these names) because it is pure
arithmetic over tile counts, shared by the distributor, the executor and the printer.
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import tla

__all__ = ["TileLoop", "swizzle_coord", "origin_extents", "tile_env"]


@dataclass(frozen=True)
class TileLoop:
    """The output tiles of an ``m x n`` result in ``bm x bn`` tiles, distributed over the AI cores:
    ``for (t = core; t < tiles; t += GetBlockNum())`` with ``core = GetBlockIdx()`` (on a vector core
    ``GetBlockIdx() / GetSubBlockNum()``, the cube core it serves), the tile coordinate ``(mi, ni)`` from
    CATLASS's ``GemmIdentityBlockSwizzle<swizzle_offset, swizzle_direction>`` (:func:`swizzle_coord`) and the
    tile's origin extents (the TLA ``get_tile_layout`` rule ``min(tile, extent - offset)``): ``mActual``,
    ``nActual`` and, on a vector core that takes ``sub_rows`` rows of each tile, ``subM`` (its rows of the
    tile: ``min(sub_rows, max(mActual - sub * sub_rows, 0))``).  Statements in ``body`` use ``mi``, ``ni``,
    ``core`` in offsets and the extents in struct fields."""

    m: int
    n: int
    bm: int
    bn: int
    body: tuple
    swizzle_offset: int = 3
    swizzle_direction: int = 0
    sub_rows: int = 0

    @property
    def m_tiles(self) -> int:
        return -(-self.m // self.bm)

    @property
    def n_tiles(self) -> int:
        return -(-self.n // self.bn)

    @property
    def tiles(self) -> int:
        return self.m_tiles * self.n_tiles


def swizzle_coord(t: int, m_tiles: int, n_tiles: int, offset: int = 3, direction: int = 0) -> tuple[int, int]:
    """The ``(mi, ni)`` tile of task ``t`` under CATLASS's identity block swizzle: tiles go in bands of
    ``offset`` tile rows (direction 0; columns for direction 1), down each band's columns, and every other
    band is walked backwards so consecutive tasks share operand tiles.

    >>> [swizzle_coord(t, 4, 3, 3, 0) for t in range(12)][:7]
    [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1), (0, 2)]
    >>> [swizzle_coord(t, 4, 3, 3, 0) for t in range(9, 12)]
    [(3, 2), (3, 1), (3, 0)]
    """
    rows, cols = (m_tiles, n_tiles) if direction == 0 else (n_tiles, m_tiles)
    bands = -(-rows // offset)
    band, inner = divmod(t % (rows * cols), offset * cols)
    width = rows - offset * band if band == bands - 1 else offset
    a = band * offset + inner % width
    b = inner // width
    if band % 2 == 1:
        b = cols - b - 1
    return (a, b) if direction == 0 else (b, a)


def origin_extents(m: int, n: int, bm: int, bn: int, mi: int, ni: int) -> tuple[int, int]:
    """The valid extents of tile ``(mi, ni)`` of an ``m x n`` result in ``bm x bn`` tiles: the ``origin_shape``
    of CATLASS's ``GetTileLayout`` (``min(tile, extent - offset)``), which the printed kernel computes as
    ``mActual`` / ``nActual``.

    >>> origin_extents(100, 72, 64, 64, 1, 1), origin_extents(100, 72, 64, 64, 0, 0)
    ((36, 8), (64, 64))
    """
    tile = tla.get_tile_layout(tla.Layout((m, n)), (bm, bn), (mi * bm, ni * bn))
    rows, cols = tile.origin_shape
    return int(rows), int(cols)


def tile_env(loop: TileLoop, t: int, env: dict[str, int]) -> dict[str, int]:
    """``env`` with the variables of task ``t`` of ``loop``: ``mi``, ``ni``, ``mActual``, ``nActual`` (and
    ``subM`` on a vector core, ``env["sub"]`` given).

    >>> e = tile_env(TileLoop(100, 72, 64, 64, ()), 3, {})
    >>> e["mi"], e["ni"], e["mActual"], e["nActual"]
    (1, 1, 36, 8)
    """
    mi, ni = swizzle_coord(t, loop.m_tiles, loop.n_tiles, loop.swizzle_offset, loop.swizzle_direction)
    m_actual, n_actual = origin_extents(loop.m, loop.n, loop.bm, loop.bn, mi, ni)
    out = {**env, "mi": mi, "ni": ni, "mActual": m_actual, "nActual": n_actual}
    if loop.sub_rows:
        h = loop.sub_rows
        out["subM"] = min(h, max(out["mActual"] - env["sub"] * h, 0))
    return out
