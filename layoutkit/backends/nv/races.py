"""Barriers in the numpy executor: a shared element read by a thread other than the one that wrote it, with
no ``__syncthreads()`` in between, is a race (:class:`~layoutkit.errors.RaceError`).

The executor runs each statement for every thread before the next, so without this check removing a barrier
changes nothing.  Here every shared element remembers the thread that last wrote it since the last barrier
(a cp.async element from when its wait_group lands); a barrier forgets them all.

>>> import numpy as np
>>> w = SharedWriters({"s": 4}, blocks=1)
>>> w.wrote("s", np.array([0]), np.array([2]), np.array([5]))
>>> w.read("s", np.array([0]), np.array([2]), np.array([5]), "load")  # its own write: fine
>>> w.read("s", np.array([0]), np.array([2]), np.array([6]), "load")
Traceback (most recent call last):
...
layoutkit.errors.RaceError: executor: load reads s[2] of block 0 (thread 6); thread 5 wrote it with no barrier between
>>> w.barrier()
>>> w.read("s", np.array([0]), np.array([2]), np.array([6]), "load")
"""

from __future__ import annotations

import numpy as np

from ...errors import RaceError


class SharedWriters:
    """Per shared buffer (name -> element count) and block: the thread that wrote each element since the
    last barrier, -1 for none."""

    def __init__(self, sizes: dict[str, int], blocks: int):
        self.owner = {name: np.full((blocks, size), -1, np.int32) for name, size in sizes.items()}

    def barrier(self) -> None:
        for a in self.owner.values():
            a.fill(-1)

    def wrote(self, buf: str, block: np.ndarray, index: np.ndarray, thread: np.ndarray) -> None:
        """Threads ``thread`` wrote elements ``index`` of ``buf`` in blocks ``block`` (broadcast together)."""
        self.owner[buf][block, index] = thread

    def read(self, buf: str, block: np.ndarray, index: np.ndarray, thread: np.ndarray, what: str) -> None:
        """Threads ``thread`` read elements ``index`` of ``buf``: a :class:`RaceError` naming the first element
        another thread wrote since the last barrier."""
        block, index, thread = np.broadcast_arrays(block, index, thread)
        w = self.owner[buf][block, index]
        bad = (w >= 0) & (w != thread)
        if np.any(bad):
            i = tuple(np.argwhere(bad)[0])
            raise RaceError(f"executor: {what} reads {buf}[{int(index[i])}] of block {int(block[i])} (thread "
                            f"{int(thread[i])}); thread {int(w[i])} wrote it with no barrier between")
