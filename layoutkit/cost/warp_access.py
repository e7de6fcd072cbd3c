"""Prices of a distributed layout read off its F2 map ``(register, lane, warp) -> coordinate`` (Triton's view,
:class:`~layoutkit.algebra.linear.F2Linear`), for choosing among candidate layouts quickly:

* :func:`warp_sectors`: the 32-byte sectors every warp-wide global access touches, summed over the access
  instructions (a thread moves ``vector`` consecutive registers per instruction), for an affine address
  ``sum(strides[d] * x[d])`` in elements of ``elem_bytes``;
* :func:`reduction_rounds`: what a reduction along one dim costs beyond a thread's own registers: the
  butterfly shuffle rounds across lanes and the exchange rounds across warps (through shared memory).

>>> from layoutkit.algebra.linear import F2Linear
>>> rows = F2Linear.from_bases({"register": [[0, 1], [0, 2]], "lane": [[0, 4], [0, 8], [1, 0], [2, 0], [4, 0]],
...                             "warp": [[8, 0], [16, 0]]}, [("dim0", 32), ("dim1", 16)])
>>> warp_sectors(rows, (16, 1), 4, vector=4)      # each warp row: 4 x 16 bytes = 64 bytes = 2 sectors, 8 rows
64
>>> reduction_rounds(rows, 1), reduction_rounds(rows, 0)
((2, 0), (3, 2))

Both also read the map as its basis lists per in dim (``{"register": [...], "lane": [...], "warp": [...]}``), for
a caller pricing many candidates without building each map:

>>> warp_sectors(dict(zip(rows.in_names, rows.bases)), (16, 1), 4, vector=4)
64
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..algebra.linear import F2Linear

SECTOR = 32


Bases = Mapping[str, Sequence[Sequence[int]]]
"""A register map as its basis images per in dim (``register``, ``lane``, ``warp``)."""


def _bases(view: F2Linear | Bases) -> Bases:
    return view if isinstance(view, Mapping) else dict(zip(view.in_names, view.bases))


def _table(view: F2Linear | Bases, warps: bool = True, rank: int | None = None) -> np.ndarray:
    """Coordinates of every slot, shape ``[warp, lane, register, rank]`` (XOR of the set bits' bases); warp 0
    only unless ``warps``."""
    per = _bases(view)
    rank = len(view.out_dims) if isinstance(view, F2Linear) else int(rank or 0)
    parts = [np.zeros((1, rank), dtype=np.int64)] if not warps else []
    for name in ("warp", "lane", "register")[0 if warps else 1:]:
        bs = per.get(name, ())
        basis = np.asarray(bs, dtype=np.int64).reshape(len(bs), rank)
        # index i's coordinate: XOR of the bases of i's set bits, all indices at once
        n = basis.shape[0]
        bits = (np.arange(1 << n, dtype=np.int64)[:, None] >> np.arange(n, dtype=np.int64)) & 1
        picked = np.where(bits[:, :, None] == 1, basis[None, :, :], 0)
        parts.append(np.bitwise_xor.reduce(picked, axis=1) if n else np.zeros((1, rank), dtype=np.int64))
    w, ln, r = parts
    return w[:, None, None, :] ^ ln[None, :, None, :] ^ r[None, None, :, :]


def warp_sectors(view: F2Linear | Bases, strides: Sequence[int], elem_bytes: int, vector: int = 1) -> int:
    """Sectors touched by all warp-wide access instructions of ``view`` at address ``sum(strides * x)``: those
    of warp 0, times the warps (a warp's accesses are another's shifted by its offset)."""
    nwarps = 1 << len(_bases(view).get("warp", ()))
    t = _table(view, warps=False, rank=len(strides))[0]                                # [lane, register, rank]
    addr = (t * np.asarray(strides, dtype=np.int64)).sum(axis=-1) * int(elem_bytes)   # [lane, register]
    lanes, regs = addr.shape
    vector = max(1, min(int(vector), regs))
    groups = regs // vector
    # one instruction per register group; a vector spans its first to its last sector
    first, last = addr[:, 0::vector][:, :groups], addr[:, vector - 1::vector][:, :groups]
    sectors = np.concatenate([first, last], axis=0).T // SECTOR                        # [group, 2 * lane]
    # distinct sectors per instruction: sorted along the row, 1 + the steps between neighbours
    sectors.sort(axis=1)
    return int(groups + np.count_nonzero(sectors[:, 1:] != sectors[:, :-1])) * nwarps


def reduction_rounds(view: F2Linear | Bases, dim: int) -> tuple[int, int]:
    """``(lane_rounds, warp_rounds)``: lane and warp bits whose basis moves along ``dim``."""
    per = _bases(view)
    lane = sum(1 for v in per.get("lane", ()) if v[dim])
    warp = sum(1 for v in per.get("warp", ()) if v[dim])
    return lane, warp


def conversion_moves(src: F2Linear, dst: F2Linear) -> tuple[int, int]:
    """``(across_warps, across_lanes)``: elements a conversion from ``src`` to ``dst`` (same shape) must move to
    another warp (through shared memory) and, of the rest, to another lane (shuffles); replicas count once
    (each element's first slot in ``src`` and ``dst``).

    >>> from layoutkit.algebra.linear import F2Linear
    >>> a = F2Linear.from_bases({"register": [[1]], "lane": [[2]], "warp": [[4]]}, [("dim0", 8)])
    >>> b = F2Linear.from_bases({"register": [[2]], "lane": [[1]], "warp": [[4]]}, [("dim0", 8)])
    >>> conversion_moves(a, a), conversion_moves(a, b)
    ((0, 0), (0, 4))
    """
    shape = tuple(s for _, s in src.out_dims)

    def owners(view: F2Linear) -> tuple[np.ndarray, np.ndarray]:
        t = _table(view)                                          # [warp, lane, register, rank]
        w, ln, r, _ = t.shape
        flat = np.ravel_multi_index(tuple(np.moveaxis(t.reshape(-1, len(shape)), -1, 0)), shape)
        warp = np.broadcast_to(np.arange(w)[:, None, None], (w, ln, r)).reshape(-1)
        lane = np.broadcast_to(np.arange(ln)[None, :, None], (w, ln, r)).reshape(-1)
        # the first slot of every element (slots run warp-major: reversed so the lowest slot is written last)
        out_w = np.full(int(np.prod(shape)), -1, dtype=np.int64)
        out_l = np.full(int(np.prod(shape)), -1, dtype=np.int64)
        out_w[flat[::-1]] = warp[::-1]
        out_l[flat[::-1]] = lane[::-1]
        return out_w, out_l

    sw, sl = owners(src)
    dw, dl = owners(dst)
    across_warps = sw != dw
    return int(across_warps.sum()), int(((sl != dl) & ~across_warps).sum())
