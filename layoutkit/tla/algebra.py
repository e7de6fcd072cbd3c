"""The old name of the CuTe layout algebra, kept so ``from layoutkit.tla.algebra import ...`` keeps working.

The algebra now lives in modules named after what they do -- :mod:`layoutkit.tla.coalesce` (coalesce,
filter), :mod:`layoutkit.tla.composition` (composition, complement) and :mod:`layoutkit.tla.inverses`
(right and left inverses, nullspace) -- so that it is not confused with the :mod:`layoutkit.algebra`
package of index expressions.

>>> from layoutkit.tla.algebra import coalesce, composition
>>> from layoutkit.tla.composition import composition as moved
>>> composition is moved
True
"""

from __future__ import annotations

from .coalesce import as_layout, coalesce, coalesce_shape, coalesced_shape, concat, filter, filter_zeros
from .composition import NUMERIC_CHECK_LIMIT, complement, composition
from .inverses import is_static_layout, left_inverse, max_common_vector, nullspace, right_inverse

__all__ = [
    "NUMERIC_CHECK_LIMIT",
    "as_layout",
    "concat",
    "coalesce",
    "coalesce_shape",
    "coalesced_shape",
    "filter_zeros",
    "filter",
    "composition",
    "complement",
    "right_inverse",
    "left_inverse",
    "nullspace",
    "max_common_vector",
    "is_static_layout",
]
