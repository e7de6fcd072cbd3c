"""Fragment: logical coordinate -> (thread, register index), with replication (TileLang ``T.Fragment``).

A fragment is a :class:`~layoutkit.Layout` whose outputs are the register index inside a thread,
plus a *thread map* that may use the replication variable ``_rep`` in ``[0, replicate)``: replica
``r`` of element ``x`` lives in thread ``thread(x, r)`` at register ``index(x)``.

>>> import layoutkit as lk
>>> F = lk.Fragment([8, 8], forward_thread_fn=lambda i, j: i * 4 + j // 2, forward_index_fn=lambda i, j: j % 2)
>>> print(F)
Fragment((8, 8) -> (2,), replicate: 1, thread: 32, forward_thread: _i * 4 + _j // 2, forward_index: (_j % 2,))
>>> F.map_forward_thread([3, 5]), F.map_forward_index([3, 5])
(14, (1,))

Without ``forward_index_fn`` the index is the row-major flattening of the digits the thread map
does not use (REFERENCE section 1):

>>> G = lk.Fragment([16, 16], forward_thread_fn=lambda i, j: i % 8 * 4 + j % 8 // 2)
>>> print(G.forward_index[0])
_i // 8 * 4 + _j // 8 * 2 + _j % 2
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..algebra.evaluate import compile_numpy, evaluate_columns
from ..algebra.layout import (
    Layout,
    check_shape,
    coordinate_tuple,
    enumerable_grid,
    normalize_outputs,
    placeholder,
    positive_int,
)
from ..algebra.linear import F2Linear
from ..algebra.nodes import Const, Expr, Var, add, as_expr, free_vars, scale, substitute, tuple_text
from ..algebra.proof import Proof
from ..errors import CoordinateError, ExprError, LayoutError, ShapeError
from .arguments import _call, _call_index, _check_range, _one_thread
from .splits import flatten_digits, unused_digits

REP_NAME = "_rep"
# cached values that depend on the expressions only, never on thread_range (bind_thread_range keeps them)
_RANGE_FREE_CACHE = frozenset({"table", "thread_table", "thread_extent", "output_shape"})


def rep_var(replicate: int) -> Var:
    """The replication placeholder ``_rep`` with range ``[0, replicate)``."""
    return Var(REP_NAME, replicate)


class Fragment(Layout):
    """A thread/register layout of a tile (see the module docstring).

    ``forward_thread_fn`` receives one placeholder per input dim, plus ``_rep`` when it takes one
    more argument; ``forward_fn`` (TileLang's other form) returns ``(thread, index)``.
    ``thread_range``: ``(start, extent)`` of the hardware threads the fragment is bound to.
    """

    __slots__ = ("_thread", "_replicate", "_thread_range")
    _thread: Expr
    _replicate: int
    _thread_range: tuple[int, int] | None

    def __init__(
        self,
        input_shape: Sequence[int] | int,
        forward_fn: Callable[..., object] | None = None,
        forward_thread_fn: Callable[..., object] | Expr | None = None,
        replicate: int = 1,
        forward_index_fn: Callable[..., object] | Sequence[object] | None = None,
        *,
        thread_range: tuple[int, int] | None = None,
    ) -> None:
        shape = check_shape(input_shape, "Fragment input shape")
        replicate = positive_int(replicate, "replicate")
        variables = tuple(placeholder(d, e) for d, e in enumerate(shape))
        rep = rep_var(replicate)
        index: tuple[Expr, ...] | None = None
        if forward_fn is not None:
            result = _call(forward_fn, variables, rep, "Fragment forward_fn")
            if not (isinstance(result, (tuple, list)) and len(result) == 2):
                raise ExprError("Fragment forward_fn must return (thread, index)")
            thread = _one_thread(normalize_outputs(result[0], "Fragment forward_fn thread"))
            index = normalize_outputs(result[1], "Fragment forward_fn index")
        elif forward_thread_fn is not None:
            if callable(forward_thread_fn):
                thread = _one_thread(normalize_outputs(_call(forward_thread_fn, variables, rep, "forward_thread_fn"),
                                                       "forward_thread_fn"))
            else:
                thread = as_expr(forward_thread_fn)
        else:
            raise ExprError("Fragment needs forward_thread_fn (or forward_fn returning (thread, index))")
        if forward_index_fn is not None:
            if callable(forward_index_fn):
                index = _call_index(forward_index_fn, variables)
            else:
                index = normalize_outputs(forward_index_fn, "Fragment forward index")
        self._init_fragment(shape, thread, replicate, index, thread_range)

    def _init_fragment(self, shape: tuple[int, ...], thread: Expr, replicate: int, index: Sequence[Expr] | None,
                       thread_range: object) -> None:
        variables = tuple(placeholder(d, e) for d, e in enumerate(shape))
        rep = rep_var(replicate)
        used = free_vars(thread)
        if replicate == 1 and rep in used:  # a thread map without _rep has nothing to substitute
            thread = substitute(thread, {rep: Const(0)})
            used = free_vars(thread)
        allowed = set(variables) | {rep}
        for v in used:
            if v not in allowed:
                raise ExprError(f"thread map {thread} uses {v!r}, which is neither an input placeholder nor _rep")
        if index is None:
            # TileLang infers the index with _rep ranging over [0, 1): replica terms vanish, and a
            # sum such as (_rep * 48 + _j * 6 + _i // 4) % 32 reads the fused _j * 6 + _i // 4
            index = (flatten_digits(unused_digits(substitute(thread, {rep: Const(0)}), variables)),)
        for e in index:
            if rep in free_vars(e):
                raise ExprError(f"the register index {e} must not depend on _rep (only the thread may)")
        self._init(shape, variables, tuple(index))
        object.__setattr__(self, "_thread", thread)
        object.__setattr__(self, "_replicate", replicate)
        object.__setattr__(self, "_thread_range", _check_range(thread_range))

    @classmethod
    def from_exprs(
        cls, input_shape: Sequence[int], index: Sequence[Expr | int] | None, thread: Expr | int | None = None,
        replicate: int = 1, thread_range: tuple[int, int] | None = None,
    ) -> Fragment:
        """Build from expressions over the placeholders ``_i, _j, ...`` and ``_rep``."""
        if thread is None:
            raise ExprError("Fragment.from_exprs needs a thread expression")
        obj = cls.__new__(cls)
        obj._init_fragment(check_shape(input_shape), as_expr(thread), positive_int(replicate, "replicate"),
                           None if index is None else tuple(as_expr(e) for e in index), thread_range)
        return obj

    def _rebuild(self, **changes: Any) -> Fragment:
        args: dict[str, Any] = dict(input_shape=self.input_shape, index=self.forward_index, thread=self._thread,
                    replicate=self._replicate, thread_range=self._thread_range)
        args.update(changes)
        return Fragment.from_exprs(**args)

    # ---- properties ---------------------------------------------------------------------------
    @property
    def forward_thread(self) -> Expr:
        return self._thread

    @property
    def replicate_size(self) -> int:
        return self._replicate

    @property
    def rep_var(self) -> Var:
        return rep_var(self._replicate)

    @property
    def thread_range(self) -> tuple[int, int] | None:
        """``(start, extent)`` of the hardware threads, or None when unbound."""
        return self._thread_range

    @property
    def thread_extent(self) -> int:
        """``max(thread) + 1`` over every coordinate and replica (TileLang's ``get_thread_size``)."""
        hit = self._cache.get("thread_extent")
        if hit is None:
            t = self.thread_table()
            if t.min() < 0:
                raise LayoutError(f"{self.describe()}: the thread map is negative somewhere (min {t.min()})")
            hit = int(t.max()) + 1
            self._cache["thread_extent"] = hit
        return hit

    def get_thread_size(self) -> int:
        """``thread_extent`` (TileLang's ``Fragment.get_thread_size``: replicas over threads included).

        >>> F = Fragment([16, 16], forward_thread_fn=lambda i, j, r: r * 32 + i * 2 + j // 8,
        ...              forward_index_fn=lambda i, j: j % 8, replicate=2)
        >>> print(F)
        Fragment((16, 16) -> (8,), replicate: 2, thread: 64, forward_thread: _rep * 32 + _i * 2 + _j // 8, \
forward_index: (_j % 8,))
        >>> F.get_thread_size(), str(F.get_forward_thread()), F.thread == F.forward_thread, F.get_output_shape()
        (64, '_rep * 32 + _i * 2 + _j // 8', True, (8,))
        """
        return self.thread_extent

    def get_forward_thread(self) -> Expr:
        """``forward_thread``: the thread expression over the placeholders and ``_rep``."""
        return self._thread

    @property
    def thread(self) -> Expr:
        """``forward_thread`` under TileLang's field name."""
        return self._thread

    @property
    def local_size(self) -> int:
        """Registers per thread: the product of the index output shape."""
        return math.prod(self.output_shape)

    def bind_thread_range(self, start: int, extent: int) -> Fragment:
        """The same fragment bound to hardware threads ``[start, start + extent)``.

        The expressions were checked when ``self`` was built and binding changes none of them, so
        the copy shares them, and the tables binding cannot change, instead of rebuilding.

        >>> F = Fragment([4, 4], forward_thread_fn=lambda i, j: j, forward_index_fn=lambda i, j: i)
        >>> G = F.bind_thread_range(32, 64)
        >>> G.thread_range, G.thread_extent, G.forward_thread is F.forward_thread
        ((32, 64), 4, True)
        >>> G == F._rebuild(thread_range=(32, 64))
        True
        """
        thread_range = _check_range((start, extent))
        obj = Fragment.__new__(Fragment)
        for slot in ("_input_shape", "_vars", "_forward", "_thread", "_replicate", "_tag"):
            object.__setattr__(obj, slot, getattr(self, slot))
        object.__setattr__(obj, "_thread_range", thread_range)
        object.__setattr__(obj, "_cache", {k: v for k, v in self._cache.items() if k in _RANGE_FREE_CACHE})
        return obj

    # ---- evaluation ---------------------------------------------------------------------------
    def map_forward_thread(self, coord: Sequence[int | Expr], rep: int | Expr = 0) -> int | Expr:
        """Thread of replica ``rep`` of ``coord`` (ints in, int out; expressions in, expression out)."""
        coord = coordinate_tuple(coord, len(self.input_shape), self.describe())
        if all(isinstance(c, (int, np.integer)) for c in coord) and isinstance(rep, (int, np.integer)):
            if not all(0 <= c < e for c, e in zip(coord, self.input_shape)):
                raise CoordinateError(f"coordinate {coord} is outside the input shape {self.input_shape} of "
                                      f"{self.describe()}")
            return int(self.apply_thread(np.asarray(coord, dtype=np.int64), rep=self._rep_index(int(rep))))
        mapping = {v: as_expr(c) for v, c in zip(self.forward_vars, coord)}
        mapping[self.rep_var] = as_expr(rep)
        return substitute(self._thread, mapping)

    def apply_thread(self, coords: ArrayLike, rep: int | None = 0) -> NDArray[np.int64]:
        """Threads of an int array of coordinates ``[..., n]`` -> ``[...]`` for one replica, or
        ``[R, ...]`` for every replica when ``rep is None``.

        >>> import layoutkit as lk
        >>> F = lk.Fragment([4, 4], forward_thread_fn=lambda i, j, r: j * 2 + r, replicate=2)
        >>> F.apply_thread([[0, 1], [2, 3]]).tolist(), F.apply_thread([[2, 3]], rep=None).tolist()
        ([2, 6], [[6], [7]])
        """
        flat, lead = self._flat_coords(coords)
        reps = range(self._replicate) if rep is None else [self._rep_index(rep)]
        variables = self.forward_vars + (self.rep_var,)
        cols = [flat[:, d] for d in range(flat.shape[1])]
        # the replica is one shared value (a 0-d column), not a filled array per coordinate
        outs = [
            evaluate_columns((self._thread,), variables, [*cols, np.array(r)], in_range=True)[:, 0].reshape(lead)
            for r in reps
        ]
        return outs[0] if rep is not None else np.stack(outs)

    def _rep_index(self, rep: int) -> int:
        if isinstance(rep, bool) or not isinstance(rep, (int, np.integer)) or not 0 <= rep < self._replicate:
            raise ShapeError(f"replica {rep!r} is outside [0, {self._replicate}) of {self.describe()}")
        return int(rep)

    def thread_table(self) -> NDArray[np.int64]:
        """Threads of every replica of every coordinate: shape ``(replicate,) + input_shape``."""
        hit = self._cache.get("thread_table")
        if hit is None:
            run = compile_numpy((self._thread,), self.forward_vars + (self.rep_var,))
            g = [c[None, ...] for c in enumerable_grid(self.input_shape, lambda: f"thread table of {self.describe()}",
                                                        self._replicate)]
            rep = np.arange(self._replicate, dtype=np.int64).reshape((-1,) + (1,) * len(self.input_shape))
            (t,) = run(*g, rep)
            hit = np.broadcast_to(t, (self._replicate,) + self.input_shape)
            hit.setflags(write=False)
            self._cache["thread_table"] = hit
        return hit

    def index_table(self) -> NDArray[np.intp]:
        """Register index (row-major over ``output_shape``) of every coordinate."""
        return self.linear_table()

    # ---- algebra --------------------------------------------------------------------------------
    def repeat(  # type: ignore[override]  # TileLang's Fragment.repeat takes per-dim repeats
        self, repeats: Sequence[int], repeat_on_thread: bool = False, lower_dim_first: bool = True
    ) -> Fragment:
        """Tile the fragment ``repeats[d]`` times along each dim.

        Each coordinate is taken modulo the old shape; the repeat number ``ri`` is the mixed-radix
        number of ``x_d // shape_d`` (``lower_dim_first``: the last dim is fastest).  On threads:
        ``thread += thread_extent * ri``; otherwise ``index[0] += output_shape[0] * ri`` (1-D index).
        """
        from . import transforms

        return transforms.repeat(self, repeats, repeat_on_thread, lower_dim_first)

    def replicate(self, k: int) -> Fragment:
        """``k`` times more replicas: ``thread'(rep) = thread(rep % R) + thread_extent * (rep // R)``."""
        from . import transforms

        return transforms.replicate(self, k)

    def condense_rep_var(self) -> Fragment:
        """Keep only the digits of ``_rep`` the thread map reads: ``_rep % 2 * 32`` with R=4
        becomes ``_rep * 32`` with R=2.

        As TileLang's ``CondenseReplicateVar`` does, when the thread map is a sum of ``_rep``
        digits, the digit with the largest thread stride becomes the lowest digit of the new
        ``_rep`` (this fixes the replica order, not just the set of threads), even when no digit
        is dropped:

        >>> f = Fragment.from_exprs([4], None, rep_var(64) // 32 * 32 + rep_var(64) % 8 * 4 + Var("_i", 4), 64)
        >>> print(f.condense_rep_var().forward_thread)
        _rep % 2 * 32 + _rep // 2 * 4 + _i
        >>> g = Fragment.from_exprs([8], None, rep_var(16) // 8 * 64 + Var("_i", 8) * 8 + rep_var(16) % 8, 16)
        >>> print(g.condense_rep_var().forward_thread)
        _rep % 2 * 64 + _i * 8 + _rep // 2
        """
        from . import transforms

        return transforms.condense_rep_var(self)

    def reshape(self, shape: Sequence[int], rescale_num: int = 1, rescale_den: int = 1) -> Fragment:
        """Reshape both the index and the thread map (row-major flattening on both sides)."""
        from . import transforms

        return transforms.reshape(self, shape, rescale_num, rescale_den)

    def expand(self, leading_shape: Sequence[int]) -> Fragment:
        """Prepend dims that pass through as leading index outputs.  Unlike TileLang (whose
        ``Fragment.expand`` returns a plain Layout and drops the thread map), the thread map is
        kept: the new leading dims stay in the same thread."""
        from . import transforms

        return transforms.expand(self, leading_shape)

    def inverse(self) -> Layout:
        """Inverse of ``[coords..., rep] -> [index..., thread]``: a Layout from
        ``output_shape + (thread_extent,)`` to ``input_shape + (replicate,)``."""
        n = len(self.input_shape)
        rep_dim = placeholder(n, self._replicate)
        thread = substitute(self._thread, {self.rep_var: rep_dim})
        return Layout.from_exprs(self.input_shape + (self._replicate,), self.forward_index + (thread,)).inverse()

    def to_linear(self, lanes: int = 32) -> F2Linear:
        """Triton's distributed view ``(register, lane, warp) -> (dim0, dim1, ...)`` (see
        :mod:`layoutkit.fragment.linear`); :class:`~layoutkit.errors.NotLinearError` saying why when it
        does not exist.  The index map alone, as for a plain Layout, is ``Layout.to_linear(F)``.

        >>> from layoutkit.targets import nv
        >>> C = nv.make_mma_store_layout(1, 1, 16, 16)
        >>> C.to_linear().in_dims
        (('register', 8), ('lane', 32), ('warp', 1))
        >>> Fragment.from_linear(C.to_linear()).is_equal(C)
        True
        """
        from .linear import fragment_to_linear

        return fragment_to_linear(self, lanes)

    @classmethod
    def from_linear(  # type: ignore[override]  # slot view in, Fragment out
        cls, view: F2Linear, input_shape: Sequence[int] | None = None
    ) -> Fragment:
        """The fragment of a Triton distributed layout (in dims ``register``, ``lane``, ``warp``)."""
        from .linear import fragment_from_linear

        return fragment_from_linear(view, None if input_shape is None else tuple(input_shape))

    def is_fully_replicated(self) -> bool:
        """True when every thread in ``[0, thread_extent)`` holds every element."""
        t = np.sort(self.thread_table().reshape(self._replicate, -1), axis=0)
        return self._replicate == self.thread_extent and bool(
            np.all(t == np.arange(self._replicate)[:, None])
        )

    def contains(self, other: Fragment) -> Proof:
        """Prove that every replica of every element of ``other`` lives in a thread that also
        holds that element here (so ``self`` can replace ``other``).  A fully replicated ``self``
        contains everything, as in TileLang.  Decided by exhaustive enumeration."""
        from . import proofs

        return proofs.contains(self, other)

    def prove_injective(self) -> Proof:
        """Every (thread, register) slot holds at most one element (replicas included)."""
        from . import proofs

        return proofs.prove_injective(self)

    # ---- registers ------------------------------------------------------------------------------
    def distribute(self, tile: ArrayLike, fill: object = 0) -> NDArray[Any]:
        """Per-thread registers ``[thread_extent, local_size]`` holding ``tile`` (every replica)."""
        tile = np.asarray(tile)
        if tile.shape != self.input_shape:
            raise ShapeError(f"tile shape {tile.shape} != fragment input shape {self.input_shape}")
        regs = np.full((self.thread_extent, self.local_size), fill, dtype=tile.dtype)
        threads = self.thread_table().reshape(self._replicate, -1)
        regs[threads, self.index_table().reshape(1, -1)] = tile.reshape(1, -1)
        return regs

    def collect(self, registers: ArrayLike, rep: int = 0) -> NDArray[Any]:
        """The tile read back from per-thread registers (replica ``rep``)."""
        regs = np.asarray(registers)
        threads = self.thread_table()[self._rep_index(rep)]
        out: NDArray[Any] = regs[threads, self.index_table()]
        return out

    # ---- identity and text ------------------------------------------------------------------------
    def is_equal(self, other: Layout) -> bool:
        """Semantic equality: same input shape, same register index everywhere, and the same set
        of threads for every element.  TileLang's ``Fragment.is_equal`` says True for different
        input shapes and compares text; layoutkit does not copy that."""
        if not isinstance(other, Fragment) or other.input_shape != self.input_shape:
            return False
        if not Layout.is_equal(self, other):
            return False
        a = np.sort(self.thread_table().reshape(self._replicate, -1), axis=0)
        b = np.sort(other.thread_table().reshape(other.replicate_size, -1), axis=0)
        return a.shape == b.shape and bool(np.array_equal(a, b))

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Fragment)
            and type(other) is type(self)
            and Layout.__eq__(self, other)
            and other._thread == self._thread
            and other._replicate == self._replicate
            and other._thread_range == self._thread_range
        )

    def __hash__(self) -> int:
        return hash((Layout.__hash__(self), self._thread, self._replicate, self._thread_range))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Fragment.from_exprs, (self.input_shape, self.forward_index, self._thread, self._replicate,
                                        self._thread_range))

    def describe(self) -> str:
        return (f"Fragment{list(self.input_shape)} thread {self._thread}, index "
                f"{[str(e) for e in self.forward_index]}, replicate {self._replicate}")

    def __str__(self) -> str:
        try:
            out, threads = list(self.output_shape), self.thread_extent
        except LayoutError:
            return self.describe()
        text = (f"Fragment({tuple_text(self.input_shape)} -> {tuple_text(out)}, replicate: {self._replicate}, "
                f"thread: {threads}, forward_thread: {self._thread}, forward_index: {tuple_text(self.forward_index)}")
        if self._thread_range is not None:
            start, extent = self._thread_range
            text += f", thread_range: [{start}, {start + extent})"
        return text + ")"

    __repr__ = __str__

    def text(self) -> str:
        """The four-line view: Shape / Thread / Index / Replicate."""
        bound = "" if self._thread_range is None else f", bound to threads {self._thread_range}"
        return "\n".join([
            f"Shape:     {list(self.input_shape)} -> {list(self.output_shape)} registers per thread",
            f"Thread:    {self._thread}  (extent {self.thread_extent}{bound})",
            f"Index:     {', '.join(str(e) for e in self.forward_index)}",
            f"Replicate: {self._replicate}",
        ])


def make_fully_replicated_fragment(shape: Sequence[int], threads: int) -> Fragment:
    """Every one of ``threads`` threads holds the whole buffer (thread ``_rep``, index = coords
    row-major), bound to threads ``[0, threads)``.

    >>> print(make_fully_replicated_fragment([4], 128))
    Fragment((4,) -> (4,), replicate: 128, thread: 128, forward_thread: _rep, forward_index: (_i,), \
thread_range: [0, 128))
    """
    shape = check_shape(shape, "fully replicated fragment shape")
    threads = positive_int(threads, "threads")
    variables = [placeholder(d, e) for d, e in enumerate(shape)]
    flat: Expr = Const(0)
    stride = 1
    for v, e in zip(reversed(variables), reversed(shape)):
        flat = add(flat, scale(v, stride))
        stride *= e
    return Fragment.from_exprs(shape, (flat,), rep_var(threads), threads, (0, threads))
