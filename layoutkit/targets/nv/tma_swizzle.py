"""Shared-memory layouts of tiled, TMA-swizzled buffers (``docs/mosaic_gpu.md#shared-memory-transforms``).

A buffer ``[..., R, C]`` of ``b``-bit elements tiled by ``tile`` (its trailing dims) is stored tile after tile,
row-major over the tiles and row-major inside each; then the tensor-memory-accelerator swizzle of ``S`` bytes
(32, 64 or 128; 16 is none) permutes the 16-byte chunks of every ``S``-byte row: chunk ``c`` of the flat
buffer moves to ``c ^ ((c // 8) % (S / 16))`` (the byte-address bits 4.. xor bits 7.., as ``cp.async.bulk.tensor``
and ``wgmma`` descriptors read them).

Law: with ``tile = (8, S * 8 / b)`` on a ``[8k, S * 8 / b]`` buffer this is
:func:`~layoutkit.targets.nv.swizzle.make_bank_swizzled_layout` of granularity ``S``, flattened.

>>> L = make_tma_swizzled_layout((16, 64), (8, 64), 128, "float16")
>>> print(L)
Layout((16, 64) -> (1024,), transform: (_i, _j) -> ((_i * 8 + _j // 8 ^ _i % 8) * 8 + _j % 8,))
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...algebra.layout import Layout
from ...algebra.nodes import Const, Expr, add, scale
from ...algebra.shapes import check_shape, placeholder
from ...dtypes import canonical_dtype, element_bits
from ...errors import ShapeError

TMA_SWIZZLES = (16, 32, 64, 128)
"""Swizzle widths in bytes (16: no swizzle)."""


def make_tma_swizzled_layout(shape: Sequence[int], tile: Sequence[int] | None, swizzle: int,
                             dtype: object) -> Layout:
    """The element offset of every coordinate of ``shape`` tiled by ``tile`` (``None`` or ``()``: untiled,
    row-major) and swizzled by ``swizzle`` bytes (see the module docstring)."""
    dims = check_shape(shape, "TMA-swizzled buffer shape")
    bits = element_bits(canonical_dtype(dtype))
    if swizzle not in TMA_SWIZZLES:
        raise ShapeError(f"a TMA swizzle is one of {TMA_SWIZZLES} bytes; found {swizzle}")
    tile_t = tuple(int(t) for t in (tile or ()))
    if len(tile_t) > len(dims) or any(d % t for d, t in zip(dims[len(dims) - len(tile_t):], tile_t)):
        raise ShapeError(f"tile {tile_t} does not divide the trailing dims of shape {dims}")
    xs = [placeholder(d, e) for d, e in enumerate(dims)]
    lead = len(dims) - len(tile_t)
    outer = [xs[d] for d in range(lead)] + [xs[lead + k] // t for k, t in enumerate(tile_t)]
    outer_sizes = list(dims[:lead]) + [dims[lead + k] // t for k, t in enumerate(tile_t)]
    inner = [xs[lead + k] % t for k, t in enumerate(tile_t)]
    flat: Expr = Const(0)
    for e, s in zip(outer, outer_sizes):
        flat = add(scale(flat, s), e)
    flat = scale(flat, math.prod(tile_t))
    inner_flat: Expr = Const(0)
    for e, t in zip(inner, tile_t):
        inner_flat = add(scale(inner_flat, t), e)
    flat = add(flat, inner_flat)
    if swizzle == 16:
        return Layout.from_exprs(dims, (flat,))
    if 128 % bits:
        raise ShapeError(f"a 16-byte chunk must hold whole {bits}-bit elements to be swizzled")
    vec = 128 // bits
    period = swizzle // 16
    row_elems = swizzle * 8 // bits
    if tile_t and (tile_t[-1] * bits) % (swizzle * 8):
        raise ShapeError(f"a {swizzle}-byte swizzle needs a minor tile dim of a multiple of {row_elems} {bits}-bit "
                         f"elements; found tile {tile_t}")
    chunk = flat // vec
    swizzled = chunk ^ (chunk // 8 % period)
    return Layout.from_exprs(dims, (add(scale(swizzled, vec), flat % vec),))
