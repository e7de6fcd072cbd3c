"""NVIDIA shared-memory layouts: 32B/64B/128B xor swizzles, padded, linear, fp64 and Volta layouts.

Reproduces TileLang 0.1.15 ``gemm_layouts.cc`` table for table
(``docs/reference.md#nvidia-shared-memory-swizzles``).  A buffer is ``[..., R, C]``; leading dims pass
through as leading outputs.  With ``b`` the element bits,
``vec = 128 / b`` elements make one 16-byte chunk and a bank swizzle of ``per = 2 / 4 / 8`` chunks
(32 / 64 / 128 bytes) maps ``(i, j)`` to ``[tc, ts, v + ((c ^ key) + s*per) * vec]`` with
``ts, s = i // 8, i % 8``, ``tc, c = (j // vec) // per, (j // vec) % per``, ``v = j % vec`` and
``key = s // (8 / per)``.  Expressions use a real xor, so every swizzle is F2-linear and inverts in
closed form (TileLang writes xor as ``(a + b) % 2`` and cannot invert it).

>>> from layoutkit.targets import nv
>>> L = nv.make_full_bank_swizzled_layout((64, 64), "float16")
>>> print(L)
Layout((64, 64) -> (1, 8, 512), transform: (_i, _j) -> (0, _i // 8, _i % 8 * 64 + (_j // 8 ^ _i % 8) * 8 + _j % 8))
>>> L.swizzle.kind, L.swizzle.granularity
('full', 128)
>>> L.inverse().map_forward_index(L.map_forward_index([9, 17]))
(9, 17)
>>> print(nv.make_swizzled_layout((32, 128), "int8", k_major=False))   # int8 K x N: padded
Layout((32, 128) -> (4592,), transform: (_i, _j) -> (_i * 144 + _j,))
>>> merged = nv.merge_swizzles(L, nv.make_half_bank_swizzled_layout((64, 64), "float16"))
>>> merged.swizzle.kind
'half'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from ...algebra.layout import Layout
from ...algebra.nodes import Expr, bitxor, make_split, make_sum
from ...algebra.shapes import check_shape, placeholder
from ...dtypes import canonical_dtype, element_bits
from ...errors import LayoutError, ShapeError, UnsupportedError

BANK_SWIZZLES = ("quarter", "half", "full")
"""Bank swizzle kinds from the smallest to the largest granularity (32B, 64B, 128B)."""

SWIZZLE_PERIOD = {"quarter": 2, "half": 4, "full": 8}
_GRANULARITY = {"quarter": 32, "half": 64, "full": 128}
_BY_GRANULARITY = {32: "quarter", 64: "half", 128: "full"}


@dataclass(frozen=True)
class SwizzleInfo:
    """What a shared-memory layout constructor built.

    ``kind``: ``"quarter" | "half" | "full"`` (32/64/128-byte xor swizzles), ``"padded"``,
    ``"linear"``, ``"fp64_k_inner"``, ``"fp64_k_outer"``, ``"volta_crosswise"``,
    ``"volta_congruous_a"``, ``"volta_congruous_b"``.
    """

    kind: str
    buffer_shape: tuple[int, ...]
    dtype: str
    element_bits: int
    role: ClassVar[str] = "swizzle"  # read by Layout.swizzle

    @property
    def granularity(self) -> int:
        """Swizzle granularity in bytes (32, 64, 128) for bank swizzles, else 0."""
        return _GRANULARITY.get(self.kind, 0)

    @property
    def is_bank_swizzle(self) -> bool:
        return self.kind in _GRANULARITY


SwizzledLayout = Layout
"""What the constructors below return: a :class:`~layoutkit.Layout` whose ``tag`` (also ``.swizzle``) is
the :class:`SwizzleInfo` that built it.  Kept as a name for annotations; it is the Layout class itself,
so equality and hashing are the Layout's (the tag takes no part)."""


def _rebuild(shape: Sequence[int], exprs: Sequence[Expr], info: SwizzleInfo) -> Layout:
    return Layout.from_exprs(shape, exprs).with_tag(info)


# ---- helpers -----------------------------------------------------------------------------------


def _buffer(shape: object, dtype: object, what: str) -> tuple[tuple[int, ...], str, int]:
    dims = check_shape(shape, f"{what} buffer shape")
    if len(dims) < 2:
        raise ShapeError(f"{what} expects a buffer of rank >= 2 ([..., rows, cols]); found shape {dims}")
    name = canonical_dtype(dtype)
    bits = element_bits(name)
    if 128 % bits:
        raise ShapeError(f"{what}: a 16-byte vector must hold whole {name} elements; {bits} bits does not divide 128")
    return dims, name, bits


def _build(shape: tuple[int, ...], fn2d: Callable, kind: str, dtype: str, bits: int) -> SwizzledLayout:
    """Apply a 2-D rule to the last two dims; leading dims pass through as leading outputs."""
    variables = [placeholder(d, e) for d, e in enumerate(shape)]
    *lead, i, j = variables
    exprs: list[Expr] = list(lead) + list(fn2d(i, j))
    return _rebuild(shape, tuple(exprs), SwizzleInfo(kind, shape, dtype, bits))


def _describe(what: str, shape: tuple[int, ...], dtype: str) -> str:
    return f"{what}({shape}, {dtype})"


def _bank_swizzle(kind: str, shape: tuple[int, ...], dtype: str, bits: int, what: str) -> SwizzledLayout:
    per = SWIZZLE_PERIOD[kind]
    vec = 128 // bits
    rows, cols = shape[-2], shape[-1]
    if not (rows == 4 or rows % 8 == 0):
        raise ShapeError(
            f"{_describe(what, shape, dtype)}: a {_GRANULARITY[kind]}B swizzle expects rows == 4 or a multiple of 8 "
            f"(the 8-row xor period); found rows = {rows} (witness: rows % 8 = {rows % 8})"
        )
    if cols % (vec * per):
        raise ShapeError(
            f"{_describe(what, shape, dtype)}: a {_GRANULARITY[kind]}B swizzle expects the last dim to be a multiple "
            f"of {vec * per} ({per} chunks of {vec} x {bits}-bit elements); found {cols} "
            f"(witness: {cols} % {vec * per} = {cols % (vec * per)})"
        )
    shift = 8 // per

    def fn(i, j):
        # tc, ts, v + ((c ^ (s // shift)) + s * per) * vec with s = i % 8, chunk = j // vec,
        # tc = chunk // per, c = chunk % per, v = j % vec: each a digit of i or j, summed once
        # (make_sum) rather than operator by operator (the same canonical expression)
        key = bitxor(make_split(j, vec, vec * per), make_split(i, shift, 8))
        terms: dict[Expr, int] = {}
        for atom, coeff in ((make_split(j, 1, vec), 1), (key, vec), (make_split(i, 1, 8), per * vec)):
            terms[atom] = terms.get(atom, 0) + coeff  # equal atoms (a degenerate key) add up
        offset = make_sum(terms)
        return make_split(j, vec * per, None), make_split(i, 8, None), offset

    return _build(shape, fn, kind, dtype, bits)


def _padded(shape, dtype, bits, pad_bits: int | None = None) -> SwizzledLayout:
    """``[i * P + j]`` with ``P = C + 128/b`` when a row is a multiple of 256 bits, else ``P = C``."""
    b = bits if pad_bits is None else pad_bits
    cols = shape[-1]
    padded = cols + (128 // b if (b * cols) % 256 == 0 else 0)
    return _build(shape, lambda i, j: (i * padded + j,), "padded", dtype, bits)


def _linear_2d(shape, dtype, bits) -> SwizzledLayout:
    cols = shape[-1]
    return _build(shape, lambda i, j: (i * cols + j,), "linear", dtype, bits)


def _fp64(shape, dtype, bits, k_inner: bool) -> SwizzledLayout:
    def fn(i, j):
        tc, ts, c, s = j // 16, i // 4, j % 16, i % 4
        swizzled = (c // 4) * 4 + ((c % 4) ^ s) if k_inner else c % 4 + ((c // 4) ^ s) * 4
        return tc, ts, swizzled + s * 16

    return _build(shape, fn, "fp64_k_inner" if k_inner else "fp64_k_outer", dtype, bits)


# ---- bank swizzles -----------------------------------------------------------------------------


def make_quarter_bank_swizzled_layout(shape: Sequence[int], dtype: object) -> SwizzledLayout:
    """32-byte swizzle (2 chunks per swizzle row, key ``(i % 8) // 4``).

    >>> print(make_quarter_bank_swizzled_layout((16, 16), "float16"))
    Layout((16, 16) -> (1, 2, 128), transform: (_i, _j) -> (0, _i // 8, \
_i % 8 * 16 + (_j // 8 ^ _i % 8 // 4) * 8 + _j % 8))
    """
    dims, name, bits = _buffer(shape, dtype, "make_quarter_bank_swizzled_layout")
    return _bank_swizzle("quarter", dims, name, bits, "make_quarter_bank_swizzled_layout")


def make_half_bank_swizzled_layout(shape: Sequence[int], dtype: object) -> SwizzledLayout:
    """64-byte swizzle (4 chunks per swizzle row, key ``(i % 8) // 2``)."""
    dims, name, bits = _buffer(shape, dtype, "make_half_bank_swizzled_layout")
    return _bank_swizzle("half", dims, name, bits, "make_half_bank_swizzled_layout")


def make_full_bank_swizzled_layout(shape: Sequence[int], dtype: object) -> SwizzledLayout:
    """128-byte swizzle (8 chunks per swizzle row, key ``i % 8``)."""
    dims, name, bits = _buffer(shape, dtype, "make_full_bank_swizzled_layout")
    return _bank_swizzle("full", dims, name, bits, "make_full_bank_swizzled_layout")


def make_bank_swizzled_layout(shape: Sequence[int], dtype: object, granularity: int | str) -> SwizzledLayout:
    """The bank swizzle of ``granularity`` bytes (32, 64, 128) or kind (``"quarter"`` ...)."""
    kind = granularity if isinstance(granularity, str) else _BY_GRANULARITY.get(int(granularity))
    if kind not in SWIZZLE_PERIOD:
        raise ShapeError(f"swizzle granularity must be 32, 64, 128 or quarter/half/full; found {granularity!r}")
    return _CONSTRUCTORS[kind](shape, dtype)


def make_linear_layout(shape: Sequence[int], dtype: object = "float16") -> SwizzledLayout:
    """One output, row-major over all dims (TileLang's ``make_linear_layout``).

    >>> print(make_linear_layout((2, 8, 16), "float16"))
    Layout((2, 8, 16) -> (256,), transform: (_i, _j, _k) -> (_i * 128 + _j * 16 + _k,))
    """
    dims = check_shape(shape, "make_linear_layout shape")
    name = canonical_dtype(dtype)
    variables = [placeholder(d, e) for d, e in enumerate(dims)]
    flat: Expr | int = 0
    for v, stride in zip(variables, (math.prod(dims[d + 1 :]) for d in range(len(dims)))):
        flat = flat + v * stride
    return _rebuild(dims, (flat,), SwizzleInfo("linear", dims, name, element_bits(name)))


def make_padded_layout(shape: Sequence[int], dtype: object) -> SwizzledLayout:
    """TileLang's padded operand layout ``[i*P + j]``: ``P = C + 128/b`` when a row is a multiple of
    256 bits (so consecutive rows start 16 bytes apart in the bank cycle), else ``P = C``.

    >>> print(make_padded_layout((8, 64), "float16"))
    Layout((8, 64) -> (568,), transform: (_i, _j) -> (_i * 72 + _j,))
    """
    dims, name, bits = _buffer(shape, dtype, "make_padded_layout")
    return _padded(dims, name, bits)


# ---- dispatch ----------------------------------------------------------------------------------


def make_swizzled_layout(
    shape: Sequence[int], dtype: object, k_major: bool = True, allow_pad: bool = True
) -> SwizzledLayout:
    """TileLang's ``make_swizzled_layout``: the GEMM operand layout for a shared buffer.

    ``allow_pad`` (pre-Hopper): fp64 -> fp64 layouts when ``C % 16 == 0`` else padded; int8/fp8 with
    ``not k_major`` -> padded; otherwise the largest of 128B/64B/32B that divides ``C``, else padded.
    ``not allow_pad`` (Hopper, TMA): see :func:`make_wgmma_swizzled_layout`.

    >>> print(make_swizzled_layout((64, 24), "float16"))   # no swizzle fits 24 columns: padded
    Layout((64, 24) -> (1536,), transform: (_i, _j) -> (_i * 24 + _j,))
    """
    what = "make_swizzled_layout"
    dims, name, bits = _buffer(shape, dtype, what)
    if not allow_pad:
        return _hopper(dims, name, bits, dims[-1], bool(k_major), what, fp64_ok=True)
    cols = dims[-1]
    if bits == 64:
        if cols % 16 == 0:
            return _fp64(dims, name, bits, k_inner=bool(k_major))
        return _padded(dims, name, bits)
    if not k_major and bits == 8:
        return _padded(dims, name, bits)
    vec = 128 // bits
    for kind in ("full", "half", "quarter"):
        if cols % (vec * SWIZZLE_PERIOD[kind]) == 0:
            return _bank_swizzle(kind, dims, name, bits, what)
    return _padded(dims, name, bits)


def _hopper(dims, name, bits, continuity: int, k_inner: bool, what: str, fp64_ok: bool) -> SwizzledLayout:
    rows, cols = dims[-2], dims[-1]
    if bits == 64:
        if not fp64_ok:
            raise UnsupportedError(
                f"{_describe(what, dims, name)}: TCGEN05 expects 8/16/32-bit operands; "
                "found float64 (unsupported on sm_100)"
            )
        if continuity % 16 == 0:
            return _fp64(dims, name, bits, k_inner=k_inner)
        if rows % 8:
            return _linear_2d(dims, name, bits)
        return _bank_swizzle("quarter", dims, name, bits, what)
    vec = 128 // bits
    if rows % 8 == 0:
        for kind in ("full", "half", "quarter"):
            if cols % (vec * SWIZZLE_PERIOD[kind]) == 0:
                return _bank_swizzle(kind, dims, name, bits, what)
    if cols % vec == 0:
        return _linear_2d(dims, name, bits)
    raise ShapeError(
        f"{_describe(what, dims, name)}: a Hopper/TMA layout expects the last dim to be a multiple of {vec} "
        f"(one 16-byte vector of {bits}-bit elements) when no swizzle applies; found {cols} "
        f"(witness: {cols} % {vec} = {cols % vec}, rows = {rows})"
    )


def make_wgmma_swizzled_layout(
    shape: Sequence[int], dtype: object, continuity: int | None = None, k_major: bool = True
) -> SwizzledLayout:
    """The Hopper rule (``make_swizzled_layout(..., allow_pad=False)``): fp64 -> fp64 layouts when
    ``continuity % 16 == 0``, else linear if ``R % 8 != 0``, else 32B; other types: if ``R % 8 == 0``
    the largest of 128B/64B/32B dividing ``C``; otherwise linear ``[i*C + j]`` when ``C % vec == 0``,
    else an error.  ``continuity`` defaults to ``C``.

    >>> print(make_wgmma_swizzled_layout((4, 64), "float16"))
    Layout((4, 64) -> (256,), transform: (_i, _j) -> (_i * 64 + _j,))
    """
    what = "make_wgmma_swizzled_layout"
    dims, name, bits = _buffer(shape, dtype, what)
    cont = dims[-1] if continuity is None or continuity < 0 else int(continuity)
    return _hopper(dims, name, bits, cont, bool(k_major), what, fp64_ok=True)


def make_tcgen05mma_swizzled_layout(
    shape: Sequence[int], dtype: object, continuity: int | None = None, k_major: bool = True
) -> SwizzledLayout:
    """The sm_100 (TCGEN05) rule: the Hopper rule, with float64 an error."""
    what = "make_tcgen05mma_swizzled_layout"
    dims, name, bits = _buffer(shape, dtype, what)
    cont = dims[-1] if continuity is None or continuity < 0 else int(continuity)
    return _hopper(dims, name, bits, cont, bool(k_major), what, fp64_ok=False)


def make_volta_swizzled_layout(
    shape: Sequence[int], dtype: object = "float16", is_a: bool = True, k_major: bool = True
) -> SwizzledLayout:
    """sm_70 operand layouts (one output, dtype-independent: Volta MMA is fp16 only).

    ``k_major`` and ``R % 32 == 0 == C % 32``: crosswise; else ``C % 64 == 0`` and ``R % 4 == 0``:
    the A or B congruous layout; otherwise padded as for 16-bit elements.

    >>> print(make_volta_swizzled_layout((4, 64), "float16", is_a=False, k_major=False))
    Layout((4, 64) -> (256,), transform: (_i, _j) -> (_j % 32 // 8 * 64 + _j // 32 * 32 + \
(_i ^ _j % 32 // 8) * 8 + _j % 8,))
    """
    dims, name, bits = _buffer(shape, dtype, "make_volta_swizzled_layout")
    rows, cols = dims[-2], dims[-1]
    if k_major and rows % 32 == 0 and cols % 32 == 0:

        def crosswise(i, j):
            q = (j // 4) % 8
            bit2 = (i % 32 // 16) ^ (i % 16 // 8) ^ (q // 4)
            bit1 = (i % 8 // 4) ^ (q % 4 // 2)
            permuted = (i // 16) * 16 + (i % 4) * 4 + bit2 * 2 + bit1
            return (j % 4 + permuted * 4 + (j // 4) * rows * 4,)

        return _build(dims, crosswise, "volta_crosswise", name, bits)
    if cols % 64 == 0 and rows % 4 == 0:

        def congruous(i, j):
            tile_c, tile_s = j // 64, i // 4
            res_c, res_s = (j // 8) % 8, i % 4
            if is_a:
                strided = res_c // 2
                contiguous = (res_c % 2) * 4 + (res_s ^ strided)
            else:
                strided = res_c % 4
                contiguous = (res_c // 4) * 4 + (res_s ^ strided)
            return ((strided + tile_s * 4) * cols + j % 8 + (contiguous + tile_c * 8) * 8,)

        return _build(dims, congruous, "volta_congruous_a" if is_a else "volta_congruous_b", name, bits)
    return _padded(dims, name, bits, pad_bits=16)


_CONSTRUCTORS: dict[str, Callable[[Sequence[int], object], SwizzledLayout]] = {
    "quarter": make_quarter_bank_swizzled_layout,
    "half": make_half_bank_swizzled_layout,
    "full": make_full_bank_swizzled_layout,
}


# ---- identification and merging ----------------------------------------------------------------


def swizzle_info(layout: Layout, shape: Sequence[int] | None = None, dtype: object = None) -> SwizzleInfo | None:
    """The :class:`SwizzleInfo` of ``layout``: its tag when an nv constructor built it, else the bank
    swizzle it equals (checked smallest granularity first, as TileLang's ``DetectSwizzleMode``; needs
    ``dtype``), else None.  ``shape`` defaults to the layout's input shape."""
    if not isinstance(layout, Layout):
        raise LayoutError(f"swizzle_info expects a Layout; found {type(layout).__name__}")
    info = getattr(layout, "swizzle", None)
    if isinstance(info, SwizzleInfo):
        return info
    if dtype is None:
        return None
    dims = check_shape(layout.input_shape if shape is None else shape)
    if dims != layout.input_shape or len(dims) < 2:
        return None
    name, bits = canonical_dtype(dtype), element_bits(dtype)
    for kind in BANK_SWIZZLES:
        try:
            candidate = _CONSTRUCTORS[kind](dims, name)
        except ShapeError:
            continue
        if len(candidate.forward_index) == len(layout.forward_index) and candidate.is_equal(layout):
            return SwizzleInfo(kind, dims, name, bits)
    return None


def merge_swizzles(a: Layout, b: Layout, dtype: object = None) -> SwizzledLayout | None:
    """Merge two bank swizzles of one buffer: the smaller granularity wins (only ever downgrades).

    Returns None when either layout is not a 32/64/128B swizzle (TileLang returns no layout then).
    Untagged layouts are identified with ``dtype`` (or the other operand's dtype).

    >>> from layoutkit.targets import nv
    >>> q = nv.make_quarter_bank_swizzled_layout((16, 64), "float16")
    >>> nv.merge_swizzles(nv.make_full_bank_swizzled_layout((16, 64), "float16"), q) == q
    True
    >>> nv.merge_swizzles(q, nv.make_linear_layout((16, 64), "float16")) is None
    True
    """
    tagged = [getattr(x, "swizzle", None) for x in (a, b)]
    hint = dtype if dtype is not None else next((t.dtype for t in tagged if isinstance(t, SwizzleInfo)), None)
    ia, ib = swizzle_info(a, dtype=hint), swizzle_info(b, dtype=hint)
    if ia is None or ib is None or not ia.is_bank_swizzle or not ib.is_bank_swizzle:
        return None
    if ia.buffer_shape != ib.buffer_shape:
        raise ShapeError(
            "merge_swizzles: both layouts must describe one buffer; found shapes "
            f"{ia.buffer_shape} and {ib.buffer_shape}"
        )
    if ia.element_bits != ib.element_bits:
        raise ShapeError(
            f"merge_swizzles: both layouts must describe one buffer; found element types {ia.dtype} and {ib.dtype}"
        )
    small = ia if ia.granularity <= ib.granularity else ib
    return _CONSTRUCTORS[small.kind](small.buffer_shape, small.dtype)


SHARED_LAYOUTS: dict[str, Callable[[Sequence[int], object], SwizzledLayout]] = {
    "linear": make_linear_layout,
    "padded": make_padded_layout,
    "32B": make_quarter_bank_swizzled_layout,
    "64B": make_half_bank_swizzled_layout,
    "128B": make_full_bank_swizzled_layout,
}
"""The shared-memory layout choices by name, from none to the widest swizzle (reports, sweeps)."""
