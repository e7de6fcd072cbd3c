"""Exact enumeration of the accesses of one statement: which thread moves which element in which
register, how wide its vectors are, which 128-byte segments each warp instruction touches.

A loop layout (a :class:`~layoutkit.Fragment` over the loop shape) gives every loop point a thread
(one per replica: every replica issues the access) and a register slot; an operand's index map gives
the element it touches.  Registers are moved ``vector`` at a time: the widest power of two
(at most 16 bytes, dividing the registers per thread) such that every thread's group of ``vector``
consecutive registers holds consecutive, ``vector``-aligned elements.

>>> import layoutkit as lk
>>> from layoutkit.algebra.layout import placeholder
>>> L = lk.Fragment([32, 8], forward_thread_fn=lambda i, j: i, forward_index_fn=lambda i, j: j)
>>> i, j = placeholder(0, 32), placeholder(1, 8)
>>> g = global_traffic(L, (i, j), (32, 8), "float32", warp_size=32)
>>> (g.vector, g.instructions, g.segments, g.issue_bytes, g.bandwidth_bytes)
(4, 2, 16, 1024, 2048)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..algebra.distinct import sorted_distinct
from ..algebra.evaluate import compile_numpy, grid
from ..algebra.layout import Layout
from ..algebra.shapes import placeholder
from ..caches import memoized
from ..dtypes import element_bits
from ..errors import ShapeError
from ..fragment.fragment import Fragment

SEGMENT = 128
MAX_VECTOR_BYTES = 16


def element_table(indices, loop: tuple[int, ...], shape: tuple[int, ...]) -> np.ndarray:
    """Coordinates ``loop + (rank,)`` of the element every loop point touches; a missing leading
    (pipeline stage) dim is taken as 0."""
    loop_vars = tuple(placeholder(d, e) for d, e in enumerate(loop))
    cols = compile_numpy(tuple(indices), loop_vars)(*grid(loop))
    cols = [np.broadcast_to(c, loop) for c in cols]
    if len(cols) < len(shape):
        cols = [np.zeros(loop, dtype=np.int64)] * (len(shape) - len(cols)) + cols
    if len(cols) != len(shape):
        raise ShapeError(f"an index map of rank {len(cols)} does not fit a buffer of shape {shape}")
    coords = np.stack(cols, axis=-1)
    if np.any(coords < 0) or np.any(coords >= np.asarray(shape)):
        raise ShapeError(f"an index map leaves the buffer shape {shape}")
    return coords


@dataclass(frozen=True)
class Slots:
    """Every (thread, register) slot of a loop layout with the flat loop point it holds:
    ``thread``, ``register``, ``point`` (equal-length int64 arrays, replicas included)."""

    thread: np.ndarray
    register: np.ndarray
    point: np.ndarray
    threads: int
    registers: int


def slots(layout: Fragment) -> Slots:
    t = np.asarray(layout.thread_table()).reshape(layout.replicate_size, -1)
    r = np.asarray(layout.index_table()).reshape(-1)
    n = r.size
    return Slots(t.reshape(-1).astype(np.int64), np.tile(r, layout.replicate_size).astype(np.int64),
                 np.tile(np.arange(n, dtype=np.int64), layout.replicate_size), int(t.max()) + 1,
                 int(layout.local_size))


def vector_width(s: Slots, address: np.ndarray, elem_bytes: int) -> int:
    """Widest vector (elements) every thread can use: see the module doc.  ``address``: element
    address of every flat loop point."""
    table = np.full((s.threads, s.registers), -1, dtype=np.int64)
    table[s.thread, s.register] = address[s.point]
    used = table >= 0
    v = max(1, MAX_VECTOR_BYTES // elem_bytes)
    while v > 1:
        if s.registers % v == 0:
            g = table.reshape(s.threads, -1, v)
            u = used.reshape(s.threads, -1, v)
            any_used = u.any(axis=2)
            full = u.all(axis=2) == any_used
            steps = g - g[:, :, :1] == np.arange(v)
            aligned = g[:, :, 0] % v == 0
            if np.all(full) and np.all(steps.all(axis=2) | ~any_used) and np.all(aligned | ~any_used):
                return v
        v //= 2
    return 1


@dataclass(frozen=True)
class GlobalTraffic:
    """Modelled global-memory traffic of one operand: ``instructions`` warp instructions of
    ``vector`` elements per lane, touching ``segments`` 128-byte segments in all.  ``issue_bytes`` =
    instructions x warp lanes x lane bytes; ``bandwidth_bytes`` = segments x 128; the charge is their max."""

    vector: int
    instructions: int
    segments: int
    issue_bytes: int
    bandwidth_bytes: int

    @property
    def bytes(self) -> int:
        return max(self.issue_bytes, self.bandwidth_bytes)


@memoized(maxsize=2048)
def global_traffic(layout: Fragment, indices, shape: tuple[int, ...], dtype: str, warp_size: int) -> GlobalTraffic:
    """Exact segments per warp instruction of a global operand (see the module doc); ``warp_size``: the
    threads that issue one instruction together (the cost model's, which its target sets).  Memoised:
    layouts and expressions are immutable and compare structurally, so free-mode attempts that share
    a loop layout share the figure."""
    loop = layout.input_shape
    eb = max(1, element_bits(dtype) // 8)
    coords = element_table(indices, loop, shape).reshape(-1, len(shape))
    address = np.ravel_multi_index(tuple(coords.T), shape).astype(np.int64)
    s = slots(layout)
    v = vector_width(s, address, eb)
    inst = (s.thread // warp_size) * (-(-s.registers // v)) + s.register // v
    seg = address[s.point] * eb // SEGMENT
    n_inst = sorted_distinct(inst).size
    span = int(seg.max()) + 1
    n_seg = sorted_distinct(inst * span + seg).size
    return GlobalTraffic(v, int(n_inst), int(n_seg), int(n_inst) * warp_size * v * eb, int(n_seg) * SEGMENT)


def shared_access(layout: Fragment, indices, smem: Layout, dtype: str) -> tuple[np.ndarray, int]:
    """The bank-model access array ``[threads, registers, rank]`` (-1 in unused slots) of a shared
    operand, and the vector width (elements) its registers allow in ``smem``."""
    loop = layout.input_shape
    shape = smem.input_shape
    coords = element_table(indices, loop, shape).reshape(-1, len(shape))
    s = slots(layout)
    out = np.full((s.threads, s.registers, len(shape)), -1, dtype=np.int64)
    out[s.thread, s.register] = coords[s.point]
    offsets = np.asarray(smem.linear_table()).reshape(-1)[np.ravel_multi_index(tuple(coords.T), shape)]
    return out, vector_width(s, offsets.astype(np.int64), max(1, element_bits(dtype) // 8))


__all__ = ["GlobalTraffic", "Slots", "element_table", "global_traffic", "shared_access", "slots", "vector_width"]
