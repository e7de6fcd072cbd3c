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
does not use (``docs/reference.md#fragment-index-derivation``):

>>> G = lk.Fragment([16, 16], forward_thread_fn=lambda i, j: i % 8 * 4 + j % 8 // 2)
>>> print(G.forward_index[0])
_i // 8 * 4 + _j // 8 * 2 + _j % 2

The module holds the type and what its methods need: the derived fragments (tiling, replication, reshaping),
the proofs of where elements live, and the Triton distributed (F2) view.

Proofs

Proofs about where a fragment's elements live: containment of one fragment in another, and
injectivity (one element per thread register).

>>> F = Fragment([4, 4], forward_thread_fn=lambda i, j: j, forward_index_fn=lambda i, j: i)
>>> injective_proof(F).verdict, contains_proof(F, F).verdict
(True, True)

The F2 view

Fragments as Triton distributed linear layouts: ``(register, lane, warp) -> tensor coordinate``.

A Triton distributed layout maps each hardware slot (register ``r`` of lane ``l`` of warp ``w``) to
the tensor element it holds; broadcast (several threads holding one element) is a non-injective map.
A :class:`~layoutkit.Fragment` maps the other way, element (and replica) to ``(thread, register)``
with ``thread = lane + lanes * warp``.  The two views describe the same placement when every slot
holds exactly one element, the extents are powers of two and the map is F2-linear.

>>> import layoutkit as lk
>>> F = lk.Fragment([4, 8], forward_thread_fn=lambda i, j: i * 4 + j // 2, forward_index_fn=lambda i, j: j % 2)
>>> f2 = F.to_linear(lanes=8)
>>> f2.in_dims, f2.out_dims
((('register', 2), ('lane', 8), ('warp', 2)), (('dim0', 4), ('dim1', 8)))
>>> f2.bases[0], f2.bases[1]
(((0, 1),), ((0, 2), (0, 4), (1, 0)))
>>> lk.Fragment.from_linear(f2).is_equal(F)
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..algebra.bits import log2_exact
from ..algebra.distinct import member, sorted_distinct
from ..algebra.evaluate import compile_numpy, evaluate_columns
from ..algebra.f2_reasons import not_linear_reason
from ..algebra.layout import DESCRIBE_CHARS, Layout
from ..algebra.linear import F2Linear
from ..algebra.linear_exprs import expressions_from_bases
from ..algebra.nodes import (
    Const,
    Expr,
    Var,
    add,
    as_expr,
    floordiv,
    floormod,
    free_vars,
    linear,
    make_split,
    scale,
    split_view,
    substitute,
    text_prefix,
    tuple_text,
)
from ..algebra.proof import Proof
from ..algebra.shapes import (
    check_shape,
    coordinate_tuple,
    enumerable_grid,
    flat_coords,
    normalize_outputs,
    placeholder,
    positive_int,
    reshape_mapping,
    sequence_arg,
)
from ..errors import (
    CoordinateError,
    ExprError,
    LayoutError,
    NotBijectiveError,
    NotLinearError,
    ShapeError,
    UnsupportedError,
)
from .arguments import call_index, call_thread_fn, check_thread_range, one_thread
from .splits import digit_extent, flatten_digits, unused_digits, used_digits

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
            result = call_thread_fn(forward_fn, variables, rep, "Fragment forward_fn")
            if not (isinstance(result, (tuple, list)) and len(result) == 2):
                raise ExprError("Fragment forward_fn must return (thread, index)")
            thread = one_thread(normalize_outputs(result[0], "Fragment forward_fn thread"))
            index = normalize_outputs(result[1], "Fragment forward_fn index")
        elif forward_thread_fn is not None:
            if callable(forward_thread_fn):
                called = call_thread_fn(forward_thread_fn, variables, rep, "forward_thread_fn")
                thread = one_thread(normalize_outputs(called, "forward_thread_fn"))
            else:
                thread = as_expr(forward_thread_fn)
        else:
            raise ExprError("Fragment needs forward_thread_fn (or forward_fn returning (thread, index))")
        if forward_index_fn is not None:
            if callable(forward_index_fn):
                index = call_index(forward_index_fn, variables)
            else:
                index = normalize_outputs(forward_index_fn, "Fragment forward index")
        self.initialize_fragment(shape, thread, replicate, index, thread_range)

    def initialize_fragment(self, shape: tuple[int, ...], thread: Expr, replicate: int, index: Sequence[Expr] | None,
                            thread_range: object) -> None:
        """Set the fields of a new fragment (its constructors and its subclasses' call it once, on an object
        not yet shared): the layout part, then the thread map, the replica count and the thread range."""
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
        self.initialize(shape, variables, tuple(index))
        object.__setattr__(self, "_thread", thread)
        object.__setattr__(self, "_replicate", replicate)
        object.__setattr__(self, "_thread_range", check_thread_range(thread_range))

    @classmethod
    def from_exprs(
        cls, input_shape: Sequence[int], index: Sequence[Expr | int] | None, thread: Expr | int | None = None,
        replicate: int = 1, thread_range: tuple[int, int] | None = None,
    ) -> Fragment:
        """Build from expressions over the placeholders ``_i, _j, ...`` and ``_rep``."""
        if thread is None:
            raise ExprError("Fragment.from_exprs needs a thread expression")
        obj = cls.__new__(cls)
        obj.initialize_fragment(check_shape(input_shape), as_expr(thread), positive_int(replicate, "replicate"),
                           None if index is None else tuple(as_expr(e) for e in sequence_arg(
                               index, "Fragment.from_exprs index")), thread_range)
        return obj

    def rebuild(self, **changes: Any) -> Fragment:
        """A copy with some of the constructor arguments replaced (``input_shape``, ``index``, ``thread``,
        ``replicate``, ``thread_range``)."""
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
        hit = self.memo.get("thread_extent")
        if hit is None:
            t = self.thread_table()
            if t.min() < 0:
                raise LayoutError(f"{self.describe()}: the thread map is negative somewhere (min {t.min()})")
            hit = int(t.max()) + 1
            self.memo["thread_extent"] = hit
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
        >>> G == F.rebuild(thread_range=(32, 64))
        True
        """
        thread_range = check_thread_range((start, extent))
        obj = Fragment.__new__(Fragment)
        for slot in ("_input_shape", "_vars", "_forward", "_thread", "_replicate", "_tag"):
            object.__setattr__(obj, slot, getattr(self, slot))
        object.__setattr__(obj, "_thread_range", thread_range)
        object.__setattr__(obj, "_cache", {k: v for k, v in self.memo.items() if k in _RANGE_FREE_CACHE})
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
        flat, lead = flat_coords(coords, self.input_shape, self.describe)
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
        hit = self.memo.get("thread_table")
        if hit is None:
            run = compile_numpy((self._thread,), self.forward_vars + (self.rep_var,))
            g = [c[None, ...] for c in enumerable_grid(self.input_shape, lambda: f"thread table of {self.describe()}",
                                                        self._replicate)]
            rep = np.arange(self._replicate, dtype=np.int64).reshape((-1,) + (1,) * len(self.input_shape))
            (t,) = run(*g, rep)
            hit = np.broadcast_to(t, (self._replicate,) + self.input_shape)
            hit.setflags(write=False)
            self.memo["thread_table"] = hit
        return hit

    def index_table(self) -> NDArray[np.intp]:
        """Register index (row-major over ``output_shape``) of every coordinate (read-only, built once per
        fragment: the proofs and the bank model read it again and again)."""
        hit = self.memo.get("index_table")
        if hit is None:
            hit = self.linear_table()
            hit.setflags(write=False)
            self.memo["index_table"] = hit
        return hit

    # ---- algebra --------------------------------------------------------------------------------
    def repeat(  # type: ignore[override]  # TileLang's Fragment.repeat takes per-dim repeats
        self, repeats: Sequence[int], repeat_on_thread: bool = False, lower_dim_first: bool = True
    ) -> Fragment:
        """Tile the fragment ``repeats[d]`` times along each dim.

        Each coordinate is taken modulo the old shape; the repeat number ``ri`` is the mixed-radix
        number of ``x_d // shape_d`` (``lower_dim_first``: the last dim is fastest).  On threads:
        ``thread += thread_extent * ri``; otherwise ``index[0] += output_shape[0] * ri`` (1-D index).
        """
        return repeat_fragment(self, repeats, repeat_on_thread, lower_dim_first)

    def replicate(self, k: int) -> Fragment:
        """``k`` times more replicas: ``thread'(rep) = thread(rep % R) + thread_extent * (rep // R)``."""
        return replicate_fragment(self, k)

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
        return condense_fragment_rep(self)

    def reshape(self, shape: Sequence[int], rescale_num: int = 1, rescale_den: int = 1) -> Fragment:
        """Reshape both the index and the thread map (row-major flattening on both sides)."""
        return reshape_fragment(self, shape, rescale_num, rescale_den)

    def expand(self, leading_shape: Sequence[int]) -> Fragment:
        """Prepend dims that pass through as leading index outputs.  Unlike TileLang (whose
        ``Fragment.expand`` returns a plain Layout and drops the thread map), the thread map is
        kept: the new leading dims stay in the same thread."""
        return expand_fragment(self, leading_shape)

    def inverse(self) -> Layout:
        """Inverse of ``[coords..., rep] -> [index..., thread]``: a Layout from
        ``output_shape + (thread_extent,)`` to ``input_shape + (replicate,)``."""
        n = len(self.input_shape)
        rep_dim = placeholder(n, self._replicate)
        thread = substitute(self._thread, {self.rep_var: rep_dim})
        return Layout.from_exprs(self.input_shape + (self._replicate,), self.forward_index + (thread,)).inverse()

    def to_linear(self, lanes: int = 32) -> F2Linear:
        """Triton's distributed view ``(register, lane, warp) -> (dim0, dim1, ...)`` (see
        the module doc); :class:`~layoutkit.errors.NotLinearError` saying why when it
        does not exist.  The index map alone, as for a plain Layout, is ``Layout.to_linear(F)``.

        >>> from layoutkit.targets import nv
        >>> C = nv.make_mma_store_layout(1, 1, 16, 16)
        >>> C.to_linear().in_dims
        (('register', 8), ('lane', 32), ('warp', 1))
        >>> Fragment.from_linear(C.to_linear()).is_equal(C)
        True
        """
        return fragment_to_linear(self, lanes)

    @classmethod
    def from_linear(  # type: ignore[override]  # slot view in, Fragment out
        cls, view: F2Linear, input_shape: Sequence[int] | None = None
    ) -> Fragment:
        """The fragment of a Triton distributed layout (in dims ``register``, ``lane``, ``warp``)."""
        if not isinstance(view, F2Linear):
            raise ShapeError(f"Fragment.from_linear: expected an F2Linear with in dims register / lane / warp; found "
                             f"{type(view).__name__} {view!r:.60}")
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
        return contains_proof(self, other)

    def prove_injective(self) -> Proof:
        """Every (thread, register) slot holds at most one element (replicas included)."""
        return injective_proof(self)

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
        """The tile read back from per-thread registers (replica ``rep``): ``registers[thread, register]``, at
        least as many threads as the fragment reaches and ``local_size`` registers each (what :meth:`distribute`
        returns); a smaller array raises :class:`~layoutkit.errors.ShapeError`."""
        regs = np.asarray(registers)
        threads = self.thread_table()[self._rep_index(rep)]
        need = (int(threads.max()) + 1 if threads.size else 0, self.local_size)
        if regs.ndim < 2 or regs.shape[0] < need[0] or regs.shape[1] < need[1]:
            raise ShapeError(f"collect: expected registers of shape (threads >= {need[0]}, registers >= {need[1]}) "
                             f"for {self.describe()}; found shape {regs.shape}")
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
        """The printed form (``str(fragment)``) for error messages, without evaluating the maps: the
        register shape and thread extent show when known without enumerating (else ``?``), each
        expression's text is cut after ``DESCRIBE_CHARS`` characters."""
        extent = self.memo.get("thread_extent")
        return self.printed_fragment(self.known_output_shape(), "?" if extent is None else extent,
                            text_prefix(self._thread, DESCRIBE_CHARS),
                            [text_prefix(e, DESCRIBE_CHARS) for e in self.forward_index])

    def printed_fragment(self, output_shape: Sequence[int] | None, threads: object, thread: object,
                         index: Sequence[object]) -> str:
        """The one printed form of a fragment, shared by ``str`` and :meth:`describe`."""
        out = "(?)" if output_shape is None else tuple_text(output_shape)
        text = (f"Fragment({tuple_text(self.input_shape)} -> {out}, replicate: {self._replicate}, "
                f"thread: {threads}, forward_thread: {thread}, forward_index: {tuple_text(index)}")
        if self._thread_range is not None:
            start, extent = self._thread_range
            text += f", thread_range: [{start}, {start + extent})"
        return text + ")"

    def __str__(self) -> str:
        try:
            out, threads = self.output_shape, self.thread_extent
        except LayoutError:
            return self.describe()
        return self.printed_fragment(out, threads, self._thread, self.forward_index)

    __repr__ = __str__

    def text(self) -> str:
        """The four-line view: Shape / Thread / Index / Replicate."""
        if self._thread_range is None:
            bound = ""
        else:
            start, extent = self._thread_range
            bound = f", bound to threads [{start}, {start + extent})"
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


def repeat_fragment(
    fragment: Fragment, repeats: Sequence[int], repeat_on_thread: bool = False, lower_dim_first: bool = True
) -> Fragment:
    """``fragment.repeat(repeats, ...)``: the fragment tiled ``repeats[d]`` times along each dim."""
    if isinstance(repeats, (int, np.integer)) and not isinstance(repeats, bool):
        given: tuple[object, ...] = (repeats,)
    elif isinstance(repeats, Sequence) and not isinstance(repeats, (str, bytes)):
        given = tuple(repeats)
    else:
        raise ShapeError(f"repeat needs a sequence of positive factors, one per input dim; found {repeats!r}")
    if len(given) != len(fragment.input_shape):
        raise ShapeError(f"repeat needs one factor per input dim ({len(fragment.input_shape)}); found {given}")
    reps = tuple(positive_int(r, "repeat factor") for r in given)
    shape = tuple(e * r for e, r in zip(fragment.input_shape, reps))
    new_vars = [placeholder(d, e) for d, e in enumerate(shape)]
    mapping = {v: floormod(nv, Const(e)) for v, nv, e in zip(fragment.forward_vars, new_vars, fragment.input_shape)}
    order = range(len(shape) - 1, -1, -1) if lower_dim_first else range(len(shape))
    ri: Expr = Const(0)
    stride = 1
    for d in order:
        ri = add(ri, scale(floordiv(new_vars[d], Const(fragment.input_shape[d])), stride))
        stride *= reps[d]
    index = [substitute(e, mapping) for e in fragment.forward_index]
    thread = substitute(fragment._thread, mapping)
    if repeat_on_thread:
        thread = add(thread, scale(ri, fragment.thread_extent))
    else:
        if len(index) != 1:
            raise ShapeError(f"repeat on the index needs a 1-D index; {fragment.describe()} has {len(index)} dims")
        index[0] = add(index[0], scale(ri, fragment.output_shape[0]))
    return Fragment.from_exprs(shape, index, thread, fragment._replicate)


def replicate_fragment(fragment: Fragment, k: int) -> Fragment:
    """``fragment.replicate(k)``: ``k`` times more replicas."""
    k = positive_int(k, "replicate factor")
    r = fragment._replicate
    new_rep = rep_var(r * k)
    thread = substitute(fragment._thread, {fragment.rep_var: floormod(new_rep, Const(r))})
    thread = add(thread, scale(floordiv(new_rep, Const(r)), fragment.thread_extent))
    return Fragment.from_exprs(fragment.input_shape, fragment.forward_index, thread, r * k)


def condense_fragment_rep(fragment: Fragment) -> Fragment:
    """``fragment.condense_rep_var()``: only the digits of ``_rep`` the thread map reads."""
    rep = fragment.rep_var
    if rep not in free_vars(fragment._thread):
        return fragment.rebuild(thread=fragment._thread, replicate=1)
    terms, _ = linear(fragment._thread)
    rep_terms = [(atom, coeff) for atom, coeff in terms.items() if rep in free_vars(atom)]
    pure_digits = all(split_view(atom)[0] == rep for atom, _ in rep_terms)
    if pure_digits:
        # TileLang order: larger thread stride -> lower digit of the new _rep
        digits = sorted(((abs(c), *split_view(a)[1:], a) for a, c in rep_terms), key=lambda d: -d[0])
        atoms = [d[3] for d in digits]
        extents = [digit_extent((rep, lo, up if up is not None else fragment._replicate)) for _, lo, up, _ in digits]
    else:
        used = sorted(set(used_digits(fragment._thread, (rep,))[rep]))
        merged: list[tuple[int, int]] = []
        for lo, up in used:
            if merged and lo < merged[-1][1]:
                merged[-1] = (merged[-1][0], max(up, merged[-1][1]))
            else:
                merged.append((lo, up))
        atoms = [make_split(rep, lo, None if up >= fragment._replicate else up) for lo, up in merged]
        extents = [digit_extent((rep, lo, up)) for lo, up in merged]
    new_r = math.prod(extents)
    if new_r > fragment._replicate or (new_r == fragment._replicate and not pure_digits):
        # nothing to drop, and no digits to re-order
        return fragment
    # a stand-in for the new _rep, which may equal the old one (same extent)
    fresh = Var("_rep_condensed", new_r)
    mapping: dict[Expr, Expr] = {}
    stride = 1
    for atom, ext in zip(atoms, extents):
        digit = floordiv(fresh, Const(stride))
        mapping[atom] = digit if stride * ext >= new_r else floormod(digit, Const(ext))
        stride *= ext
    thread = substitute(fragment._thread, mapping)
    if rep in free_vars(thread):
        raise LayoutError(f"cannot condense _rep in {fragment._thread}: it is read other than through digits")
    thread = substitute(thread, {fresh: rep_var(new_r)})
    if new_r == fragment._replicate and thread == fragment._thread:
        return fragment
    return fragment.rebuild(thread=thread, replicate=new_r)


def reshape_fragment(fragment: Fragment, shape: Sequence[int], rescale_num: int = 1, rescale_den: int = 1) -> Fragment:
    """``fragment.reshape(shape)``: index and thread map reshaped (no change of element width)."""
    if rescale_num != rescale_den:
        raise ShapeError("Fragment.reshape does not change element widths; reshape a plain Layout for that")
    new_shape = check_shape(shape, "reshape shape")
    if math.prod(new_shape) != fragment.size:
        raise ShapeError(f"reshape of {fragment.input_shape} to {new_shape}: {fragment.size} != {math.prod(new_shape)}")
    mapping = reshape_mapping(fragment.input_shape, new_shape)
    index = tuple(substitute(e, mapping) for e in fragment.forward_index)
    return Fragment.from_exprs(new_shape, index, substitute(fragment._thread, mapping), fragment._replicate,
                                 fragment._thread_range)


def expand_fragment(fragment: Fragment, leading_shape: Sequence[int]) -> Fragment:
    """``fragment.expand(leading_shape)``: leading dims passed through as leading index outputs."""
    lead = check_shape(leading_shape, "expand leading shape")
    shape = lead + fragment.input_shape
    new_vars = [placeholder(d, e) for d, e in enumerate(shape)]
    mapping = {v: new_vars[len(lead) + d] for d, v in enumerate(fragment.forward_vars)}
    index = tuple(new_vars[: len(lead)]) + tuple(substitute(e, mapping) for e in fragment.forward_index)
    return Fragment.from_exprs(shape, index, substitute(fragment._thread, mapping), fragment._replicate,
                                 fragment._thread_range)


MASK_LIMIT = 1 << 26  # cells of the (thread, element) mask before the sort-based test takes over


def contains_proof(fragment: Fragment, other: Fragment) -> Proof:
    """``fragment.contains(other)``: every replica of ``other`` lives where ``fragment`` holds it."""
    claim = "contains"
    if not isinstance(other, Fragment):
        raise LayoutError(f"contains expects a Fragment, found {type(other).__name__}")
    if other.input_shape != fragment.input_shape:
        return Proof(claim, False, "enumerate", {"shape": (fragment.input_shape, other.input_shape)},
                     detail="different input shapes")
    if fragment.is_fully_replicated():
        return Proof(claim, True, "enumerate", detail="the containing fragment is fully replicated")
    big = fragment.thread_table().reshape(fragment._replicate, -1)
    small = other.thread_table().reshape(other.replicate_size, -1)
    if big.shape[0] * small.shape[0] <= 256:
        # few replicas: compare each small replica with every large one, element-wise
        ok = np.zeros(small.shape, dtype=bool)
        for row in big:
            ok |= small == row
    else:
        width = int(max(big.max(), small.max())) + 1
        x = np.arange(big.shape[1], dtype=np.int64)
        if width * big.shape[1] <= MASK_LIMIT:
            # a (thread, element) mask: one scatter and one gather, no sort
            held = np.zeros((width, big.shape[1]), dtype=bool)
            held[big, x] = True
            ok = held[small, x]
        else:
            ok = member(small + x * width, sorted_distinct(big + x * width))
    if ok.all():
        return Proof(claim, True, "enumerate", detail=f"{small.size} (element, thread) pairs")
    r, flat = np.argwhere(~ok)[0]
    coord = tuple(int(v) for v in np.unravel_index(int(flat), fragment.input_shape))
    return Proof(claim, False, "enumerate",
                 {"missing": (coord, int(r), int(small[r, flat]), sorted(set(big[:, flat].tolist())))},
                 detail="element (coord) of replica r is on a thread that does not hold it here")


def injective_proof(fragment: Fragment) -> Proof:
    """``fragment.prove_injective()``: at most one element per (thread, register) slot."""
    claim = "injective (one element per thread register)"
    threads = fragment.thread_table().reshape(fragment._replicate, -1)
    index = fragment.index_table().reshape(1, -1)
    keys = threads * fragment.local_size + index
    flat = keys.ravel()
    order = np.argsort(flat, kind="stable")
    dup = np.flatnonzero(flat[order][1:] == flat[order][:-1])
    if dup.size == 0:
        return Proof(claim, True, "enumerate", detail=f"{flat.size} slots")
    a, b = order[dup[0]], order[dup[0] + 1]
    n = threads.shape[1]

    def where(k: int) -> tuple[tuple[int, ...], int]:
        r, x = divmod(int(k), n)
        return tuple(int(v) for v in np.unravel_index(x, fragment.input_shape)), r

    (xa, ra), (xb, rb) = where(a), where(b)
    slot = (int(threads.ravel()[a]), int(index.ravel()[a % n]))
    return Proof(claim, False, "enumerate", {"collision": ((xa, ra), (xb, rb), slot)})


SLOT_DIMS = ("register", "lane", "warp")
"""Triton's in-dim names of a distributed layout, low to high."""


def fragment_to_linear(fragment: Fragment, lanes: int = 32) -> F2Linear:
    """``(register, lane, warp) -> (dim0, dim1, ...)``.  ``lanes``: threads per warp (32 on NVIDIA,
    ``targets.nv.WARP_SIZE``); fewer threads than that make one partial warp.  Raises
    :class:`~layoutkit.errors.NotLinearError` saying why there is no such view: an extent that is not a
    power of two, a slot that holds no element or two (``witness``: ``(register, thread)``), or a
    placement that is not F2-linear (``witness``: the slot)."""
    regs, threads = fragment.local_size, fragment.thread_extent
    lane_size = min(threads, lanes)
    what = fragment.describe()
    sizes = {"registers per thread": regs, "threads": threads, "lanes": lanes,
             **{f"input dim {d}": e for d, e in enumerate(fragment.input_shape)}}
    odd = [f"{name} = {n}" for name, n in sizes.items() if log2_exact(n) is None]
    if odd:
        raise NotLinearError(f"{what} has no Triton linear view: {', '.join(odd)}, not a power of two")
    ndim = len(fragment.input_shape)
    thread = fragment.thread_table().reshape(fragment.replicate_size, -1)
    index = np.broadcast_to(fragment.index_table().reshape(1, -1), thread.shape)
    coords = np.moveaxis(np.indices(fragment.input_shape), 0, -1).reshape(1, -1, ndim)
    coords = np.broadcast_to(coords, thread.shape + (ndim,))
    slot = (index * threads + thread).reshape(-1)  # register-major flat slot of every (replica, element)
    held = np.zeros(regs * threads, dtype=np.int64)
    np.add.at(held, slot, 1)
    if np.any(held != 1):
        k = int(np.flatnonzero(held != 1)[0])
        reg, t = divmod(k, threads)
        kind = "holds no element" if held[k] == 0 else f"holds {int(held[k])} elements"
        raise NotLinearError(f"{what} has no Triton linear view: register {reg} of thread {t} {kind} (a linear "
                             "layout maps every slot to exactly one element)", (reg, t))
    table = np.zeros((regs * threads, ndim), dtype=np.int64)
    table[slot] = coords.reshape(-1, ndim)
    # flat slot = register * threads + warp * lane_size + lane: reorder to [register, lane, warp]
    grid = table.reshape(regs, threads // lane_size, lane_size, ndim).transpose(0, 2, 1, 3)
    view = F2Linear.from_table(grid, SLOT_DIMS, [f"dim{d}" for d in range(ndim)])
    if view is None:
        reason, witness = not_linear_reason(grid, SLOT_DIMS)
        raise NotLinearError(f"{what} has no Triton linear view: the placement is not F2-linear: {reason}", witness)
    return F2Linear(view.in_dims, tuple((n, e) for (n, _), e in zip(view.out_dims, fragment.input_shape)), view.bases)


def _slot_map(view: F2Linear) -> F2Linear:
    """``view`` with in dims exactly ``register, lane, warp`` in that order (missing ones of size 1)."""
    unknown = [n for n in view.in_names if n not in SLOT_DIMS]
    if unknown or "lane" not in view.in_names:
        raise ShapeError(f"expected in dims among {SLOT_DIMS} (with 'lane'); found {list(view.in_names)}")
    pad = [(n, 1) for n in SLOT_DIMS if n not in view.in_names]
    if pad:
        view = view.concat_ins(F2Linear(tuple(pad), view.out_dims, tuple(() for _ in pad)))
    return view.transpose_ins(list(SLOT_DIMS))


def fragment_from_linear(view: F2Linear, input_shape: tuple[int, ...] | None = None) -> Fragment:
    """The fragment placing element ``x`` (replica ``rep``) in every slot ``view`` maps to ``x``.

    Replicas are the slots a broadcast (free lane/warp variables) sends to one element; the replica
    number's bits select among them.  Raises :class:`~layoutkit.NotBijectiveError` when some element
    is held by no slot, :class:`~layoutkit.UnsupportedError` when one thread holds an element in two
    registers (a Fragment keeps one register index per element).
    """
    m = _slot_map(view)
    shape = tuple(s for _, s in m.out_dims) if input_shape is None else tuple(int(e) for e in input_shape)
    if shape != tuple(s for _, s in m.out_dims):
        raise ShapeError(f"input shape {shape} does not match the out dims {m.out_dims}")
    try:
        inverse = m.pseudo_inverse()  # element -> (register, lane, warp), free variables 0
    except NotBijectiveError as err:
        raise NotBijectiveError(f"not every element is held by a slot: {err}", err.witness) from None
    kernel = m.kernel_basis()
    if any(k[0] for k in kernel):
        raise UnsupportedError(
            f"slots {kernel} differ in the register and hold the same element: one thread would hold it twice"
        )
    replicate = 1 << len(kernel)
    variables = [placeholder(d, e) for d, e in enumerate(shape)]
    bases = [list(per) for per in inverse.bases] + [kernel]
    rep = rep_var(replicate)
    reg, lane, warp = expressions_from_bases(bases, variables + [rep], 3)
    lane_size = m.in_dim_size("lane")
    thread: Expr = lane + warp * lane_size
    return Fragment.from_exprs(shape, [reg], thread, replicate)
