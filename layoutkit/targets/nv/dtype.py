"""Element types of the NVIDIA target: names (TVM spelling) and widths in bits.

Dtypes are strings as TVM/TileLang spell them (``"float16"``, ``"bfloat16"``, ``"float8_e4m3fn"``
...); a few short aliases (``"fp16"``, ``"bf16"``, ``"fp8e4m3"`` ...) and numpy dtypes are accepted
too.  An unknown name raises :class:`DtypeError` (a :class:`~layoutkit.LayoutError`).

>>> element_bits("float16"), element_bits("fp8e4m3"), element_bits("float64")
(16, 8, 64)
>>> canonical_dtype("bf16")
'bfloat16'
>>> try:
...     element_bits("float17")
... except DtypeError as e:
...     print(e)
unknown dtype 'float17': expected one of bfloat16, bool, float16, float32, float4_e2m1fn, float64, float8_e4m3, \
float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, int16, int32, int4, int64, int8, tfloat32, uint16, \
uint32, uint4, uint64, uint8 (or an alias such as fp16, bf16, fp8e4m3)
"""

from __future__ import annotations

from ...errors import LayoutError

_BITS: dict[str, int] = {
    "float16": 16,
    "bfloat16": 16,
    "float32": 32,
    "tfloat32": 32,
    "float64": 64,
    "float8_e4m3": 8,
    "float8_e4m3fn": 8,
    "float8_e4m3fnuz": 8,
    "float8_e5m2": 8,
    "float8_e5m2fnuz": 8,
    "float4_e2m1fn": 4,
    "int4": 4,
    "uint4": 4,
    "int8": 8,
    "uint8": 8,
    "int16": 16,
    "uint16": 16,
    "int32": 32,
    "uint32": 32,
    "int64": 64,
    "uint64": 64,
    "bool": 8,
}

_ALIASES: dict[str, str] = {
    "fp16": "float16",
    "half": "float16",
    "f16": "float16",
    "bf16": "bfloat16",
    "fp32": "float32",
    "float": "float32",
    "f32": "float32",
    "tf32": "tfloat32",
    "fp64": "float64",
    "double": "float64",
    "f64": "float64",
    "fp8e4m3": "float8_e4m3fn",
    "fp8_e4m3": "float8_e4m3fn",
    "e4m3": "float8_e4m3fn",
    "fp8e5m2": "float8_e5m2",
    "fp8_e5m2": "float8_e5m2",
    "e5m2": "float8_e5m2",
    "fp4": "float4_e2m1fn",
    "s8": "int8",
    "u8": "uint8",
    "s32": "int32",
}


class DtypeError(LayoutError, ValueError):
    """A dtype name layoutkit does not know, or one an operation does not support."""


def canonical_dtype(dtype: object) -> str:
    """The TVM spelling of ``dtype`` (a string alias or a numpy dtype)."""
    if isinstance(dtype, str):
        name = dtype.strip()
    else:
        try:
            import numpy as np

            name = np.dtype(dtype).name  # type: ignore[arg-type]
        except TypeError:
            raise DtypeError(f"dtype must be a string such as 'float16'; found {dtype!r}") from None
    key = name.lower()
    if key in _BITS:
        return key
    if key in _ALIASES:
        return _ALIASES[key]
    raise DtypeError(
        f"unknown dtype {dtype!r}: expected one of {', '.join(sorted(_BITS))} (or an alias such as fp16, bf16, fp8e4m3)"
    )


def element_bits(dtype: object) -> int:
    """Width of one element of ``dtype`` in bits."""
    return _BITS[canonical_dtype(dtype)]


def is_float8(dtype: object) -> bool:
    """True for the 8-bit float formats (e4m3 / e5m2 variants)."""
    return canonical_dtype(dtype).startswith("float8")
