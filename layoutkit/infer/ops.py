"""The values a tile program is made of: buffers, regions of them, loop accesses and ops.

Immutable and hashable; :class:`~layoutkit.infer.program.Program` builds them and
:mod:`layoutkit.infer.serialize` writes them as JSON.

>>> A = Buffer("A", (64, 32), "float16", "global")
>>> r = A[0:16, 8:24]
>>> r.starts, r.extents
((0, 8), (16, 16))
>>> [str(e) for e in region_access(A, (r.starts, r.extents), (16, 16), False).indices]
['_i', '_j + 8']
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..algebra.nodes import Expr, as_expr
from ..algebra.shapes import TABLE_LIMIT, placeholder
from ..errors import LimitError, ShapeError
from ..scopes import FRAGMENT, is_shared  # noqa: F401  (is_shared: re-exported)


@dataclass(frozen=True)
class Buffer:
    """A named buffer: logical ``shape`` (without pipeline stages), ``dtype`` and memory ``scope``.
    ``alias_of`` names the buffer whose storage this one views."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    scope: str
    alias_of: str | None = None

    @property
    def is_fragment(self) -> bool:
        return self.scope == FRAGMENT

    def __getitem__(self, key) -> Region:
        """``A[0:32, 0:32]`` (a region) or ``A[64, 32]`` (a start point, extents completed from the
        other side of a copy)."""
        key = key if isinstance(key, tuple) else (key,)
        if len(key) != len(self.shape):
            raise ShapeError(f"buffer {self.name} has rank {len(self.shape)}; indexed with {len(key)} subscripts")
        if not any(isinstance(k, slice) for k in key):
            return Region(self, tuple(self._subscript(k, d) for d, k in enumerate(key)), None)
        starts, extents = [], []
        for d, (k, n) in enumerate(zip(key, self.shape)):
            if isinstance(k, slice):
                if k.step is not None and not (type(k.step) is int and k.step == 1):
                    raise ShapeError(f"buffer {self.name}: region slices take no step; found {k}")
                lo = 0 if k.start is None else self._subscript(k.start, d)
                hi = n if k.stop is None else self._subscript(k.stop, d)
                starts.append(lo)
                extents.append(hi - lo)
            else:
                starts.append(self._subscript(k, d))
                extents.append(1)
        return Region(self, tuple(starts), tuple(extents))

    def _subscript(self, k: object, dim: int) -> int:
        """A subscript as an int; anything else (a float, None, a bool) is refused, not truncated."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise ShapeError(f"buffer {self.name}: subscript {dim} must be an integer (or a slice of integers); "
                             f"found {type(k).__name__} {k!r}")
        return int(k)

    def to_dict(self) -> dict:
        d = {"name": self.name, "shape": list(self.shape), "dtype": self.dtype, "scope": self.scope}
        if self.alias_of:
            d["alias_of"] = self.alias_of
        return d


@dataclass(frozen=True)
class Region:
    """``buffer[starts : starts + extents]``; ``extents is None`` for a start point."""

    buffer: Buffer
    starts: tuple[int, ...]
    extents: tuple[int, ...] | None

    def to_dict(self) -> dict:
        return {"buffer": self.buffer.name, "starts": list(self.starts),
                "extents": None if self.extents is None else list(self.extents)}


def as_region(x: Buffer | Region) -> Region:
    if isinstance(x, Region):
        return x
    if isinstance(x, Buffer):
        return Region(x, (0,) * len(x.shape), x.shape)
    raise ShapeError(f"expected a Buffer or a region of one; found {type(x).__name__}")


@dataclass(frozen=True)
class Access:
    """One buffer access of a loop: ``indices`` are expressions over the loop vars ``_i, _j, ...``."""

    buffer: str
    indices: tuple[Expr, ...]
    is_write: bool


@dataclass(frozen=True)
class Op:
    """A tile operation.  ``kind`` is the rule key; ``args`` its parameters (JSON-ready);
    ``loop`` the loop shape and ``accesses`` for ops that lower to a parallel loop."""

    kind: str
    uid: int
    args: dict = field(default_factory=dict, compare=False, hash=False)
    loop: tuple[int, ...] | None = None
    accesses: tuple[Access, ...] = ()
    buffers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # rules enumerate the loop domain (vector widths, partitions): bound it as tables are bounded
        if self.loop is not None and math.prod(self.loop) > TABLE_LIMIT:
            raise LimitError(f"{self.kind}#{self.uid}: the loop {tuple(self.loop)} has {math.prod(self.loop)} "
                             f"points; expected at most {TABLE_LIMIT} (a tile loop, not a whole tensor)",
                             TABLE_LIMIT, math.prod(self.loop))

    @property
    def name(self) -> str:
        return f"{self.kind}#{self.uid}"

    def __str__(self) -> str:
        return self.name


def region_access(buf: Buffer, region, loop: tuple[int, ...], is_write: bool) -> Access:
    """Indices of a copy side: unit dims stay at their start, the others take the loop vars in order
    (TileLang drops unit extents when it builds a copy's loop nest)."""
    starts, extents = region
    loop_vars = [placeholder(d, e) for d, e in enumerate(loop)]
    k = 0
    idx: list[Expr] = []
    for s, e in zip(starts, extents):
        if e == 1:
            idx.append(as_expr(s))
            continue
        idx.append(loop_vars[k] + s if s else loop_vars[k])
        k += 1
    return Access(buf.name, tuple(idx), is_write)


def transpose_access(buf: Buffer, starts, src_extents, loop: tuple[int, ...]) -> Access:
    """Indices of a transpose's destination (TileLang's ``TransposeNode::MakeIndices``): dst axis ``d``
    reads the loop var of src axis ``d`` (the last two axes exchanged) plus its start, or its start alone
    where that src axis has extent 1 (the loop runs over the src region's non-unit extents).

    >>> d = Buffer("d", (2, 1, 3), "float32", "global")
    >>> [str(e) for e in transpose_access(d, (0, 0, 0), (2, 3, 1), (2, 3)).indices]
    ['_i', '0', '_j']
    """
    var_of: dict[int, Expr] = {}
    for axis, e in enumerate(src_extents):
        if e != 1:
            k = len(var_of)
            var_of[axis] = placeholder(k, loop[k])
    rank = len(starts)
    idx: list[Expr] = []
    for d, s in enumerate(starts):
        v = var_of.get({rank - 2: rank - 1, rank - 1: rank - 2}.get(d, d))
        idx.append(as_expr(s) if v is None else (v + s if s else v))
    return Access(buf.name, tuple(idx), True)


IndexFn = Callable[..., object]
