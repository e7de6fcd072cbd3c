"""Register arrays indexed by the thread: the local-memory traffic TileLang's cost models charge.

A loop reads or writes fragment ``F`` at register ``F.index(indices(p))`` of the loop point ``p``.
Lowered, the loop runs over its own registers ``o`` in every thread ``t``; when ``F``'s register for
one loop register ``o`` differs between the threads running it, the register index depends on
``threadIdx`` and CUDA demotes ``F``'s whole register array to local memory (TileLang's
``FragmentThreadIndexProbe``).  The charge (``CountSpilledBytes``) is
``max(array bytes, 2 x threads x loop registers per thread x element bytes)``: one round trip per
executed access.

>>> import layoutkit as lk
>>> from layoutkit.algebra.layout import placeholder
>>> i, j = placeholder(0, 32), placeholder(1, 32)
>>> rows = lk.Fragment([32, 32], forward_thread_fn=lambda i, j: i, forward_index_fn=lambda i, j: j)
>>> cols = lk.Fragment([32, 32], forward_thread_fn=lambda i, j: j, forward_index_fn=lambda i, j: i)
>>> thread_indexed(rows, rows, (j, i), (32, 32)), thread_indexed(rows, rows, (i, j), (32, 32))
(True, False)
>>> spilled_bytes(rows, cols, (i, j), "float32")
8192
"""

from __future__ import annotations

import math

import numpy as np

from ..algebra.shapes import placeholder
from ..caches import memoized
from ..dtypes import element_bits
from ..fragment.fragment import Fragment
from .access import element_table


def thread_indexed(loop_layout: Fragment, frag: Fragment, indices, loop: tuple[int, ...]) -> bool:
    """Whether ``frag`` read at ``indices`` is, for some register of ``loop_layout``, at different
    registers in the threads running it."""
    if _same_registers(loop_layout, frag, indices, loop):
        return False
    coords = element_table(indices, tuple(loop), frag.input_shape).reshape(-1, len(frag.input_shape))
    flat = np.ravel_multi_index(tuple(coords.T), frag.input_shape)
    # replicas repeat the same (loop register, fragment register) pairs, so one copy decides
    local = np.asarray(loop_layout.index_table()).ravel()
    phys = np.asarray(frag.index_table()).ravel()[flat]
    # one fragment register per loop register: scatter each pair, then every pair must read back its own
    seen = np.empty(int(local.max()) + 1, dtype=phys.dtype)
    seen[local] = phys
    return bool((seen[local] != phys).any())


def _same_registers(loop_layout: Fragment, frag: Fragment, indices, loop) -> bool:
    """The loop reads ``frag`` at its own point through the loop's register map: every register of
    the loop is then the same register of ``frag`` in every thread (no table needed).

    >>> from layoutkit.algebra.layout import placeholder
    >>> f = Fragment([8, 8], forward_thread_fn=lambda i, j: i, forward_index_fn=lambda i, j: j)
    >>> _same_registers(f, f, (placeholder(0, 8), placeholder(1, 8)), (8, 8))
    True
    """
    shape = tuple(loop)
    return (shape == tuple(frag.input_shape) == tuple(loop_layout.input_shape)
            and tuple(indices) == tuple(placeholder(d, n) for d, n in enumerate(shape))
            and loop_layout.forward_index == frag.forward_index)


@memoized(maxsize=4096)
def spilled_bytes(loop_layout: Fragment, frag: Fragment, indices, dtype: str) -> int:
    """Local-memory bytes charged when ``frag`` is register-indexed by the thread in this loop (0
    when it is not)."""
    loop = tuple(loop_layout.input_shape)
    if not thread_indexed(loop_layout, frag, indices, loop):
        return 0
    elem = -(-element_bits(dtype) // 8)
    array = math.prod(frag.output_shape) * elem
    traffic = 2 * loop_layout.thread_extent * loop_layout.local_size * elem
    return max(array, traffic)
