"""NV bank swizzles as CuTe swizzles: ``tla.Swizzle`` <-> the 32/64/128B kinds, and a bank-swizzled
buffer as a ``tla.ComposedLayout``, exact both ways.

With ``b`` element bits, ``vec = 128 / b`` elements per 16-byte chunk and ``per = 2 / 4 / 8`` chunks,
one swizzle atom is ``8 x (per*vec)`` elements, row-major; TileLang xors the chunk index with the top
``log2(per)`` bits of the row, which is CuTe's ``Swizzle<log2(per), log2(vec), 3>`` on the atom offset
(the row starts at bit ``log2(per*vec)``, its top bits ``3 - log2(per)`` above that).  A whole
``[R, C]`` buffer is that swizzle over ``((8, R/8), (per*vec, C/(per*vec))) :
((per*vec, 8*per*vec), (1, R*per*vec))`` -- the swizzle touches only the atom's bits.

>>> from layoutkit.targets import nv
>>> print(cute_swizzle("full", "float16"), cute_swizzle("quarter", "int8"))
Sw<3,3,3> Sw<1,4,3>
>>> swizzle_kind(cute_swizzle("half", "float32"), "float32")
'half'
>>> print(cute_swizzled_layout(nv.make_full_bank_swizzled_layout((16, 64), "float16")))
Sw<3,3,3> o 0 o ((8,2),(64,1)):((64,512),(1,1024))
"""

from __future__ import annotations

from ...algebra.layout import Layout
from ...dtypes import element_bits
from ...errors import ShapeError, UnsupportedError
from ...tla.layout import Layout as TlaLayout
from ...tla.swizzle import ComposedLayout, Swizzle
from .swizzle import BANK_SWIZZLES, SWIZZLE_PERIOD, swizzle_info

_LOG2 = {2: 1, 4: 2, 8: 3}


def cute_swizzle(kind: str, dtype: object) -> Swizzle:
    """``Swizzle<log2(per), log2(128/bits), 3>`` of the ``kind`` (``"quarter" | "half" | "full"``) bank
    swizzle of ``dtype`` elements."""
    if kind not in SWIZZLE_PERIOD:
        raise ShapeError(f"cute_swizzle: kind must be one of {list(BANK_SWIZZLES)}; found {kind!r}")
    bits = element_bits(dtype)
    if bits > 128 or 128 % bits:
        raise UnsupportedError(f"cute_swizzle: {bits}-bit elements do not pack a 16-byte chunk")
    return Swizzle(_LOG2[SWIZZLE_PERIOD[kind]], (128 // bits).bit_length() - 1, 3)


def swizzle_kind(sw: Swizzle, dtype: object) -> str | None:
    """The bank swizzle kind ``sw`` (a ``tla.Swizzle``) is for ``dtype`` elements, or None when it is none
    of them; anything but a ``tla.Swizzle`` is refused (a Layout's kind is ``swizzle_info(layout, dtype=...)``).

    >>> import layoutkit as lk
    >>> try:
    ...     swizzle_kind(lk.Layout([8, 8], lambda i, j: i * 8 + j), "float16")
    ... except ShapeError as err:
    ...     print(str(err).split("; ")[-1])
    for a Layout use nv.swizzle_info(layout, dtype=...).kind
    """
    if not isinstance(sw, Swizzle):
        hint = "; for a Layout use nv.swizzle_info(layout, dtype=...).kind" if isinstance(sw, Layout) else ""
        shown = sw.describe() if isinstance(sw, Layout) else repr(sw)[:80]
        raise ShapeError(f"swizzle_kind expects a tla.Swizzle (CuTe's Sw<B,M,S>); found {type(sw).__name__} "
                         f"{shown}{hint}")
    for kind in BANK_SWIZZLES:
        if cute_swizzle(kind, dtype) == sw:
            return kind
    return None


def cute_swizzled_layout(layout: Layout, dtype: object = None) -> ComposedLayout:
    """A 2-D bank-swizzled buffer as ``Swizzle o 0 o tla.Layout`` whose offset over ``(i, j)`` is the
    buffer's linearized offset (``layout.linearized()``)."""
    info = swizzle_info(layout, dtype=dtype)
    if info is None or not info.is_bank_swizzle:
        raise UnsupportedError(f"cute_swizzled_layout: {layout} is not a 32/64/128B bank swizzle (pass dtype for "
                               "an untagged layout)")
    if len(info.buffer_shape) != 2:
        raise UnsupportedError(f"cute_swizzled_layout: expected a 2-D buffer; found {info.buffer_shape}")
    rows, cols = info.buffer_shape
    width = SWIZZLE_PERIOD[info.kind] * (128 // info.element_bits)
    if rows % 8:
        raise UnsupportedError(f"cute_swizzled_layout: {rows} rows do not fill 8-row atoms")
    inner = TlaLayout(((8, rows // 8), (width, cols // width)), ((width, 8 * width), (1, rows * width)))
    return ComposedLayout(cute_swizzle(info.kind, info.dtype), 0, inner)


__all__ = ["cute_swizzle", "swizzle_kind", "cute_swizzled_layout"]
