"""Read a TileLang ``PrimFunc`` (as it reaches TileLang's LayoutInference) into an
:class:`~layoutkit.infer.Program`.

The walk keeps the statement order and maps, one to one, the tile ops LayoutInference sees:
``tl.tileop.copy`` / ``tma_copy`` / ``async_copy`` / ``fill`` / ``gemm`` / ``reduce`` / ``atomicadd`` /
``transpose`` calls (``im2col`` proposes no layout and has no op; every other registered tile op is
refused by name, see :mod:`.tilelang_tileops`), parallel loop nests (their buffer accesses become
index expressions over the loop placeholders ``_i, _j, ...``) and ``layout_map`` block annotations
(``T.annotate_layout``).  A ``T.reshape`` / ``T.view`` buffer (another shape or dtype over the same
data variable) is a Program alias of the allocated buffer.  Pipelined shared buffers arrive with their
stage dim; the Program declares them with their logical shape and records the stage count (compared
against the source ``PrimFunc``).  Serial loops, ``if`` statements, blocks and attributes are walked
through; fragments read or written outside tile ops (an ``if`` condition, a scalar statement) are
"floating" and, as in TileLang, fully replicated.  Anything else that could change a layout raises
:class:`UnsupportedError` naming the statement.  Reducers (``T.alloc_reducer``, ``local.reducer``) are read
by :mod:`.tilelang_reducers`: their updates belong to the parallel loop they are in.

Global-memory starts and indices that use block or serial loop variables are read with those
variables at 0 (clamped into the tensor): layout inference uses only their element types, never
their positions.  So are shared-memory indices that only select a slice (``s[b, :, :]``, ``s[b, i, j]``
with ``b`` outside the parallel loop): a shared buffer has one layout for all its slices.  A shared
start moving with such a variable in a dim wider than one element (``a[:, j * 64:(j + 1) * 64]``)
reads as one start of its alignment (:mod:`.tilelang_starts`). Fragment indices using such a variable
(``lse_local[k, j]``, ``T.copy(lse_local[k, 0], ...)``) are read the same way and recorded as
selections, under the conditions :mod:`.tilelang_select` states.  A GEMM's shared
A / B may be sub-regions (``A_shared[:, bK:]``, a stage slice): M / N / K come from the regions.  A
parallel loop whose outermost extent is a runtime value with a constant bound (``T.min(n, 512)``) is
read over the bound as a ``dynamic`` Program loop (the loop keeps its extent, and so its guard).
Loops inside a parallel nest's body are its inner loops, which TileLang's vectoriser plans along
(:mod:`.tilelang_inner`).

>>> _program_scope("local.var"), _program_scope("shared.dyn")
('local', 'shared.dyn')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..algebra.nodes import Const, Expr
from ..algebra.shapes import placeholder
from ..dtypes import element_bits
from ..errors import LayoutError, UnsupportedError
from ..fragment.fragment import Fragment, make_fully_replicated_fragment
from ..infer.ops import Buffer, Region
from ..infer.program import Program
from ..scopes import REDUCER, SCOPES
from ..targets.nv.hardware import arch_number
from .tilelang_align import (
    Alignment,
    access_conditions,
    atomic_vector_cap,
    condition_cap,
    opaque_call_cap,
    rng_vector_cap,
)
from .tilelang_bounds import ThreadBounds
from .tilelang_exprs import from_prim_expr, from_tilelang
from .tilelang_inner import inner_loops
from .tilelang_ir import (
    allocated_shapes,
    expr_nodes,
    extent_bound,
    launch_threads,
    nodes,
    selection_index,
    thread_extent,
    view_key,
)
from .tilelang_ir import int_value as _int
from .tilelang_reducers import Reducers
from .tilelang_select import Selection, outer_stride
from .tilelang_starts import moving_shared_start
from .tilelang_tileops import READ, refuse
from .tilelang_walk_ops import TileOps, global_reach

__all__ = ["DYNAMIC_EXTENT", "LOOP_TAG", "Walked", "allocated_shapes", "launch_threads", "nodes", "thread_extent",
           "walk"]

LOOP_TAG = "layoutkit.loop_id"
"""For-loop annotation the adapter puts on every parallel loop nest root before lowering, to find the
loop again after TileLang's passes (pipelining may duplicate a loop)."""

DYNAMIC_EXTENT = 1 << 20
"""A symbolic extent of a global tensor (``T.dynamic("M")``) is read as this: global positions never
enter layout inference; only bounds checks and the io-aware model's address strides see it."""

_SCOPE_ALIASES = {"local.var": "local"}
_SHARED = ("shared", "shared.dyn")
_SELECTABLE = (*_SHARED, "local.fragment", "shared.tmem")
"""Scopes whose indices may select by a variable from outside the loop (read at 0): shared memory has
one layout for every slice, tensor memory too (a selected batch slice moves a ``tcgen05.ld`` / ``st``
by whole columns, the register layout is the tile's); fragments as :mod:`.tilelang_select` says."""
_NO_LAYOUT_SCOPES = ("shared.barrier", "shared.cluster_barrier", "local.descriptor.wgmma",
                     "local.descriptor.tcgen05_smem", "local.descriptor.tcgen05_instr")
"""Storage with no element layout, which TileLang's inference never lays out either: not in the Program
(sm_90 mbarriers of warp-specialised pipelines and of thread-block clusters, WGMMA / tcgen05 matrix and
instruction descriptors, each a per-thread word)."""
_TMEM = "shared.tmem"
_SCOPE_CONSTRUCTS = {
    _TMEM: "Blackwell tensor memory (T.alloc_tmem, sm_100 tcgen05 MMA accumulators), which needs an sm_100 "
           "target (read there)",
}
"""What each TileLang storage scope layoutkit has no counterpart for holds (named in the refusal)."""
_COPIES = ("tl.tileop.copy", "tl.tileop.tma_copy", "tl.tileop.async_copy")
_IM2COL = ("tl.tileop.im2col", "tl.tileop.c2d_im2col")
_SCANS = ("tl.tileop.cumsum", "tl.tileop.cummax")


def _program_scope(scope: str) -> str:
    """The Program scope of a TileLang storage scope (``local.var`` scalars are per-thread locals)."""
    return _SCOPE_ALIASES.get(scope, scope)


@dataclass(frozen=True)
class Walked:
    """The Program plus what the adapter needs to write answers back: the TIR data variable of every
    buffer and the loop tag of every parallel op (by Program name), and the loop layouts the kernel
    already pins (``parallel_loop_layout``): those are kept as written and pinned in the Program
    (:meth:`~layoutkit.infer.Program.annotate_loop`).  ``views`` keys every buffer by its TIR shape and dtype: a
    ``T.reshape`` / ``T.view`` of a buffer shares its data variable and is a Program alias."""

    program: Program
    data_vars: dict[str, Any] = field(default_factory=dict)
    loop_tags: dict[str, int] = field(default_factory=dict)
    pinned_loops: dict[str, object] = field(default_factory=dict)
    views: dict[str, tuple] = field(default_factory=dict)
    selections: list[Selection] = field(default_factory=list)
    """Fragment accesses with dims indexed by variables from outside the op's loop (read at 0; see
    :mod:`.tilelang_select`, whose ``check_selections`` the solved layouts must pass)."""

    def name_of(self, buf) -> str | None:
        """The Program name of TIR buffer ``buf`` (a view of a storage by its shape and dtype; else
        the storage's first buffer)."""
        names = [n for n, v in self.data_vars.items() if v.same_as(buf.data)]
        return next((n for n in names if self.views.get(n) == view_key(buf)), names[0] if names else None)


class _Walker(TileOps, ThreadBounds, Reducers):
    def __init__(self, func, arch: str, source_shapes: dict[str, tuple[int, ...]], threads: int | None = None):
        from tilelang import tvm

        self.tirx = tvm.tirx
        self.func = func
        self.source_shapes = source_shapes
        self.p = Program(threads=launch_threads(func, threads), target=arch)
        self.walked = Walked(self.p)
        self._data: list[tuple[object, str]] = []
        self._pending: list[tuple[object, object, str]] = []
        self._floating: dict[str, tuple[int, int]] = {}  # fragment -> the threads of its first floating access
        self._init_bounds()
        self._selected: list[tuple[str, tuple[int, ...]]] = []  # of the op being read
        self._periodic: list[tuple[str, int, int]] = []  # (fragment, dim, period) of the op being read
        self._scans: list[tuple[str, str]] = []
        self.runtime_shaped: dict[str, str] = {}  # shared buffer -> its runtime shape, as written
        self._reach = global_reach(func)
        self._align = Alignment(func)
        for param in func.params:
            if param in func.buffer_map:
                self._declare(func.buffer_map[param], global_=True)

    # ---- buffers --------------------------------------------------------------------------------
    def _name_of(self, data) -> str | None:
        for var, name in self._data:
            if var.same_as(data):
                return name
        return None

    def _declare(self, buf, global_: bool = False) -> str | None:
        base = self._name_of(buf.data)
        if base is not None:
            return self._view(buf, base)
        scope = "global" if global_ else _program_scope(buf.scope())
        if scope in _NO_LAYOUT_SCOPES:
            return None
        if scope not in SCOPES and not (scope == _TMEM and arch_number(self.p.target) >= 100):
            what = _SCOPE_CONSTRUCTS.get(scope, "a storage scope with no layoutkit counterpart")
            dims = ", ".join(str(x) for x in buf.shape) + ("," if len(buf.shape) == 1 else "")
            stmt = f"{buf.name} = T.alloc_buffer(({dims}), \"{buf.dtype}\", scope=\"{scope}\")"
            raise UnsupportedError(f"from_prim_func: `{stmt}`: scope {scope!r} is {what}; layoutkit lays out only "
                                   f"{SCOPES} (and local.var)")
        if global_ or scope == "global":
            shape = tuple(x.value if isinstance(x, self.tirx.IntImm) else DYNAMIC_EXTENT for x in buf.shape)
            shape = self._reached(buf, shape)
            # an empty tensor (a 0 dim, e.g. K = 0): no element is ever reached, and global positions never
            # enter layout inference, so TileLang lays the kernel out as usual; the Program needs extents >= 1
            shape = tuple(max(n, 1) for n in shape)
        else:
            if scope in _SHARED and not all(isinstance(x, self.tirx.IntImm) for x in buf.shape):
                # TileLang lays out no shared buffer of a runtime shape (what proposes shared layouts, a GEMM
                # or a TMA box, needs a static one): kept out of the Program; each use is checked instead
                self.runtime_shaped[buf.name] = ", ".join(str(x) for x in buf.shape)
                return None
            shape = tuple(_int(x, f"shape of buffer {buf.name}") for x in buf.shape)
            if 0 in shape:
                raise UnsupportedError(f"from_prim_func: {scope} buffer {buf.name} has shape {list(shape)} (dim "
                                       f"{shape.index(0)} is 0); expected a buffer of at least one element")
        name = buf.name or "unnamed"  # TileLang's own passes may allocate a nameless scalar (a persistent loop's)
        k = 1
        while name in self.p.buffers:  # two TIR buffers of one name: keep both, apart
            name, k = f"{buf.name or 'unnamed'}_{k}", k + 1
        stages = 1
        src = self.source_shapes.get(buf.name)
        if scope in ("shared", "shared.dyn") and src is not None and len(shape) == len(src) + 1 \
                and shape[1:] == src and shape[0] > 1:
            shape, stages = src, shape[0]
        if global_:
            self.p.tensor(name, shape, str(buf.dtype))
        elif scope == REDUCER:
            self.p.alloc_reducer(name, shape, str(buf.dtype), self.reducer_op(buf))
        else:
            self.p.alloc(name, shape, str(buf.dtype), scope)
        if stages > 1:
            self.p.stages[name] = stages
        self._record(buf, name)
        return name

    def _reached(self, buf, shape: tuple[int, ...]) -> tuple[int, ...]:
        """``shape`` of global ``buf`` grown to the largest region over its storage at that rank (a tensor or a
        ``T.Tensor(..., data)`` view of it): a region past the tensor, which TileLang guards."""
        reach = next((r for v, r in self._reach if v.same_as(buf.data) and len(r) == len(shape)), None)
        return shape if reach is None else tuple(max(n, r) for n, r in zip(shape, reach))

    def _record(self, buf, name: str) -> None:
        self._data.append((buf.data, name))
        self.walked.data_vars[name] = buf.data
        self.walked.views[name] = view_key(buf)

    def _view(self, buf, base: str) -> str:
        """The Program buffer of ``buf``, whose storage ``base`` already names: ``base`` itself or a
        view of that shape and dtype, else (``T.reshape`` / ``T.view``) a new Program alias, whose layout
        TileLang and layoutkit both derive from the storage's by reshaping."""
        key = view_key(buf)
        for name, view in self.walked.views.items():
            if view == key and self.walked.data_vars[name].same_as(buf.data):
                return name
        b = self.p.buffers[base]
        if b.scope == "global":  # global positions never enter layout inference
            shape = self._reached(buf, tuple(x.value if isinstance(x, self.tirx.IntImm) else DYNAMIC_EXTENT
                                             for x in buf.shape))
            if shape == b.shape:
                return base
            # a view of another rank (``T.reshape`` of a tensor): regions over it are in its own shape
            name, k = f"{buf.name or base}_view", 1
            while name in self.p.buffers:
                name, k = f"{buf.name or base}_view_{k}", k + 1
            self.p.tensor(name, shape, str(buf.dtype))
            self._record(buf, name)
            return name
        if base in self.p.stages:
            raise UnsupportedError(f"from_prim_func: view {buf.name} {list(buf.shape)} of pipelined {base}; expected "
                                   f"views of buffers without a stage dim")
        shape = tuple(_int(x, f"shape of view {buf.name}") for x in buf.shape)
        if b.is_fragment and str(buf.dtype) != b.dtype:  # the engine reshapes fragments at equal widths only
            raise UnsupportedError(f"from_prim_func: view {buf.name} {list(shape)} {buf.dtype} of fragment {base} "
                                   f"{list(b.shape)} {b.dtype}; expected a fragment view of the same dtype")
        stem = buf.name or f"{base}_view"  # a view written inline in a call has no name
        name, k = stem, 1
        while name in self.p.buffers:
            name, k = f"{stem}_{k}", k + 1
        self.p.alias(name, b, shape, str(buf.dtype))
        self._record(buf, name)
        return name

    def _buffer(self, buf) -> Buffer | None:
        name = self._declare(buf)
        return None if name is None else self.p.buffers[name]

    def _reducer_buffer(self, buf):
        b = self._buffer(buf)
        if b is None or b.scope != REDUCER:
            raise UnsupportedError(f"from_prim_func: T.reducer_update of {buf.name} ({buf.scope()}); expected a "
                                   f"reducer (T.alloc_reducer)")
        return b

    # ---- statements -----------------------------------------------------------------------------
    def run(self) -> Walked:
        self.stmt(self.func.body)
        for data, layout, where in self._pending:
            self._annotate(data, layout, where)
        self._pin_scans()
        for name, (lo, n) in self._floating.items():
            if name not in self.p.annotations:  # as TileLang: every thread (of the access) keeps the whole buffer
                full = make_fully_replicated_fragment(self.p.shape_of(name), n)
                self.p.annotate_layout({self.p.buffers[name]: full.bind_thread_range(lo, n)})
        return self.walked

    def _float(self, *exprs) -> None:
        """Record fragments read or written outside tile ops and parallel loops ("floating")."""
        t = self.tirx
        for e in exprs:
            found = [e] if isinstance(e, (t.BufferLoad, t.BufferStore)) else []
            if isinstance(e, t.PrimExpr):
                found += [n for n in expr_nodes(e, t.BufferLoad)]
            elif isinstance(e, t.Stmt):
                found += nodes(e, t.BufferLoad, t.BufferStore)
            for n in found:
                b = self._buffer(n.buffer)
                if b is not None and b.is_fragment:
                    self._floating.setdefault(b.name, self._bounds())

    def stmt(self, s) -> None:
        t = self.tirx
        if isinstance(s, t.SeqStmt):
            for x in s.seq:
                self.stmt(x)
        elif isinstance(s, t.SBlockRealize):
            self.stmt(s.block)
        elif isinstance(s, t.SBlock):
            for b in s.alloc_buffers:
                self._declare(b)
            if "layout_map" in s.annotations:
                for data, layout in s.annotations["layout_map"].items():
                    self._pending.append((data, layout, f"block {s.name_hint!r}"))
            if s.init is not None:
                self.stmt(s.init)
            self.stmt(s.body)
        elif isinstance(s, t.For):
            if s.kind == t.ForKind.PARALLEL:
                self.parallel(s)
            else:
                self.stmt(s.body)
        elif isinstance(s, t.IfThenElse):
            self._float(s.condition)
            self._guarded(s.condition, s.then_case)
            if s.else_case is not None:
                self._guarded(t.Not(s.condition), s.else_case)
        elif isinstance(s, t.While):
            self._float(s.condition)
            self.stmt(s.body)
        elif isinstance(s, t.AttrStmt):
            self._launch(s)
            self.stmt(s.body)
        elif isinstance(s, (t.AllocBuffer, t.DeclBuffer)):
            self._declare(s.buffer)
        elif isinstance(s, t.Bind):
            self._float(s.value)
            self._bind(s)
        elif isinstance(s, t.AssertStmt):
            return
        elif isinstance(s, t.Evaluate):
            self.evaluate(s)
        elif isinstance(s, t.BufferStore):
            self._float(s)
        else:
            raise UnsupportedError(f"from_prim_func: unsupported statement {type(s).__name__}: `{s}`")

    def evaluate(self, s) -> None:
        call = s.value
        if not isinstance(call, self.tirx.Call) or not hasattr(call.op, "name"):
            return
        name = call.op.name
        handler = {"tl.tileop.fill": self.fill, "tl.tileop.gemm": self.gemm, "tl.tileop.wgmma_gemm": self.gemm,
                   "tl.tileop.tcgen05_gemm": self.gemm,
                   "tl.tileop.gemm_sp": self.gemm_sp, "tl.tileop.reduce": self.reduce,
                   "tl.tileop.atomicadd": self.atomic_add, "tl.tileop.atomicmax": self.atomic_max,
                   "tl.tileop.atomicmin": self.atomic_min, "tl.tileop.transpose": self.transpose,
                   "tl.tileop.reducer_init": self.reducer_init, "tl.tileop.finalize_reducer_v2": self.finalize_reducer,
                   **{c: self.copy for c in _COPIES}, **{c: self.im2col for c in _IM2COL},
                   **{c: self.scan for c in _SCANS}}.get(name)
        if handler is not None and name in READ:
            self._selected = []
            try:
                handler(call)
                if self._selected:  # only copies, fills and atomic adds loop over a selected fragment
                    raise UnsupportedError(f"from_prim_func: `{s}`: fragment {self._selected[0][0]} is indexed by a "
                                           f"variable from outside the op; expected whole fragments in "
                                           f"{READ[name]}")
            except LayoutError as err:
                if isinstance(err, UnsupportedError):
                    raise
                raise UnsupportedError(f"from_prim_func: `{s}`: {err}") from None
        elif name.startswith("tl.tileop."):
            raise refuse(name, str(s).strip().splitlines()[-1])  # the call, without TVM's buffer preamble
        else:
            self._float(s)

    # ---- tile ops -------------------------------------------------------------------------------
    def region(self, arg, what: str, any_shared_start: bool = False) -> Region:
        """A ``T.region(buf[starts], access, *extents)`` (or BufferRegion / BufferLoad) argument.
        ``any_shared_start``: a shared (or tensor-memory) region's start may use variables from outside the op
        in any dim (a GEMM operand ``A_shared[:, k * 16:(k + 1) * 16]``, whose layout covers the whole buffer
        and whose M / N / K come from the extents): read with them at 0."""
        t = self.tirx
        if isinstance(arg, t.Call) and getattr(arg.op, "name", "") == "tl.region":
            load = arg.args[0]
            buf, starts = load.buffer, list(load.indices)
            extents = [_int(e, what) for e in arg.args[2:]]
        elif isinstance(arg, t.BufferRegion):
            buf = arg.buffer
            starts = [r.min for r in arg.region]
            extents = [_int(r.extent, what) for r in arg.region]
        elif isinstance(arg, t.BufferLoad):
            buf, starts = arg.buffer, list(arg.indices)
            extents = [1] * len(starts)
        else:
            raise UnsupportedError(f"{what}: expected a buffer region; found `{arg}`")
        b = self._buffer(buf)
        if b is None:
            self.check_sized(buf, what)
            raise UnsupportedError(f"{what}: {buf.name} ({buf.scope()}) has no element layout")
        if b.name in self.p.stages:  # the stage index picks one version; the Program's shape has none
            if extents[0] != 1:
                raise UnsupportedError(f"{what}: region of pipelined {b.name} spans {extents[0]} stages")
            starts, extents = starts[1:], extents[1:]
        if len(extents) != len(b.shape):
            raise UnsupportedError(f"{what}: region of {b.name} has rank {len(extents)}; the buffer has "
                                   f"{len(b.shape)}")
        lo = tuple(self._start(x, n, e, b, what, any_shared_start) for x, n, e in zip(starts, b.shape, extents))
        self._select(b, [d for d, x in enumerate(starts) if _is_selection(x, b, extents[d])])
        return Region(b, lo, tuple(extents))

    def _select(self, b: Buffer, dims: list[int]) -> None:
        """Record the fragment dims ``b`` is indexed in by variables from outside the op's loop (an
        access left with no loop variable, ``x[k]``, stays a non-constant one: see :mod:`.tilelang_select`)."""
        if not dims or not b.is_fragment:
            return
        self._selected.append((b.name, tuple(dims)))

    def _record_selections(self, op, where: str):
        for name, dims in self._selected:
            op = self.p.select(op, self.p.buffers[name], dims)
            self.walked.selections.append(Selection(op.name, name, dims, where))
        for name, d, period in self._periodic:
            self.walked.selections.append(Selection(op.name, name, (d,), where, period))
        self._selected, self._periodic = [], []
        return op

    def _start(self, x, n: int, extent: int, b: Buffer, what: str, any_shared_start: bool = False) -> int:
        # a tensor-memory region's start only moves a tcgen05 copy's base address or a GEMM's operand
        # origin (the register layout is the tile's): read a moving one at 0, as TileLang's tile does
        if b.scope in ("global", _TMEM) or (any_shared_start and b.scope in _SHARED):
            try:
                v = from_prim_expr(x, lambda _v: Const(0), what)
                value = v.value if isinstance(v, Const) else 0
            except UnsupportedError:
                value = 0
            return min(max(value, 0), max(n - extent, 0))
        try:
            v = from_prim_expr(x, lambda _v: None, f"{what}: start of {b.name}")
        except UnsupportedError:
            sel = selection_index(x, n) if extent == 1 and b.scope in _SELECTABLE else None
            if sel is None and b.is_fragment and extent > 1:
                raise UnsupportedError(f"{what}: start `{x}` of fragment {b.name} uses a variable from outside "
                                       f"the op's loop over a dim of extent {extent}; TileLang 0.1.15 would lay "
                                       f"the copy out as a function of that variable: expected such variables "
                                       f"only in dims of extent 1") from None
            if sel is None and b.scope in _SHARED and extent > 1:
                sel = moving_shared_start(x, n, extent)
            if sel is None:
                raise
            return sel
        if not isinstance(v, Const):
            raise UnsupportedError(f"{what}: start `{x}` of {b.name} is not a constant")
        return v.value

    # ---- parallel loops -------------------------------------------------------------------------
    def parallel(self, root) -> None:
        t = self.tirx
        loops = []
        s = root
        while isinstance(s, t.For) and s.kind == t.ForKind.PARALLEL:
            if _int(s.min, f"parallel loop `{root}`") != 0:
                raise UnsupportedError(f"from_prim_func: parallel loop over {s.loop_var} starts at {s.min}; "
                                       f"expected 0")
            loops.append(s)
            s = s.body
        bounds = [extent_bound(x.extent, f"from_prim_func: extent of parallel loop {x.loop_var}") for x in loops]
        shape = tuple(n for n, _ in bounds)
        dynamic = [x.loop_var for x, (_, dyn) in zip(loops, bounds) if dyn]
        if dynamic and not bounds[0][1] or len(dynamic) > 1:
            # TileLang flattens the nest with the symbolic extent inside its thread map
            raise UnsupportedError(f"from_prim_func: parallel loop `for {', '.join(str(x.loop_var) for x in loops)}`"
                                   f": a runtime extent on loop {dynamic[-1]}; expected it on the outermost loop "
                                   f"only (TileLang 0.1.15's layout of an inner one depends on its runtime value)")
        pairs = [(x.loop_var, placeholder(d, n)) for d, (x, n) in enumerate(zip(loops, shape))]

        def loop_var(v) -> Expr | None:
            for tv, ours in pairs:
                if tv.same_as(v):
                    return ours
            return None

        where = f"parallel loop `for {', '.join(str(x.loop_var) for x in loops)}` ({'x'.join(map(str, shape))})"
        inner = inner_loops(s, len(loops), where)
        writes, reads, full, (in_global, vector_loops, lets) = self._loop_accesses(s, loops, loop_var, inner, where)
        # TileLang fuses a nest of power-of-two extents that touches no fragment into one loop before
        # planning it: its vectoriser then sees one loop variable, and an outer variable's stride no more
        # (unless an inner serial loop is the one it vectorises)
        fused = len(loops) > 1 and all(n > 0 and n & (n - 1) == 0 and not dyn for n, dyn in bounds) \
            and not any(b.is_fragment for b, _ in writes + reads)
        align = self._align.narrowing(in_global, vector_loops, lets, fused and len(vector_loops) == len(loops))
        var = loops[-1].loop_var
        caps = [c for c in (atomic_vector_cap(s, self.p.target), rng_vector_cap(s), condition_cap(s, var, shape[-1]),
                            opaque_call_cap(s, var, shape[-1], self._align.strides),
                            1 if inner is not None and inner.scalar else None) if c is not None]
        cap = min(caps) if caps else None
        updates = self.updates(s, loop_var, where, self._indices, fused)
        try:
            op = self.p.parallel(shape, writes=[(b, _const_fn(ix)) for b, ix in writes],
                                 reads=[(b, _const_fn(ix)) for b, ix in reads], dynamic=bool(dynamic),
                                 align=align or None, vector_cap=cap, updates=updates,
                                 inner=None if inner is None or not inner.extents else
                                 {"extents": inner.extents, "chained": inner.chained,
                                  "indices": [_const_fn(ix) for ix in full]})
        except LayoutError as err:
            raise UnsupportedError(f"from_prim_func: {where}: {err}") from None
        op = self._record_selections(op, where)
        if LOOP_TAG in root.annotations:
            self.walked.loop_tags[op.name] = _int(root.annotations[LOOP_TAG], LOOP_TAG)
        self._pin(op, root.annotations, where, shape if dynamic else None)

    def _loop_accesses(self, s, loops, loop_var, inner, where: str):
        """The accesses of parallel body ``s``: ``(writes, reads, full, (global accesses, loops, lets))``,
        ``full`` each access's indices over the parallel and inner loop variables (writes first; empty without
        inner loops), then what :meth:`Alignment.narrowing` needs: each global access with its name, element
        bits and the conditions around it, the loops TileLang's planner sees (the parallel ones, then any
        inner serial ones) and the body's let bindings."""
        t = self.tirx
        writes, reads = [], []
        full_w: list[tuple[Expr, ...]] = []
        full_r: list[tuple[Expr, ...]] = []
        lets = {b.var: b.value for b in nodes(s, t.Bind)}
        vector_loops = list(loops) + (list(inner.loops) if inner else [])
        in_global = []
        for node, conds in access_conditions(s):
            b = self._buffer(node.buffer)
            if b is None:
                self.check_sized(node.buffer, where)
            if b is None or b.scope == REDUCER:  # a reducer is touched only through its updates
                continue
            idx = self._indices(list(node.indices), b, loop_var, where)
            is_store = isinstance(node, t.BufferStore)
            (writes if is_store else reads).append((b, idx))
            if inner is not None and inner.extents:
                ix = list(node.indices)[1:] if b.name in self.p.stages else list(node.indices)
                (full_w if is_store else full_r).append(inner.indices(ix, b.shape, idx, loop_var, b.scope == "global"))
            if b.scope == "global":
                in_global.append((b.name, element_bits(b.dtype), node, conds))
        return writes, reads, full_w + full_r, (in_global, vector_loops, lets)

    def _pin(self, op, annotations, where: str, shape: tuple[int, ...] | None = None) -> None:
        """A ``loop_layout=`` the kernel gives (``parallel_loop_layout``): TileLang's loop op takes it
        before inferring anything, so the Program pins it too (bound to the block's threads).  ``shape``:
        the loop's bound, for a runtime extent (the annotation is written over the runtime value)."""
        if "parallel_loop_layout" not in annotations:
            return
        layout = from_tilelang(annotations["parallel_loop_layout"], shape)
        self.walked.pinned_loops[op.name] = layout
        if op.loop is None or not isinstance(layout, Fragment):
            raise UnsupportedError(f"from_prim_func: {where}: loop_layout {layout}: expected a tl.Fragment on an op "
                                   f"with a loop")
        try:
            self.p.annotate_loop(op, layout)
        except LayoutError as err:
            raise UnsupportedError(f"from_prim_func: {where}: loop_layout {layout}: {err}") from None

    def _indices(self, indices, b: Buffer, loop_var, where: str) -> tuple[Expr, ...]:
        if b.name in self.p.stages:
            indices = indices[1:]
        if b.scope == "global":
            out = []
            for x, n in zip(indices, b.shape):
                try:
                    e = from_prim_expr(x, lambda v: _or_zero(loop_var(v)), where)
                except UnsupportedError:
                    e = Const(0)
                out.append(e if e.lo >= 0 and e.hi <= n - 1 else Const(0))
            return tuple(out)
        out, selected = [], []
        for d, (x, n) in enumerate(zip(indices, b.shape)):
            try:
                out.append(from_prim_expr(x, loop_var, f"{where}: index of {b.name}"))
            except UnsupportedError:
                sel = selection_index(x, n, loop_var) if b.scope in _SELECTABLE else None
                strided = outer_stride(x, loop_var) if sel is None and b.is_fragment else None
                if strided is not None:  # `jj * 4 + j`: read at jj = 0, its thread map checked periodic
                    out.append(from_prim_expr(strided[1], loop_var, f"{where}: index of {b.name}"))
                    self._periodic.append((b.name, d, strided[0]))
                    continue
                if sel is None and b.is_fragment and _uses_loop_var(x, loop_var):
                    raise UnsupportedError(f"{where}: index `{x}` of fragment {b.name} mixes a loop variable with "
                                           f"a variable from outside the loop; TileLang 0.1.15 would lay the loop "
                                           f"out as a function of that variable: expected the two in separate "
                                           f"indices") from None
                if sel is None:
                    raise
                out.append(Const(sel))
                selected.append(d)
        self._select(b, selected)
        return tuple(out)

    # ---- annotations ----------------------------------------------------------------------------
    def _annotate(self, data, tl_layout, where: str) -> None:
        name = self._name_of(data)
        if name is None:
            raise UnsupportedError(f"from_prim_func: layout_map of {where} names a buffer the kernel does not "
                                   f"allocate: {data}")
        self.check_reducer_annotation(name, where)
        layout = from_tilelang(tl_layout)
        want = self.p.shape_of(name)
        if layout.input_shape != want:
            s = self.p.stages.get(name, 1)
            if s > 1 and layout.input_shape == want[1:]:
                layout = layout.expand([s])
            else:
                raise UnsupportedError(f"from_prim_func: annotated layout of {name} has shape {layout.input_shape}; "
                                       f"the buffer is {want}")
        self.p.annotate_layout({self.p.buffers[name]: layout})


def _is_selection(x, b: Buffer, extent: int) -> bool:
    """Whether region start ``x`` of fragment ``b`` (a dim of ``extent``) uses a variable (read at 0)."""
    if not b.is_fragment or extent != 1:
        return False
    try:
        from_prim_expr(x, lambda _v: None, "start")
    except UnsupportedError:
        return True
    return False


def _uses_loop_var(x, loop_var) -> bool:
    """Whether the TIR expression ``x`` mentions a variable of the loop."""
    from tilelang import tvm

    return any(loop_var(v) is not None for v in expr_nodes(x, tvm.tirx.Var))


def _or_zero(e: Expr | None) -> Expr:
    return Const(0) if e is None else e


def _const_fn(indices: tuple[Expr, ...]):
    """An index function returning fixed expressions over the loop placeholders."""
    return lambda *_vars: indices


def walk(func, arch: str, source_shapes: dict[str, tuple[int, ...]], threads: int | None = None) -> Walked:
    """The :class:`Walked` program of ``func`` (a ``PrimFunc`` just before LayoutInference, as
    :func:`layoutkit.frontends.tilelang.from_prim_func` captures it; ``source_shapes`` from
    :func:`allocated_shapes` of the source kernel; ``threads`` the launch TileLang materialised, used
    when the kernel gives no ``threads=``).  Use ``from_prim_func`` rather than this directly."""
    return _Walker(func, arch, source_shapes, threads).run()
