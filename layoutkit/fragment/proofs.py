"""Proofs about where a fragment's elements live: containment of one fragment in another, and
injectivity (one element per thread register).

These are the bodies of the :class:`~layoutkit.fragment.fragment.Fragment` methods of the same names.

>>> F = Fragment([4, 4], forward_thread_fn=lambda i, j: j, forward_index_fn=lambda i, j: i)
>>> prove_injective(F).verdict, contains(F, F).verdict
(True, True)
"""

from __future__ import annotations

import numpy as np

from ..algebra.proof import Proof
from ..errors import LayoutError
from .fragment import Fragment

MASK_LIMIT = 1 << 26  # cells of the (thread, element) mask before the sort-based test takes over


def contains(fragment: Fragment, other: Fragment) -> Proof:
    """``fragment.contains(other)``: every replica of ``other`` lives where ``fragment`` holds it."""
    claim = "contains"
    if not isinstance(other, Fragment):
        raise LayoutError(f"contains expects a Fragment, found {type(other).__name__}")
    if other.input_shape != fragment.input_shape:
        return Proof(claim, False, "enumerate", {"shape": (fragment.input_shape, other.input_shape)},
                     detail="different input shapes")
    if fragment.is_fully_replicated():
        return Proof(claim, True, "enumerate", detail="the containing fragment is fully replicated")
    big = fragment.thread_table().reshape(fragment._replicate, -1)
    small = other.thread_table().reshape(other.replicate_size, -1)
    if big.shape[0] * small.shape[0] <= 256:
        # few replicas: compare each small replica with every large one, element-wise
        ok = np.zeros(small.shape, dtype=bool)
        for row in big:
            ok |= small == row
    else:
        width = int(max(big.max(), small.max())) + 1
        x = np.arange(big.shape[1], dtype=np.int64)
        if width * big.shape[1] <= MASK_LIMIT:
            # a (thread, element) mask: one scatter and one gather, no sort
            held = np.zeros((width, big.shape[1]), dtype=bool)
            held[big, x] = True
            ok = held[small, x]
        else:
            ok = np.isin(small + x * width, np.unique((big + x * width).ravel()))
    if ok.all():
        return Proof(claim, True, "enumerate", detail=f"{small.size} (element, thread) pairs")
    r, flat = np.argwhere(~ok)[0]
    coord = tuple(int(v) for v in np.unravel_index(int(flat), fragment.input_shape))
    return Proof(claim, False, "enumerate",
                 {"missing": (coord, int(r), int(small[r, flat]), sorted(set(big[:, flat].tolist())))},
                 detail="element (coord) of replica r is on a thread that does not hold it here")


def prove_injective(fragment: Fragment) -> Proof:
    """``fragment.prove_injective()``: at most one element per (thread, register) slot."""
    claim = "injective (one element per thread register)"
    threads = fragment.thread_table().reshape(fragment._replicate, -1)
    index = fragment.index_table().reshape(1, -1)
    keys = threads * fragment.local_size + index
    flat = keys.ravel()
    order = np.argsort(flat, kind="stable")
    dup = np.flatnonzero(flat[order][1:] == flat[order][:-1])
    if dup.size == 0:
        return Proof(claim, True, "enumerate", detail=f"{flat.size} slots")
    a, b = order[dup[0]], order[dup[0] + 1]
    n = threads.shape[1]

    def where(k: int) -> tuple[tuple[int, ...], int]:
        r, x = divmod(int(k), n)
        return tuple(int(v) for v in np.unravel_index(x, fragment.input_shape)), r

    (xa, ra), (xb, rb) = where(a), where(b)
    slot = (int(threads.ravel()[a]), int(index.ravel()[a % n]))
    return Proof(claim, False, "enumerate", {"collision": ((xa, ra), (xb, rb), slot)})
