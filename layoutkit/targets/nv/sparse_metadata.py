"""Layouts of the 2:4 sparse metadata E that CUTLASS's compressors write (TileLang 0.1.15's
``make_cutlass_metadata_layout``), for a kernel to annotate its E buffer with (``T.annotate_layout``).

* sm_8x (``mma.sp``): 16-bit metadata (32-bit for 8-bit A) in CUTLASS's column-major interleaved order:
  rows regrouped by ``group = 32`` (16 for 32-bit E) with ``interweave = 4`` (2), the two 2x2 corners
  swapped, then ``offset = 2*M*(j//2) + 2*i + j%2`` is read back as ``(offset // K_E, offset % K_E)``.
* sm_90 (``wgmma.sp``): 8-bit metadata, a column-major atom of ``512 / bits`` logical K (``[8, 2, 4] x
  [2, 2, NumK]`` for 16-bit A (``[1, 2, NumK]`` for tf32), ``64 x block_k/8`` rows for 8-bit), repeated over the buffer;
  a flat offset.

Both are permutations of the buffer's elements (bijections; sm_90 where the buffer is whole atoms).

>>> L = make_cutlass_metadata_layout_sm8x((32, 2), "int16")
>>> L.output_shape, L.is_bijective()
((32, 2), True)
>>> [tuple(int(v) for v in L.table()[i, j]) for i, j in ((0, 0), (0, 1), (1, 0))]
[(0, 0), (1, 0), (4, 0)]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...algebra.layout import Layout
from ...algebra.shapes import check_shape
from ...dtypes import canonical_dtype, element_bits, is_float8
from ...errors import ShapeError, UnsupportedError
from .hardware import arch_number

_SM90_A_TYPES = ("float16", "bfloat16", "float32", "int8")


def make_cutlass_metadata_layout_sm8x(shape: Sequence[int], e_dtype: object, a_dtype: object = "float16") -> Layout:
    """The sm_8x metadata layout of an ``[M, K_E]`` buffer of ``e_dtype`` (see the module doc): 16-bit E
    for 16-bit A, 32-bit E for 8-bit A (TileLang refuses the other pairings)."""
    m, k = _shape2(shape)
    e_bits, a = element_bits(e_dtype), canonical_dtype(a_dtype)
    if a in ("float16", "bfloat16") and e_bits != 16:
        raise UnsupportedError(f"sm_8x metadata for {a} A is 16-bit; found {canonical_dtype(e_dtype)}")
    if (a in ("int8", "uint8") or is_float8(a)) and e_bits != 32:
        raise UnsupportedError(f"sm_8x metadata for {a} A is 32-bit; found {canonical_dtype(e_dtype)}")
    group, interweave = (32, 4) if e_bits == 16 else (16, 2)

    def fn(i, j):
        i = i // group * group + (i % 8) * interweave + (i % group) // 8
        # swap the off-diagonal corners of each 2x2 block: +1 on (even row, odd col), -1 on (odd, even)
        top_right = (1 - i % 2) * (j % 2)
        bottom_left = (i % 2) * (1 - j % 2)
        i, j = i + top_right - bottom_left, j - top_right + bottom_left
        offset = (j // 2) * m * 2 + i * 2 + j % 2
        return offset // k, offset % k

    return Layout([m, k], fn)


def make_cutlass_metadata_layout_sm90(shape: Sequence[int], e_dtype: object, a_dtype: object,
                                      block_k: int) -> Layout:
    """The sm_90 metadata layout of an ``[M, K_E]`` 8-bit buffer for A of ``a_dtype`` and a K tile of
    ``block_k`` (capped at 128, as CUTLASS's builder caps it)."""
    m, k = _shape2(shape)
    a = canonical_dtype(a_dtype)
    if not (a in _SM90_A_TYPES or is_float8(a)):
        raise UnsupportedError(f"sm_90 sparse metadata has no atom for {a} A; expected one of {_SM90_A_TYPES} "
                               f"or float8")
    if element_bits(e_dtype) != 8:
        raise UnsupportedError(f"sm_90 metadata is 8-bit; found {canonical_dtype(e_dtype)}")
    bits = element_bits(a)
    block_k = min(int(block_k), 128)
    atom_k = 512 // bits
    if block_k % atom_k:
        raise ShapeError(f"sm_90 metadata: block_k {block_k} is not a multiple of {atom_k} (one {a} atom)")
    num_k = block_k // atom_k
    if bits in (16, 32):
        # the K atom holds 2 metadata bytes per row group for 16-bit A, 1 for tf32
        dims = [8, 2, 4, 2 if bits == 16 else 1, 2, num_k]
        strides = _column_major_strides(dims, [3, 1, 5, 0, 4, 2])
        shape_i, shape_k, stride_i, stride_k = dims[:3], dims[3:], strides[:3], strides[3:]
    else:
        shape_i, shape_k, stride_i, stride_k = [64], [block_k // 8], [block_k // 8], [1]
    atom = math.prod(shape_i + shape_k)
    shape_i, stride_i = shape_i + [-(-m // 64)], stride_i + [atom]
    rep_k_stride = math.prod(shape_i + shape_k)
    shape_k, stride_k = shape_k + [-(-k // math.prod(shape_k))], stride_k + [rep_k_stride]

    def fn(i, j):
        return (_digits_dot(i, shape_i, stride_i) + _digits_dot(j, shape_k, stride_k),)

    return Layout([m, k], fn)


def make_cutlass_metadata_layout(shape: Sequence[int], e_dtype: object, a_dtype: object = "float16",
                                 arch: str | int = "sm_80", block_k: int | None = None) -> Layout:
    """``make_cutlass_metadata_layout``: the sm_90 layout from sm_90 on (``block_k`` required), the sm_8x
    one on sm_80 .. sm_89."""
    sm = arch_number(arch)
    if sm >= 90:
        if block_k is None:
            raise ShapeError("sm_90 metadata layouts depend on the K tile: pass block_k")
        return make_cutlass_metadata_layout_sm90(shape, e_dtype, a_dtype, block_k)
    if sm >= 80:
        return make_cutlass_metadata_layout_sm8x(shape, e_dtype, a_dtype)
    raise UnsupportedError(f"sparse metadata layouts exist from sm_80; found sm_{sm}")


def _shape2(shape: Sequence[int]) -> tuple[int, int]:
    dims = check_shape(shape, "metadata buffer shape")
    if len(dims) != 2:
        raise ShapeError(f"a metadata buffer is [M, K_E]; found shape {dims}")
    return dims[0], dims[1]


def _column_major_strides(dims: list[int], order: list[int]) -> list[int]:
    """Strides of ``dims`` laid out in the order ``order`` gives (the dim with order 0 is innermost)."""
    strides = [0] * len(dims)
    acc = 1
    for d in sorted(range(len(dims)), key=lambda d: order[d]):
        strides[d] = acc
        acc *= dims[d]
    return strides


def _digits_dot(x, dims: list[int], strides: list[int]):
    """``sum(digit_d(x) * stride_d)`` with ``x`` decomposed column-major over ``dims`` (the last digit
    unbounded)."""
    total = 0
    for n, (d, s) in enumerate(zip(dims, strides)):
        digit = x % d if n < len(dims) - 1 else x
        total = total + digit * s
        x = x // d
    return total
