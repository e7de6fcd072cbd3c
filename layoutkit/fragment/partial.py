"""PartialFragment: replicas that are addends of a reduction, not copies.

After a split reduction every thread holds a *partial* value; the logical value of an element is
the reduction of its replicas.  As in TileLang, the replication coordinate is split low-bits
first: ``_rep % combine_size`` enumerates the addend lanes a finishing collective must reduce,
``_rep // combine_size`` the copy groups that already hold equal values.

>>> import numpy as np
>>> import layoutkit as lk
>>> base = lk.Fragment([4], forward_thread_fn=lambda i, rep: i + rep * 4, replicate=2, forward_index_fn=lambda i: 0)
>>> P = lk.PartialFragment(base)                      # both replicas are addends
>>> regs = np.array([[1], [2], [3], [4], [10], [20], [30], [40]])
>>> P.combine(regs).tolist()
[11, 22, 33, 44]
>>> P.combine_steps()                                 # one butterfly step over 2 threads, stride 4
[(2, 4)]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..algebra.layout import Layout
from ..algebra.nodes import Expr, Var, add, free_vars, scale, split_view, substitute
from ..algebra.shapes import positive_int
from ..errors import LayoutError, ShapeError
from .fragment import Fragment

_IDENTITY = {"sum": 0, "max": -np.inf, "min": np.inf, "prod": 1}
_REDUCE = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}


class PartialFragment(Fragment):
    """A Fragment whose low ``combine_size`` replicas are addends of a reduction."""

    __slots__ = ("_combine",)
    _combine: int

    def __init__(self, fragment: Fragment, combine_size: int | None = None):
        if not isinstance(fragment, Fragment):
            raise LayoutError(f"PartialFragment wraps a Fragment, found {type(fragment).__name__}")
        r = fragment.replicate_size
        c = r if combine_size is None else positive_int(combine_size, "combine_size")
        if c < 1 or r % c:
            raise ShapeError(f"combine_size must divide the replicate size {r}; found {combine_size}")
        self.initialize_fragment(fragment.input_shape, fragment.forward_thread, r, fragment.forward_index,
                            fragment.thread_range)
        object.__setattr__(self, "_combine", c)

    @property
    def combine_size(self) -> int:
        return self._combine

    @property
    def copy_size(self) -> int:
        return self.replicate_size // self._combine

    def as_post_collective(self) -> Fragment:
        """The same map as a plain Fragment: after the collective every replica holds the result."""
        return Fragment.from_exprs(self.input_shape, self.forward_index, self.forward_thread, self.replicate_size,
                                   self.thread_range)

    def combine(self, registers: ArrayLike, op: str = "sum") -> NDArray[Any]:
        """The logical tile: reduce the addend lanes of copy group 0 (``op``: sum, max, min, prod)."""
        if op not in _REDUCE:
            raise LayoutError(f"unknown reduction {op!r}; expected one of {sorted(_REDUCE)}")
        regs = _register_file(registers, self)
        threads = self.thread_table()
        index = self.index_table()
        out: NDArray[Any] = regs[threads[0], index]
        for lane in range(1, self._combine):
            out = _REDUCE[op](out, regs[threads[lane], index])
        return out

    def scatter_partials(self, tile: ArrayLike, op: str = "sum") -> NDArray[Any]:
        """Registers whose combination is ``tile``: lane 0 of every copy group holds the value,
        the other lanes hold the identity of ``op``."""
        tile = np.asarray(tile)
        plain = self.as_post_collective()
        regs = plain.distribute(tile)
        ident = _IDENTITY[op]
        threads = self.thread_table()
        index = self.index_table()
        for r in range(self.replicate_size):
            if r % self._combine:
                regs = regs.astype(np.result_type(regs, type(ident)))
                regs[threads[r], index] = ident
        return regs

    def combine_steps(self) -> list[tuple[int, int]]:
        """Collective steps ``(threads, stride)`` of the finishing reduction: the digits of the
        addend lane in the thread map, each with the thread stride it moves by."""
        lo, hi = Var("_lane", self._combine), Var("_copy", max(self.copy_size, 1))
        thread = substitute(self.forward_thread, {self.rep_var: add(lo, scale(hi, self._combine))})
        steps = []
        from ..algebra.nodes import linear

        terms, _ = linear(thread)
        for atom, coeff in terms.items():
            base, lower, upper = split_view(atom)
            if base == lo:
                top = self._combine if upper is None else upper
                steps.append((-(-top // lower), coeff))
        if any(lo in _vars(a) and split_view(a)[0] != lo for a in terms):
            raise LayoutError(f"the addend lane is mixed with other terms in {self.forward_thread}")
        return sorted(steps, key=lambda s: s[1])

    def is_equal(self, other: Layout) -> bool:
        """A partial never equals a plain Fragment; partials also compare their combine split."""
        return (isinstance(other, PartialFragment) and other.combine_size == self._combine
                and Fragment.is_equal(self, other))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PartialFragment) and Fragment.__eq__(self, other) and other._combine == self._combine

    def __hash__(self) -> int:
        return hash((Fragment.__hash__(self), self._combine))

    def __reduce__(self) -> tuple[Any, ...]:
        return (PartialFragment, (self.as_post_collective(), self._combine))

    def __str__(self) -> str:
        return self.partial_text(Fragment.__str__(self))

    def describe(self) -> str:
        """The printed form for error messages (``str``'s, without evaluating the maps)."""
        return self.partial_text(Fragment.describe(self))

    def partial_text(self, text: str) -> str:
        """A Fragment's printed form made this partial's: ``replicate: R (combine C x copy K)``."""
        head = f"replicate: {self.replicate_size}"
        return "Partial" + text.replace(head, f"{head} (combine {self._combine} x copy {self.copy_size})", 1)

    __repr__ = __str__


def _vars(e: Expr) -> tuple[Var, ...]:
    return free_vars(e)


def _register_file(registers: ArrayLike, fragment: Fragment) -> NDArray[Any]:
    """``registers`` as a numeric ``[threads, registers]`` array big enough for ``fragment``."""
    try:
        regs = np.asarray(registers)
    except (ValueError, TypeError) as err:
        raise ShapeError(f"registers must be a rectangular numeric array; found {type(registers).__name__} "
                         f"({' '.join(str(err).split())[:80]})") from None
    if regs.dtype.kind not in "biufc":
        raise ShapeError(f"registers must be numeric; found dtype {regs.dtype}")
    need = (fragment.thread_extent, math.prod(fragment.output_shape))
    if regs.ndim != 2 or regs.shape[0] < need[0] or regs.shape[1] < need[1]:
        raise ShapeError(f"registers must be a [threads, registers] array of at least {need}; found shape "
                         f"{regs.shape}")
    return regs
