"""The vector width of a ``parallel`` loop, after TileLang's ``VectorizePlanner`` (contiguity analysis).

Every access's element offset is evaluated over the whole loop domain: ``sum(index_k * stride_k)``
(row-major strides of the buffer), or, for a buffer that already has a layout, its physical offset
(the row-major offset over the layout's output, a fragment's register index), as TileLang transforms
indices through the layout map.  Along the innermost loop axis, an access

* is *independent* when its offset does not change along the axis: a load allows any width, a store
  forces scalar code (it would become a broadcast store);
* allows width ``w`` when ``w`` divides the inner extent and every group of ``w`` consecutive points
  either reads one address (a broadcast) or ``w`` consecutive addresses starting at a multiple of
  ``w``; the search starts at ``gcd(inner extent, 128 / element bits)`` and halves.

TileLang proves these facts symbolically; every extent here is static, so they are checked exactly.
Fragment and per-thread accesses are register traffic: when the loop also touches shared or global
memory they only cap the width when they cannot follow it.  The result divides
``gcd(128, inner extent)``.

>>> from layoutkit.algebra.layout import placeholder
>>> i, j = placeholder(0, 64), placeholder(1, 64)
>>> a = VectorAccess((i, j), (64, 64), 16, True, False)
>>> loop_vector_width((64, 64), (a,))
8
>>> loop_vector_width((64, 64), (a, VectorAccess((i, j), (64, 64), 32, True, True)))
4
>>> loop_vector_width((64, 64), (a, VectorAccess((j, i), (64, 64), 16, True, True)))
1
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..algebra.evaluate import evaluate_columns
from ..algebra.layout import Layout, placeholder
from ..algebra.nodes import Expr

MAX_VECTOR_BITS = 128
"""Widest vector access in bits (TileLang's default ``MaxVectorLoadBits``)."""


@dataclass(frozen=True)
class VectorAccess:
    """One access of a loop: ``indices`` over the loop vars, the buffer ``shape`` (as inference sees
    it), element ``bits``, ``local`` (fragment or per-thread buffer), ``is_write`` and the buffer's
    ``layout`` when it has one (offsets are then physical)."""

    indices: tuple[Expr, ...]
    shape: tuple[int, ...]
    bits: int
    local: bool
    is_write: bool
    layout: Layout | None = None


def _offsets(loop: tuple[int, ...], acc: VectorAccess) -> np.ndarray:
    """Element offset of every loop point, shaped ``[outer points, inner extent]``."""
    variables = tuple(placeholder(d, n) for d, n in enumerate(loop))
    cols = list(np.indices(loop).reshape(len(loop), -1))
    coords = evaluate_columns(tuple(acc.indices), variables, cols).T
    if len(coords) < len(acc.shape):   # a pipeline stage dim the access does not name: stage 0
        coords = np.concatenate([np.zeros((len(acc.shape) - len(coords), coords.shape[1]), np.int64), coords])
    if acc.layout is not None and tuple(acc.layout.input_shape) == tuple(acc.shape):
        flat = np.ravel_multi_index(tuple(coords), acc.shape, mode="clip")
        off = acc.layout.linear_table().ravel()[flat]
    else:
        strides = [math.prod(acc.shape[d + 1:]) for d in range(len(acc.shape))]
        off = sum(c * s for c, s in zip(coords, strides))
    return np.asarray(off, dtype=np.int64).reshape(-1, loop[-1])


def _invariant(off: np.ndarray, width: int) -> bool:
    """Every point reads the address of the first point of its group of ``width`` (floor groups)."""
    n = off.shape[1]
    starts = (np.arange(n) // width) * width
    return bool((off == off[:, starts]).all())


def _independent(off: np.ndarray) -> bool:
    return bool((off == off[:, :1]).all())


def _can_vectorize(off: np.ndarray, width: int) -> bool:
    """``IndicesCanVectorize`` (broadcasts allowed): a divisible extent and, per group, one address
    or ``width`` consecutive aligned addresses."""
    if width == 1:
        return True
    if off.shape[1] % width:
        return False
    if _invariant(off, width):
        return True
    groups = off.reshape(off.shape[0], -1, width)
    base = groups[..., :1]
    return bool((base % width == 0).all() and (groups == base + np.arange(width)).all())


def _width(acc: VectorAccess, off: np.ndarray, base: int) -> int | None:
    """The width one access allows (``None``: it forces scalar code, a store to one address)."""
    lower = math.gcd(base, max(1, MAX_VECTOR_BITS // acc.bits))
    width, invariant = lower, False
    trial = base
    while trial >= max(lower, 1):
        if _invariant(off, trial):
            width, invariant = trial, True
            break
        trial //= 2
    independent = _independent(off)
    if acc.is_write and (invariant or independent):
        return None
    if independent:
        return width
    while width > 1 and not _can_vectorize(off, width):
        width //= 2
    return width


@lru_cache(maxsize=4096)
def loop_vector_width(loop: tuple[int, ...], accesses: tuple[VectorAccess, ...]) -> int:
    """The widest vector every access of the loop allows (1: scalar).  See the module doc."""
    base = math.gcd(MAX_VECTOR_BITS, loop[-1])
    memory: list[int] = []
    deferred: list[tuple[int, np.ndarray]] = []
    for acc in accesses:
        off = _offsets(loop, acc)
        width = _width(acc, off, base)
        if width is None:
            return 1
        broadcast = not acc.is_write and _invariant(off, MAX_VECTOR_BITS)
        if acc.local or broadcast:
            deferred.append((width, off))
        else:
            memory.append(width)
    if memory:
        chosen = math.gcd(MAX_VECTOR_BITS, *memory)
        for width, off in deferred:
            if chosen > width and not _can_vectorize(off, chosen):
                chosen = math.gcd(chosen, width)
    else:
        chosen = math.gcd(MAX_VECTOR_BITS, *(w for w, _ in deferred))
    return math.gcd(base, chosen)
