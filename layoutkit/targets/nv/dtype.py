"""Element types of the NVIDIA target (shared with every target: :mod:`layoutkit.dtypes`)."""

from ...dtypes import DtypeError, canonical_dtype, element_bits, is_float8

__all__ = ["DtypeError", "canonical_dtype", "element_bits", "is_float8"]
