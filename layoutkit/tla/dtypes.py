"""Element widths and Ascend's ``C0 = 256 / bits`` (shared with every target: :mod:`layoutkit.dtypes`)."""

from ..dtypes import c0, element_bits

__all__ = ["element_bits", "c0"]
