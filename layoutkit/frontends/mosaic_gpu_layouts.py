"""Mosaic GPU's register layouts and shared-memory transforms as layoutkit layouts, both ways
(``docs/mosaic_gpu.md#conversions``).

Mosaic GPU (JAX's Pallas on NVIDIA GPUs) is imported inside each function: importing this module needs
no jax.  A ``TiledLayout`` is a :class:`~layoutkit.fragment.tiled.TiledRegisterLayout` (its
``Replicated`` digits are :class:`~layoutkit.fragment.tiled.Replica`); ``WGStridedFragLayout`` is
:func:`~layoutkit.fragment.tiled.strided_fragment`, ``WGSplatFragLayout`` is
:func:`~layoutkit.fragment.tiled.splat_fragment`, all over the 128 threads of a warpgroup.

Law: ``to_fragment(from_fragment(f)).is_equal(f)`` for every fragment ``from_fragment`` accepts, and
``from_fragment(to_fragment(l, shape))`` is ``l`` up to the choice of tiling (same elements in the
same thread and register).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..algebra.layout import Layout
from ..algebra.nodes import Const
from ..caches import memoized
from ..errors import LayoutError, UnsupportedError
from ..fragment.fragment import Fragment
from ..fragment.tiled import (
    Replica,
    TiledRegisterLayout,
    splat_fragment,
    strided_fragment,
    tiled_fragment,
    tiled_from_fragment,
)
from ..targets.nv.tma_swizzle import make_tma_swizzled_layout

WARPGROUP = 128
"""Threads of a Mosaic GPU warpgroup (the threads every register layout spans)."""


def _fa() -> Any:
    from jax.experimental.mosaic.gpu import fragmented_array

    return fragmented_array


@memoized(maxsize=4096)
def to_spec(layout: Any) -> TiledRegisterLayout:
    """A Mosaic ``TiledLayout`` as layoutkit's tiled register layout (the same tiling and digits).

    >>> to_spec.__name__
    'to_spec'
    """
    fa = _fa()
    if not isinstance(layout, fa.TiledLayout):
        raise UnsupportedError(f"expected a Mosaic GPU TiledLayout; found {type(layout).__name__}: {layout}")

    def digit(d: Any) -> int | Replica:
        return Replica(d.times) if isinstance(d, fa.Replicated) else int(d)

    return TiledRegisterLayout(tuple(tuple(t) for t in layout.tiling.tiles), tuple(map(digit, layout.warp_dims)),
                               tuple(map(digit, layout.lane_dims)), int(layout.vector_dim))


@memoized(maxsize=4096)
def from_spec(spec: TiledRegisterLayout) -> Any:
    """Mosaic's canonical ``TiledLayout`` of ``spec`` (Mosaic's own canonical form: the same function, the
    fewest tiling levels)."""
    fa = _fa()
    if spec.lanes != 32 or spec.warps != 4:
        raise UnsupportedError(f"Mosaic GPU tiled layouts span 4 warps of 32 lanes; found {spec.warps} x {spec.lanes}")

    def digit(d: int | Replica) -> Any:
        return fa.Replicated(d.times) if isinstance(d, Replica) else d

    raw = fa.TiledLayout(fa.Tiling(spec.tiles), tuple(map(digit, spec.warp_dims)), tuple(map(digit, spec.lane_dims)),
                         spec.vector_dim, _check_canonical=False)
    return raw.canonicalize()


def to_fragment(layout: Any, shape: Sequence[int]) -> Fragment:
    """The fragment (128 threads: ``warp * 32 + lane``) of a Mosaic register layout on ``shape``."""
    fa = _fa()
    shape = tuple(int(s) for s in shape)
    if isinstance(layout, fa.WGSplatFragLayout):
        if tuple(layout.shape) != shape:
            raise UnsupportedError(f"a splat layout of shape {tuple(layout.shape)} used on shape {shape}")
        return splat_fragment(shape, WARPGROUP)
    if isinstance(layout, fa.WGStridedFragLayout):
        if tuple(layout.shape) != shape:
            raise UnsupportedError(f"a strided layout of shape {tuple(layout.shape)} used on shape {shape}")
        return strided_fragment(shape, layout.vec_size, WARPGROUP)
    return tiled_fragment(to_spec(layout), shape)


def from_fragment(fragment: Fragment, candidates: Sequence[Any] = ()) -> Any:
    """The Mosaic register layout of ``fragment``: the first of ``candidates`` (Mosaic layouts, e.g. its
    named ones) that places the elements as ``fragment`` does; else a splat when every thread holds the
    one value in register 0, a strided layout when it is one, else a tiled layout (refused with a witness
    when none has the fragment's placement)."""
    fa = _fa()
    shape = fragment.input_shape
    for layout in candidates:
        try:
            if to_fragment(layout, shape).is_equal(fragment):
                return layout
        except (LayoutError, ValueError):  # a candidate that does not tile this shape is no answer
            continue
    if fragment.thread_extent != WARPGROUP:
        raise UnsupportedError(f"Mosaic GPU register layouts span {WARPGROUP} threads; {fragment.describe()} spans "
                               f"{fragment.thread_extent}")
    if fragment.forward_index == (Const(0),) and fragment.replicate_size == WARPGROUP:
        if fragment.is_equal(splat_fragment(shape, WARPGROUP)):
            return fa.WGSplatFragLayout(shape)
    if fragment.replicate_size == 1:
        size = 1
        for s in shape:
            size *= s
        vec = size // WARPGROUP
        while vec >= 1:
            if size % (vec * WARPGROUP) == 0 and fragment.is_equal(strided_fragment(shape, vec, WARPGROUP)):
                return fa.WGStridedFragLayout(shape, vec)
            vec //= 2
    return from_spec(tiled_from_fragment(fragment))


def smem_layout(shape: Sequence[int], transforms: Sequence[Any], dtype: object) -> Layout:
    """The shared-memory layout of a reference of ``shape`` under Mosaic's ``transforms`` (``[]``, ``[tile]`` or
    ``[tile, swizzle]``: a ``TileTransform`` and a ``SwizzlingMode``)."""
    from jax._src.lib import mosaic_gpu_dialect as mgpu
    from jax.experimental.mosaic.gpu import launch_context

    tile: tuple[int, ...] | None = None
    swizzle = 16
    for t in transforms:
        if isinstance(t, launch_context.TileTransform):
            tile = tuple(t.tiling)
        elif isinstance(t, mgpu.SwizzlingMode):
            swizzle = int(t)
        else:
            raise UnsupportedError(f"layoutkit reads tile and swizzle transforms only; found {t}")
    return make_tma_swizzled_layout(shape, tile, swizzle, dtype)


def transforms_from_layout(layout: Layout, dtype: object, tiles: Sequence[tuple[int, ...]] = ()) -> list[Any]:
    """Mosaic's transforms for a row-major shared-memory ``layout``: the first of untiled, then each of ``tiles``
    and the MMA tile ``(8, S * 8 / b)`` with each swizzle ``S``, whose layout equals ``layout``; refused
    (``UnsupportedError``) when none does.  (Transposed references, whose minor dim is the first, are not
    converted.)"""
    from jax._src.lib import mosaic_gpu_dialect as mgpu
    from jax.experimental.mosaic.gpu import launch_context

    from ..dtypes import canonical_dtype, element_bits

    shape = layout.input_shape
    bits = element_bits(canonical_dtype(dtype))
    candidates: list[tuple[tuple[int, ...] | None, int]] = [(None, 16)]
    for sw in (128, 64, 32, 16):
        elems = sw * 8 // bits
        for each in (*tiles, (8, elems)):
            candidates.append((tuple(each), sw))
    for chosen, sw in candidates:
        try:
            ours = make_tma_swizzled_layout(shape, chosen, sw, dtype)
        except LayoutError:
            continue
        if ours.is_equal(layout):
            out: list[Any] = []
            if chosen is not None:
                out.append(launch_context.TileTransform(chosen))
                out.append(mgpu.SwizzlingMode(sw))
            return out
    raise UnsupportedError(f"no Mosaic tile and swizzle transforms give {layout} for {dtype}")
