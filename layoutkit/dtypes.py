"""Element types: names (TVM spelling), aliases and widths in bits, shared by every target.

Dtypes are strings as TVM/TileLang spell them (``"float16"``, ``"bfloat16"``, ``"float8_e4m3fn"``
...); short aliases (``"fp16"``, ``"bf16"``, ``"fp8e4m3"`` ...), ``torch.`` names and numpy dtypes
are accepted too.  An unknown name raises :class:`~layoutkit.errors.DtypeError`.

>>> element_bits("float16"), element_bits("fp8e4m3"), element_bits("float64"), element_bits("torch.bfloat16")
(16, 8, 64, 16)
>>> canonical_dtype("bf16")
'bfloat16'
>>> c0("float16"), c0("float32"), c0("int8"), c0("int4")
(16, 8, 32, 64)
"""

from __future__ import annotations

import numpy as np

from .errors import DtypeError, UnsupportedError

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
    "float8_e8m0fnu": 8,
    "float8_e3m4": 8,
    "float8_e4m3b11fnuz": 8,
    "float4_e2m1_unpacked": 8,  # TileLang's custom fp4 held one value per byte (custom[float4_e2m1_unpacked]8)
    "hifloat8": 8,
    "float4_e1m2": 4,
    "float6_e2m3fn": 6,
    "float6_e3m2fn": 6,
    "int1": 1,
    "uint1": 1,
    "int2": 2,
    "uint2": 2,
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
    "e2m1": "float4_e2m1fn",
    "float4_e2m1": "float4_e2m1fn",
    "float8_e8m0": "float8_e8m0fnu",
    "fp8": "float8_e4m3fn",
    "s8": "int8",
    "u8": "uint8",
    "s32": "int32",
}


def canonical_dtype(dtype: object) -> str:
    """The TVM spelling of ``dtype`` (a string alias or a numpy dtype).  ``None`` is refused: numpy would
    read it as float64, a default no caller means.

    >>> canonical_dtype("fp16"), canonical_dtype("custom[tfloat32]")
    ('float16', 'tfloat32')
    >>> canonical_dtype(None)
    Traceback (most recent call last):
        ...
    layoutkit.errors.DtypeError: dtype must be given (a string such as 'float16' or a numpy dtype); found None
    """
    if dtype is None or isinstance(dtype, bool):
        raise DtypeError(f"dtype must be given (a string such as 'float16' or a numpy dtype); found {dtype!r}")
    if isinstance(dtype, str):
        name = dtype.strip()
        if name.lower().startswith("torch."):
            name = name[len("torch.") :]
    elif isinstance(getattr(dtype, "name", None), str) and not hasattr(dtype, "kind"):
        name = dtype.name  # type: ignore[attr-defined]
    else:
        try:
            import numpy as np

            name = np.dtype(dtype).name  # type: ignore[call-overload]
        except TypeError:
            raise DtypeError(f"dtype must be a string such as 'float16'; found {dtype!r}") from None
    key = _uncustom(name.lower())
    if key in _BITS:
        return key
    if key in _ALIASES:
        return _ALIASES[key]
    base, lanes = _vector(key)
    if lanes > 1 and base in _BITS:  # TVM's vector spelling: one element holds `lanes` values
        return key
    raise DtypeError(
        f"unknown dtype {dtype!r}: expected one of {', '.join(sorted(_BITS))} (or an alias such as fp16, bf16, fp8e4m3)"
    )


def _uncustom(name: str) -> str:
    """A TVM custom dtype's own name: TVM prints types it registers at run time as ``custom[NAME]``
    (TileLang's ``T.tfloat32`` is ``custom[tfloat32]``), optionally followed by the bits or lanes
    (``custom[tfloat32]32``, ``custom[tfloat32]32x4``); anything else is returned as given.

    >>> _uncustom("custom[tfloat32]"), _uncustom("custom[tfloat32]32x4"), _uncustom("float16")
    ('tfloat32', 'tfloat32x4', 'float16')
    """
    if not name.startswith("custom[") or "]" not in name:
        return name
    inner, _, rest = name[len("custom["):].partition("]")
    bits, sep, lanes = rest.partition("x")
    if inner not in _BITS or (bits and (not bits.isascii() or not bits.isdigit() or int(bits) != _BITS[inner])):
        return name
    return f"{inner}x{lanes}" if sep else inner


def _vector(name: str) -> tuple[str, int]:
    """``(base, lanes)`` of a TVM vector dtype name such as ``float4_e2m1fnx2``; ``(name, 1)`` otherwise.

    >>> _vector("float4_e2m1fnx2"), _vector("float16x4"), _vector("float16")
    (('float4_e2m1fn', 2), ('float16', 4), ('float16', 1))
    """
    head, sep, tail = name.rpartition("x")
    if sep and head and tail.isascii() and tail.isdigit() and int(tail) > 1:  # not '¹': isdigit() alone is unicode
        return head, int(tail)
    return name, 1


def element_bits(dtype: object) -> int:
    """Width of one element of ``dtype`` in bits (a vector dtype's element holds all its lanes).

    >>> element_bits("float4_e2m1fnx2"), element_bits("int2"), element_bits("float6_e3m2fn")
    (8, 2, 6)
    """
    name = canonical_dtype(dtype)
    if name in _BITS:
        return _BITS[name]
    base, lanes = _vector(name)
    return _BITS[base] * lanes


def is_float8(dtype: object) -> bool:
    """True for the 8-bit float formats (e4m3 / e5m2 variants)."""
    return canonical_dtype(dtype).startswith("float8")


def c0(dtype: object) -> int:
    """Ascend ``C0``: elements in 32 bytes (one fractal row), ``256 / bits``."""
    bits = element_bits(dtype)
    if 256 % bits:
        raise DtypeError(f"C0 needs an element width dividing 256 bits; {dtype!r} has {bits}")
    return 256 // bits


# ---- numpy storage of element types (shared by every executor) ----------------------------------------

BF16_NAN = np.uint16(0x7FC0)
"""The bfloat16 quiet NaN, as its bit pattern."""

FP8_FORMATS = {"float8_e4m3": (4, 3), "float8_e4m3fn": (4, 3), "float8_e5m2": (5, 2)}
"""fp8 dtypes whose codes :func:`from_fp8` decodes -> (exponent bits, mantissa bits); their buffers hold the
codes as ``uint8`` (numpy has no fp8)."""


_STORAGE: dict[str, type] = {"float16": np.float16, "float32": np.float32, "float64": np.float64,
                             "bfloat16": np.uint16, "int8": np.int8, "uint8": np.uint8, "int16": np.int16,
                             "uint16": np.uint16, "int32": np.int32, "uint32": np.uint32, "int64": np.int64,
                             **dict.fromkeys(FP8_FORMATS, np.uint8)}


def to_bf16(x: object) -> np.ndarray:
    """bfloat16 bit patterns (``uint16``) of ``x``, rounded to nearest even; NaN stays NaN.

    >>> to_bf16(np.float32([1.0, 1.00390625, 1.01171875, -2.0, np.nan])).tolist()
    [16256, 16256, 16258, 49152, 32704]
    """
    f = np.ascontiguousarray(x, dtype=np.float32)
    u = f.view(np.uint32).astype(np.uint64)  # 64 bits: adding the rounding bias cannot wrap
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(f), BF16_NAN, r).astype(np.uint16)


def from_bf16(bits: object) -> np.ndarray:
    """float32 values of bfloat16 bit patterns (exact: a bfloat16 is the top half of a float32).

    >>> from_bf16(np.uint16([16256, 49152])).tolist()
    [1.0, -2.0]
    """
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def from_fp8(codes: object, dtype: str) -> np.ndarray:
    """float32 values of fp8 codes (``uint8``), from the formats' definitions: e4m3 (the ``fn`` form PTX's
    ``.e4m3`` is: bias 7, no infinities, ``S.1111.111`` NaN) and e5m2 (bias 15, IEEE infinities and NaNs);
    subnormals where the exponent field is 0.  Exact: every fp8 value is a float32.

    >>> from_fp8(np.uint8([0x38, 0xC0, 0x01, 0x7E, 0x7F]), "float8_e4m3").tolist()[:4]
    [1.0, -2.0, 0.001953125, 448.0]
    >>> from_fp8(np.uint8([0x3C, 0x7C, 0x01]), "float8_e5m2").tolist()
    [1.0, inf, 1.52587890625e-05]
    """
    if dtype not in FP8_FORMATS:
        raise UnsupportedError(f"no fp8 decode for {dtype}; expected one of {sorted(FP8_FORMATS)}")
    e_bits, m_bits = FP8_FORMATS[dtype]
    c = np.asarray(codes, dtype=np.uint8).astype(np.int64)
    sign = np.where(c >> 7, -1.0, 1.0)
    e = (c >> m_bits) & ((1 << e_bits) - 1)
    m = c & ((1 << m_bits) - 1)
    bias = (1 << (e_bits - 1)) - 1
    top = (1 << e_bits) - 1
    mag = np.where(e == 0, m / (1 << m_bits) * 2.0 ** (1 - bias), (1 + m / (1 << m_bits)) * 2.0 ** (e - bias))
    if e_bits == 4:  # e4m3fn: only S.1111.111 is NaN, the rest of the top binade are numbers
        mag = np.where((e == top) & (m == (1 << m_bits) - 1), np.nan, mag)
    else:
        mag = np.where(e == top, np.where(m == 0, np.inf, np.nan), mag)
    return (sign * mag).astype(np.float32)


def storage_dtype(dtype: str, supported: object = None) -> type:
    """The numpy type a buffer of ``dtype`` is held in (``bfloat16`` as ``uint16`` bit patterns).

    ``supported`` (a collection of dtype names) narrows the answer to what an executor models; anything
    else raises :class:`~layoutkit.errors.UnsupportedError` naming the dtypes it takes.

    >>> storage_dtype("bfloat16").__name__, storage_dtype("int8").__name__
    ('uint16', 'int8')
    >>> storage_dtype("float64", supported=("float16", "float32"))
    Traceback (most recent call last):
    ...
    layoutkit.errors.UnsupportedError: no numpy model for float64 here; expected one of ['float16', 'float32']
    """
    allowed = sorted(_STORAGE if supported is None else supported)  # type: ignore[call-overload]
    if dtype not in allowed or dtype not in _STORAGE:
        raise UnsupportedError(f"no numpy model for {dtype} here; expected one of {allowed}")
    return _STORAGE[dtype]


__all__ = ["BF16_NAN", "FP8_FORMATS", "DtypeError", "c0", "canonical_dtype", "element_bits", "from_bf16", "from_fp8",
           "is_float8",
           "storage_dtype", "to_bf16"]
