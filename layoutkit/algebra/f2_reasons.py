"""Why a table has no F2-linear view: the reason :meth:`~layoutkit.Layout.to_linear` gives instead of
a view (Triton's ``LinearLayout`` needs power-of-two extents, ``L(0) == 0`` and
``L(a ^ b) == L(a) ^ L(b)``).

>>> import numpy as np
>>> not_linear_reason(np.arange(3)[:, None], ["_i"])
('input dim 0 (_i) has extent 3, not a power of two', None)
>>> reason, witness = not_linear_reason((np.arange(4) * 3)[:, None], ["_i"])
>>> reason
'_i = 3 maps to (9,), but the XOR of the images of its bits (_i = 1 -> (3,), _i = 2 -> (6,)) is (5,)'
>>> witness
(3,)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .bits import log2_exact


def not_linear_reason(table: NDArray[Any], in_names: Sequence[str]) -> tuple[str, tuple[int, ...] | None]:
    """``(reason, witness coordinate or None)`` for a table ``in_shape + (m,)`` that is not F2-linear."""
    arr = np.asarray(table)
    shape, m = arr.shape[:-1], arr.shape[-1]
    for d, e in enumerate(shape):
        if log2_exact(int(e)) is None:
            return f"input dim {d} ({in_names[d]}) has extent {e}, not a power of two", None
    flat = arr.reshape(-1, m)
    origin = (0,) * len(shape)
    if np.any(flat[0] != 0):
        return f"the origin {origin} maps to {_tuple(flat[0])}; an F2-linear map sends it to 0", origin
    n_bits = int(np.log2(flat.shape[0])) if flat.shape[0] > 1 else 0
    pred = np.zeros((1, m), dtype=flat.dtype)
    for k in range(n_bits):
        pred = np.concatenate([pred, pred ^ flat[1 << k]])
    bad = np.flatnonzero(np.any(pred != flat, axis=1))
    if not bad.size:  # pragma: no cover - the caller found the table not linear
        return "the table is F2-linear", None
    k = int(bad[0])
    coord = tuple(int(v) for v in np.unravel_index(k, shape))
    parts = []
    for b in range(n_bits):
        if k >> b & 1:
            bit = tuple(int(v) for v in np.unravel_index(1 << b, shape))
            parts.append(f"{_where(bit, in_names)} -> {_tuple(flat[1 << b])}")
    return (f"{_where(coord, in_names)} maps to {_tuple(flat[k])}, but the XOR of the images of its bits "
            f"({', '.join(parts)}) is {_tuple(pred[k])}", coord)


def _where(coord: tuple[int, ...], names: Sequence[str]) -> str:
    nonzero = [f"{n} = {c}" for n, c in zip(names, coord) if c]
    return ", ".join(nonzero) if nonzero else "the origin"


def _tuple(values: NDArray[Any]) -> str:
    items = [str(int(v)) for v in values]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


__all__ = ["not_linear_reason"]
