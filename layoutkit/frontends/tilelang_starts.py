"""Shared-memory region starts that move with a variable from outside the op in a dim wider than one
element (``T.tma_copy(KV[...], KV_shared[:, j * 64:(j + 1) * 64])`` in an unrolled loop over ``j``).

A shared buffer has one layout for the whole buffer, so where the region sits never changes the
buffer's layout; what can depend on the start is the copy's vector width, which TileLang 0.1.15 takes
from the divisibility of the index expressions.  Such a start is therefore read as one representative
value of the same alignment: TVM's modular set of the start, ``base + coeff * k``, has every value a
multiple of ``g = gcd(coeff, base)`` and some are no finer aligned, so ``g`` reads in their place
(``j * 64`` reads as 64, ``j * 64 + 8`` as 8).  A representative the region cannot start at (past
``n - extent``) is no reading at all (None), and the caller refuses the start by name.

>>> representative(0, 64, 256, 64)
64
>>> representative(8, 64, 256, 64)
8
>>> representative(0, 256, 256, 64) is None
True
"""

from __future__ import annotations

from math import gcd

__all__ = ["moving_shared_start", "representative"]


def representative(base: int, coeff: int, n: int, extent: int) -> int | None:
    """``gcd(coeff, base)``, the alignment of the starts ``base + coeff * k``, when a region of ``extent`` fits
    there in a dim of ``n``; else None (and None for ``coeff`` <= 0, a set of one value)."""
    if coeff <= 0:
        return None
    g = gcd(coeff, base % coeff) if base % coeff else coeff
    return g if g <= n - extent else None


def moving_shared_start(x, n: int, extent: int) -> int | None:
    """``x`` (a TIR start over variables from outside the op) read as :func:`representative` of its
    modular set; None when TVM finds no period (a start that is not a linear form of integers)."""
    from tilelang import tvm

    ms = tvm.arith.Analyzer().modular_set(x)
    coeff, base = int(ms.coeff), int(ms.base)
    if coeff == 0:  # a constant: the caller reads those itself
        return None
    return representative(base, coeff, n, extent)
