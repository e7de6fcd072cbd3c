"""Immutable integer tables: the values a table-lookup index expression reads.

A :class:`Table` is a one-dimensional int64 array that cannot be written, with a content digest: two tables
with the same values are equal and hash alike, whatever array they were built from, so a
:class:`~layoutkit.algebra.nodes.Lookup` node keyed by its table is interned, compared and pickled like any
other expression node.  The digest also names the table in printed expressions (``table#<id>[...]``) and in
the constant arrays code printers emit.

Law: ``Table(v) == Table(w)`` exactly when ``v`` and ``w`` hold the same integers in the same order.

>>> t = Table([3, 1, 2])
>>> len(t), t.lo, t.hi, t.values.tolist()
(3, 1, 3, [3, 1, 2])
>>> t == Table((3, 1, 2)), t == Table([3, 2, 1])
(True, False)
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ExprError, LimitError

MAX_TABLE = 1 << 26
"""Most entries a table holds (512 MiB of int64): a lookup inverse has one entry per point of its box."""


class Table:
    """A read-only int64 vector with a content digest (immutable, hashable, picklable)."""

    __slots__ = ("_values", "_digest", "_hash", "lo", "hi")
    _values: NDArray[np.int64]
    _digest: bytes
    _hash: int
    lo: int
    """Smallest value."""
    hi: int
    """Largest value."""

    def __init__(self, values: ArrayLike):
        arr = _int64_vector(values)
        arr.flags.writeable = False
        digest = hashlib.blake2b(arr.tobytes(), digest_size=16).digest()
        object.__setattr__(self, "_values", arr)
        object.__setattr__(self, "_digest", digest)
        object.__setattr__(self, "_hash", int.from_bytes(digest[:8], "little"))
        object.__setattr__(self, "lo", int(arr.min()))
        object.__setattr__(self, "hi", int(arr.max()))

    @property
    def values(self) -> NDArray[np.int64]:
        """The entries (a read-only array: writing to it raises)."""
        return self._values

    @property
    def name(self) -> str:
        """A short name read off the digest, the same for equal tables: what printers call the table.

        >>> Table([0, 1]).name == Table(range(2)).name != Table([1, 0]).name
        True
        """
        return self._digest[:8].hex()

    def span(self, lo: int, hi: int) -> tuple[int, int]:
        """``(min, max)`` of the entries ``lo..hi`` (both ends included, clipped to the table).

        >>> Table([5, 0, 9, 2]).span(1, 3), Table([5, 0, 9, 2]).span(-4, 1)
        ((0, 9), (0, 5))
        """
        part = self._values[max(lo, 0): max(min(hi, len(self) - 1), -1) + 1]
        return (int(part.min()), int(part.max())) if part.size else (self.lo, self.hi)

    def __len__(self) -> int:
        return int(self._values.shape[0])

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Table is immutable")

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Table):
            return NotImplemented
        return self._digest == other._digest and bool(np.array_equal(self._values, other._values))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[Any, ...]:
        return (Table, (self._values,))

    def __repr__(self) -> str:
        return f"Table#{self.name}(len={len(self)}, lo={self.lo}, hi={self.hi})"


def _int64_vector(values: ArrayLike) -> NDArray[np.int64]:
    """``values`` as a fresh contiguous int64 vector, or a typed error saying what is wrong."""
    if isinstance(values, (str, bytes)):
        raise ExprError(f"a table needs integer values; found {type(values).__name__} {values!r:.40}")
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError) as err:  # ragged nesting
        raise ExprError(f"a table needs a flat sequence of integers; found {type(values).__name__}: {err}") from None
    if arr.dtype == object:
        try:
            arr = np.asarray(values, dtype=np.int64)
        except OverflowError:
            raise LimitError("table values must fit int64", 2**63, None) from None
        except (TypeError, ValueError):
            raise ExprError(f"a table needs integer values; found {arr.dtype} entries {values!r:.60}") from None
    if arr.dtype.kind not in "iu" or arr.dtype == np.bool_:
        raise ExprError(f"a table needs integer values; found {arr.dtype} entries")
    if arr.ndim != 1:
        raise ExprError(f"a table is one-dimensional; found shape {arr.shape}")
    if not arr.size:
        raise ExprError("a table needs at least one value; found none")
    if arr.size > MAX_TABLE:
        raise LimitError(f"tables hold at most {MAX_TABLE} values; found {arr.size}", MAX_TABLE, arr.size)
    if arr.dtype == np.uint64 and int(arr.max()) >= 2**63:
        raise LimitError(f"table values must fit int64; found {int(arr.max())}", 2**63, int(arr.max()))
    return np.array(arr, dtype=np.int64, copy=True, order="C")


__all__ = ["MAX_TABLE", "Table"]
