"""What every fragment the solver returns (or an annotation puts in) must satisfy: it lays out the whole
buffer, every replica of every element lives on a thread of the block at a register of its thread, and no
(thread, register) slot holds two elements.  The checks read the fragment's cached tables once (vectorised:
one sort of the slot keys), so they cost about as much as tabulating the layout.

>>> from layoutkit.fragment.fragment import Fragment
>>> ok = Fragment([4, 8], forward_thread_fn=lambda i, j: j, forward_index_fn=lambda i, j: i)
>>> fragment_violation(ok, (4, 8), 8) is None
True
>>> print(fragment_violation(ok, (4, 8), 4))
reaches thread 7, outside the 4 threads of the block (element (0, 4), replica 0 is on thread 4)
>>> bad = Fragment([4], forward_thread_fn=lambda i: i % 2, forward_index_fn=lambda i: 0)
>>> print(fragment_violation(bad, (4,), 32))
puts two elements on one thread register: (0,) and (2,) are both in thread 0, register 0
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..algebra.layout import Layout
from ..errors import LayoutError
from ..fragment.fragment import Fragment
from ..scopes import FRAGMENT


class UnsoundLayoutError(LayoutError):
    """Internal: the solver was about to return a layout that does not place a buffer's elements one per
    (thread, register) slot of the block.  A bug in a rule, never an answer; ``buffer`` names the buffer."""

    def __init__(self, message: str, buffer: str):
        super().__init__(message)
        self.buffer = buffer


def fragment_violation(frag: Fragment, shape: tuple[int, ...], threads: int) -> str | None:
    """Why ``frag`` cannot be the layout of a ``shape`` register buffer on ``threads`` threads (a clause
    whose subject is the fragment), or None."""
    if tuple(frag.input_shape) != tuple(shape):
        return f"lays out the shape {list(frag.input_shape)}, not the buffer's {list(shape)}"
    t = frag.thread_table().reshape(frag.replicate_size, -1)
    lo, hi = int(t.min()), int(t.max())
    if lo < 0 or hi >= threads:
        r, x = np.argwhere((t < 0) | (t >= threads))[0]
        return (f"reaches thread {hi if hi >= threads else lo}, outside the {threads} threads of the block "
                f"(element {_coord(frag, int(x))}, replica {int(r)} is on thread {int(t[r, x])})")
    index = frag.index_table().reshape(-1)
    if index.size and (int(index.min()) < 0 or int(index.max()) >= frag.local_size):
        x = int(np.flatnonzero((index < 0) | (index >= frag.local_size))[0])
        return (f"puts element {_coord(frag, x)} at register {int(index[x])}, outside the {frag.local_size} "
                f"registers of a thread")
    keys = (t * frag.local_size + index[None, :]).reshape(-1)
    order = np.argsort(keys, kind="stable")
    dup = np.flatnonzero(keys[order][1:] == keys[order][:-1])
    if dup.size == 0:
        return None
    n = index.size
    a, b = int(order[dup[0]]), int(order[dup[0] + 1])
    thread, reg = divmod(int(keys[a]), frag.local_size)
    if a % n == b % n:
        return (f"puts two replicas ({a // n} and {b // n}) of element {_coord(frag, a % n)} on thread {thread}, "
                f"register {reg}")
    return (f"puts two elements on one thread register: {_coord(frag, a % n)} and {_coord(frag, b % n)} are both "
            f"in thread {thread}, register {reg}")


def _coord(frag: Fragment, flat: int) -> tuple[int, ...]:
    return tuple(int(v) for v in np.unravel_index(flat, frag.input_shape))


def check_solved(program, layouts: Mapping[str, Layout], threads: int) -> None:
    """Raise :class:`UnsoundLayoutError` for the first register buffer whose solved layout is not a
    :class:`Fragment` placing its elements one per slot (see :func:`fragment_violation`)."""
    for name, lay in layouts.items():
        buf = program.buffers.get(name)
        if buf is None or buf.scope != FRAGMENT:
            continue
        if not isinstance(lay, Fragment):
            raise UnsoundLayoutError(f"inference gave the register fragment {name} a plain {lay.describe()}; "
                                     f"expected a Fragment", name)
        why = fragment_violation(lay, program.shape_of(name), threads)
        if why is not None:
            raise UnsoundLayoutError(f"inference gave {name} the unsound layout {lay.describe()}, which {why}", name)
