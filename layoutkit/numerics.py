"""Machine-independent arithmetic shared by the executors.

Two executors that must agree bit for bit (the statement-level executor of a lowered kernel and the
op-level simulator of the same program, say) cannot both call ``np.matmul``: BLAS picks its summation
order by CPU kernel, thread count and operand strides, so the last bits of a float32 dot product differ
from one machine to the next.  :func:`mad` fixes the order instead: products are formed one ``k`` at a
time and added to the accumulator in increasing ``k``.  Every step is a single IEEE-754 float32 multiply
or add, correctly rounded on every CPU numpy runs on, so the result depends only on the operands and on
how the caller splits K into MAD calls (one call per hardware MAD, as the kernel issues them).

>>> import numpy as np
>>> a = np.float32([[1, 2], [3, 4]]); b = np.float32([[5, 6], [7, 8]])
>>> mad(a, b).tolist()
[[19.0, 22.0], [43.0, 50.0]]
>>> mad(a, b, np.ones((2, 2), np.float32)).tolist()
[[20.0, 23.0], [44.0, 51.0]]
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .errors import ShapeError

__all__ = ["mad"]


def mad(a: NDArray, b: NDArray, c: NDArray | None = None) -> NDArray:
    """``c + a @ b`` over the last two axes (leading axes broadcast), accumulated in increasing ``k``.

    Floats accumulate in float32 (fp16 and bf16 products are exact in float32, so only the additions
    round), integers in int64 (exact; callers narrow to the accumulator's width).  ``c`` defaults to zeros.
    Law: ``mad(a, b, mad(a2, b2, c))`` adds ``a2 @ b2`` first, then ``a @ b`` - the order the K steps of a
    kernel give - and equals the float64 product up to ``K * eps32 * sum|a||b|``.

    >>> import numpy as np
    >>> a = np.float32([[1e8, 1.0, -1e8]]); b = np.float32([[1], [1], [1]])
    >>> mad(a, b).tolist()                  # (1e8 + 1) rounds to 1e8 first: the order is part of the result
    [[0.0]]
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
        raise ShapeError(f"mad: expected operands [.., M, K] and [.., K, N]; found {a.shape} and {b.shape}")
    wide = np.int64 if a.dtype.kind in "iub" and b.dtype.kind in "iub" else np.float32
    a, b = a.astype(wide, copy=False), b.astype(wide, copy=False)
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    acc = np.zeros(shape, wide) if c is None else np.array(np.broadcast_to(c, shape), dtype=wide)
    for k in range(a.shape[-1]):
        acc += a[..., :, k : k + 1] * b[..., k : k + 1, :]
    return acc
