"""NV shared-memory layouts over a symbolic row count (parametric layouts).

>>> from layoutkit.algebra.parametric import Symbol
>>> R = Symbol("R", lo=8, multiple=8)
>>> L = make_parametric_bank_swizzled_layout("full", R, 128, "float16")
>>> bool(L.prove_bijective()), L.apply((9, 70), {"R": 32})
(True, 2638)
"""

from __future__ import annotations

from ...algebra.parametric import ParametricLayout, Symbol
from ...errors import ShapeError
from .dtype import canonical_dtype, element_bits
from .swizzle import _PER, make_bank_swizzled_layout


def make_parametric_bank_swizzled_layout(kind: str, rows: Symbol, cols: int, dtype: object) -> ParametricLayout:
    """The ``kind`` (``"quarter" | "half" | "full"``) bank swizzle of a ``[rows, cols]`` buffer whose row
    count is a symbol: TileLang's formula with its linearized outputs, ``atom(i % 8, j % W) +
    (i // 8) * 8W + (j // W) * rows * W`` (``W = per * 128 / bits``).  ``rows`` must be a multiple of 8
    for every admissible value (the swizzle's xor period)."""
    if kind not in _PER:
        raise ShapeError(f"kind must be one of {sorted(_PER)}; found {kind!r}")
    if not isinstance(rows, Symbol) or rows.multiple % 8:
        raise ShapeError(f"rows must be a Symbol whose values are multiples of 8 (multiple=8); found {rows!r}")
    width = _PER[kind] * (128 // element_bits(dtype))
    if cols % width:
        raise ShapeError(f"a {kind} swizzle of {canonical_dtype(dtype)} needs cols a multiple of {width}; found {cols}")
    atom = make_bank_swizzled_layout((8, width), dtype, kind)
    return ParametricLayout((rows,), atom, (rows.sym / 8, cols // width), (8 * width, rows.sym * width))


__all__ = ["make_parametric_bank_swizzled_layout"]
