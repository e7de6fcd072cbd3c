"""The old name of :mod:`layoutkit.algebra.translate` (index expressions to sympy and to C), kept so
``from layoutkit.algebra.convert import to_c`` keeps working.

>>> from layoutkit.algebra.convert import to_c
>>> from layoutkit.algebra.translate import to_c as moved
>>> to_c is moved
True
"""

from __future__ import annotations

from .translate import C_PRELUDE, to_c, to_sympy

__all__ = ["C_PRELUDE", "to_c", "to_sympy"]
