"""layoutkit *as* TileLang's layout-inference pass: TileLang 0.1.15's CUDA pipeline with
``tilelang.transform.LayoutInference`` replaced by a pass that solves the kernel with layoutkit and
writes what TileLang's pass writes, so TileLang's own inference never runs.

TileLang's ``LayoutInference`` (0.1.15) does three things to each ``PrimFunc`` and nothing else; the
substituted pass does the same with layoutkit's layouts:

1. fuses every chain of parallel loops that touches no fragment (all starting at 0, constant
   power-of-two extents) into one loop over the product (:func:`fuse_parallel_loops`);
2. sets the ``layout_map`` annotation of every block to the layouts of all shared and fragment
   buffers (every TIR buffer over a solved storage; fragments bound to the block's thread range;
   layouts the kernel annotates kept as written);
3. annotates each parallel loop nest root with its loop layout (``parallel_loop_layout``, bound),
   the predicate TileLang derives from it (``parallel_loop_predicate``: threads past the loop's
   thread extent, one replica of a replicated loop storing to shared / global memory) and, for a
   loop that touches no fragment, ``parallel_loop_requires_padding_guard``.

Loop partitioning, vectorisation and the predicates' use all happen later, in TileLang's
``LowerTileOp``, which reads only these annotations.  The pass remembers the functions it solved
(:func:`clear_cache` forgets them): lowering the same ``PrimFunc`` again only hashes and compares it.

Switch it on with :func:`lower` (``tilelang.lower`` with the pass substituted) or, around
``tilelang.compile`` / ``@tilelang.jit`` calls, with :func:`layoutkit_inference`.  Both also
substitute layoutkit's lowering of ``T.gemm`` on the ``mma.sync`` path for TileLang's parsed macros
(:mod:`.tilelang_gemm`: the same statement; ``lower_gemm=False`` keeps TileLang's).  A kernel
layoutkit cannot read or solve falls back to TileLang's own pass (``fallback=True``, recorded in
:attr:`PassRecord.fallbacks`) or raises the typed error (``fallback=False``).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from ..errors import LayoutError
from ..fragment.fragment import Fragment
from ..fragment.partial import PartialFragment
from ..infer import infer_layouts
from .tilelang import LAYOUT_MAP, LOOP_LAYOUT, _check_lowerable, _main, _nest_extents, _tag_loops, _target, _tilelang
from .tilelang_exprs import from_tilelang, to_tilelang
from .tilelang_gemm import layoutkit_mma_lowering
from .tilelang_ir import allocated_shapes, nodes, thread_extent
from .tilelang_select import check_selections
from .tilelang_walk import LOOP_TAG, Walked, walk

__all__ = ["COST_MODEL_CONFIG", "LOOP_PREDICATE", "PADDING_GUARD", "PassRecord", "clear_cache", "configured_cost_model",
           "fuse_parallel_loops", "layoutkit_inference", "lower"]

LOOP_PREDICATE = "parallel_loop_predicate"
PADDING_GUARD = "parallel_loop_requires_padding_guard"
COST_MODEL_CONFIG = "tl.layout_cost_model"
_FRAGMENT = "local.fragment"
_LAID_OUT = ("shared", "shared.dyn", "shared.tmem", _FRAGMENT, "local.reducer")


@dataclass
class PassRecord:
    """What the substituted pass did while it was switched on: ``solved`` the functions layoutkit
    laid out, ``fallbacks`` the reason for each function handed to TileLang's own pass, ``seconds``
    the pass's wall time (layoutkit's reading, solving and annotating)."""

    solved: int = 0
    fallbacks: list[str] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class _State:
    cost_model: str | None
    fallback: bool
    record: PassRecord
    source_shapes: dict = field(default_factory=dict)
    threads: int | None = None
    error: LayoutError | None = None


@contextmanager
def layoutkit_inference(cost_model: str | None = None, fallback: bool = True,
                        lower_gemm: bool = True) -> Iterator[PassRecord]:
    """Within the block, every TileLang lowering (``tilelang.lower``, ``tilelang.compile``,
    ``@tilelang.jit`` kernels compiled there) runs layoutkit in place of TileLang's LayoutInference;
    yields the :class:`PassRecord`.  ``cost_model`` None takes TileLang's own setting (the
    ``tl.layout_cost_model`` pass config, else ``TILELANG_LAYOUT_COST_MODEL``, else register count);
    every other pass config acts on TileLang's passes around this one as usual.  ``lower_gemm`` also
    lowers ``T.gemm`` on the ``mma.sync`` path from layoutkit's MMA facts instead of TileLang's
    parsed macros (:mod:`.tilelang_gemm`; same statement, a fraction of the time; GEMMs it does not
    cover are lowered by TileLang).  The pass factories (and the GEMM implementation entry) are
    swapped on TileLang's modules and restored on exit; lowerings in other threads meanwhile see
    the swap too.

    Needs TileLang (skipped as a doctest), with ``gemm`` a ``@T.prim_func`` GEMM kernel:

    >>> with layoutkit_inference() as record:  # doctest: +SKIP
    ...     kernel = tilelang.compile(gemm, target="cuda")
    >>> record.solved, record.fallbacks  # doctest: +SKIP
    (1, [])
    """
    tl_transform = _tilelang("layoutkit_inference").transform
    state = _State(cost_model, fallback, PassRecord())
    original, original_launch = tl_transform.LayoutInference, tl_transform.MaterializeKernelLaunch

    def launch(*args, **kwargs):
        inner = original_launch(*args, **kwargs)

        def run(mod):
            # the module the pipeline starts from still has the source shapes (no stage dims yet)
            funcs = list(mod.functions.values())
            state.source_shapes = allocated_shapes(funcs[0]) if len(funcs) == 1 else {}
            out = inner(mod)
            funcs = list(out.functions.values())
            state.threads = thread_extent(funcs[0]) if len(funcs) == 1 else None
            return out

        return run

    def inference(*_args, **_kwargs):
        return _make_pass(state, original)

    tl_transform.LayoutInference, tl_transform.MaterializeKernelLaunch = inference, launch
    try:
        with layoutkit_mma_lowering() if lower_gemm else nullcontext():
            yield state.record
    except Exception as err:
        # TVM wraps an exception raised inside a Python pass in its own RuntimeError: give back ours
        if state.error is not None and not isinstance(err, LayoutError):
            raise state.error from None
        raise
    finally:
        tl_transform.LayoutInference, tl_transform.MaterializeKernelLaunch = original, original_launch


def lower(func, target, cost_model: str | None = None, fallback: bool = True, lower_gemm: bool = True, **kwargs):
    """``tilelang.lower(func, target=...)`` with layoutkit as its layout-inference pass (TileLang's
    own is not run), and layoutkit's ``T.gemm`` lowering unless ``lower_gemm`` is false (see
    :func:`layoutkit_inference`); returns TileLang's ``CompiledArtifact`` (``kernel_source`` the
    CUDA text).  ``target`` as for :func:`layoutkit.frontends.tilelang.from_prim_func`; ``kwargs`` go to
    ``tilelang.lower``.

    Needs TileLang (skipped as a doctest), with ``gemm`` a ``@T.prim_func`` GEMM kernel:

    >>> "__global__" in lower(gemm, "sm_80").kernel_source  # doctest: +SKIP
    True
    """
    tilelang = _tilelang("lower")
    tgt = _target(target)
    with layoutkit_inference(cost_model, fallback, lower_gemm), tilelang.tvm.target.Target(tgt):
        return tilelang.lower(func, target=tgt, **kwargs)


# ---- the pass -------------------------------------------------------------------------------------

def _make_pass(state: _State, original):
    from tilelang import tvm

    def run(func, mod, ctx):
        t0 = time.perf_counter()
        try:
            out = _solve_cached(func, state, state.cost_model or configured_cost_model())
            state.record.solved += 1
        except LayoutError as err:  # layoutkit's typed refusals
            if not state.fallback:
                state.error = err
                raise
            state.record.fallbacks.append(f"{type(err).__name__}: {err}")
            out = _main(original()(tvm.IRModule({"main": func})))
        state.record.seconds += time.perf_counter() - t0
        return out

    return tvm.tirx.transform.prim_func_pass(run, opt_level=0, name="layoutkit.LayoutInference")


_CACHE_SIZE = 64
_cache: OrderedDict[tuple, tuple[Any, Any]] = OrderedDict()
"""Solved functions: ``(structural hash, cost model, source shapes, threads) -> (input, output)``."""


def clear_cache() -> None:
    """Forget every function the pass has solved (see :func:`_solve_cached`)."""
    _cache.clear()


def _solve_cached(func, state: _State, cost_model: str):
    """:func:`_solve`, remembered per function: a function structurally equal to one solved before
    (same cost model, source shapes and thread count), whose parameters are the same TIR objects,
    gets the same annotated function back without being walked or solved again (lowering one
    ``PrimFunc`` again, as autotuning replays and repeated ``tilelang.lower`` calls do, brings the
    same parameters; a rebuilt kernel brings new ones and is solved afresh, so nothing of another
    function's is ever handed to TileLang's later passes).  Free variables are matched up to renaming:
    TileLang's block read regions name a loop variable outside its loop (``ko`` of a pipelined
    loop), a new object each lowering; the output is the earlier function whole, so it stays
    consistent.  The pass's output depends on nothing else: the target is in the function's attributes."""
    from tilelang import tvm

    try:
        key = (tvm.ir.structural_hash(func, map_free_vars=True), cost_model,
               tuple(sorted(state.source_shapes.items())), state.threads)
    except Exception:  # noqa: BLE001 - an IR node without a structural hash: solve without the cache
        return _solve(func, state, cost_model)
    hit = _cache.get(key)
    if hit is not None and _same_params(hit[0], func) and tvm.ir.structural_equal(hit[0], func,
                                                                                  map_free_vars=True):
        _cache.move_to_end(key)
        return hit[1]
    out = _solve(func, state, cost_model)
    _cache[key] = (func, out)
    if len(_cache) > _CACHE_SIZE:
        _cache.popitem(last=False)
    return out


def _same_params(a, b) -> bool:
    """The two functions take the very same parameter vars and buffers."""
    if len(a.params) != len(b.params) or not all(x.same_as(y) for x, y in zip(a.params, b.params)):
        return False
    return all(p in b.buffer_map and a.buffer_map[p].same_as(b.buffer_map[p]) for p in a.params if p in a.buffer_map)


def _solve(func, state: _State, cost_model: str):
    arch = str(func.attrs["target"].attrs["arch"]) if func.attrs and "target" in func.attrs else "sm_80"
    tagged = _tag_loops(fuse_parallel_loops(func))
    walked = walk(tagged, arch, state.source_shapes, state.threads)
    result = infer_layouts(walked.program, cost_model=cost_model)
    check_selections(walked.selections, result.layout_map)
    _check_lowerable(result, walked.program)
    return _annotate(tagged, walked, result)


def configured_cost_model() -> str:
    """The cost model TileLang's pass would use: the ``tl.layout_cost_model`` pass config of the
    current pass context, else the ``TILELANG_LAYOUT_COST_MODEL`` environment variable, else
    ``"register-count"`` (both names are layoutkit cost models too)."""
    import os

    from tilelang import tvm

    config = tvm.transform.PassContext.current().config
    chosen = config.get(COST_MODEL_CONFIG) if COST_MODEL_CONFIG in config else None
    return str(chosen or os.environ.get("TILELANG_LAYOUT_COST_MODEL") or "register-count")


def fuse_parallel_loops(func):
    """``func`` with each chain of nested parallel loops whose body touches no fragment, all starting
    at 0 with constant power-of-two extents, fused into one ``int32`` loop named ``<vars>_fused``
    (the original variables become ``fused // stride % extent``, simplified), as TileLang's
    LayoutInference does before it infers anything.  A chain's root keeps its annotations."""
    from tilelang import tvm

    tirx = tvm.tirx

    def touches_fragment(stmt) -> bool:
        return any(n.buffer.scope() == _FRAGMENT for n in nodes(stmt, tirx.BufferLoad, tirx.BufferStore))

    def pre(node):
        if not isinstance(node, tirx.For):
            return None
        chain, s = [], node
        while isinstance(s, tirx.For) and s.kind == tirx.ForKind.PARALLEL and _is_int(s.min, 0):
            chain.append(s)
            s = s.body
        # the chain first: scanning every loop's body for fragments would walk a kernel once per loop
        if len(chain) < 2 or not all(_power_of_two(x.extent) for x in chain) or touches_fragment(node.body):
            return None
        return _fused(chain)

    return func.with_body(tirx.stmt_functor.ir_transform(func.body, pre, None, ["tirx.For"]))


def _is_int(x, value: int) -> bool:
    from tilelang import tvm

    return isinstance(x, tvm.tirx.IntImm) and int(x.value) == value


def _power_of_two(x) -> bool:
    from tilelang import tvm

    return isinstance(x, tvm.tirx.IntImm) and x.value > 0 and x.value & (x.value - 1) == 0


def _fused(chain):
    from tilelang import tvm

    tirx = tvm.tirx
    extents = [int(x.extent.value) for x in chain]
    total = 1
    for e in extents:
        total *= e
    var = tirx.Var("_".join(x.loop_var.name for x in chain) + "_fused", "int32")
    analyzer = tvm.arith.Analyzer()
    vmap, stride = {}, 1
    for loop, e in reversed(list(zip(chain, extents))):
        vmap[loop.loop_var] = analyzer.simplify(tirx.floormod(tirx.floordiv(var, stride), e))
        stride *= e
    body = tirx.stmt_functor.substitute(chain[-1].body, vmap)
    annotations = dict(chain[0].annotations)
    if annotations.get(LOOP_LAYOUT) is not None:
        # a loop layout the kernel pins over the nest: TileLang reads it over the fused loop, row-major
        annotations[LOOP_LAYOUT] = to_tilelang(from_tilelang(annotations[LOOP_LAYOUT]).reshape((total,)))
    return tirx.For(var, tirx.IntImm("int32", 0), tirx.IntImm("int32", total), tirx.ForKind.PARALLEL, body,
                    None, annotations)


# ---- annotations ----------------------------------------------------------------------------------

def _annotate(func, walked: Walked, result):
    """``func`` with ``layout_map`` on every block and the loop annotations on every parallel root."""
    from tilelang import tvm

    tirx = tvm.tirx
    scopes = _Scopes(func, walked.program.threads)
    layout_map = _buffer_layouts(func, walked, result, scopes)
    by_tag = {tag: op for op, tag in walked.loop_tags.items()}
    roots = {int(n.annotations[LOOP_TAG]): n for n in nodes(func.body, tirx.For) if LOOP_TAG in n.annotations}
    loop_ann = {tag: _loop_annotations(roots[tag], result.loop_layouts.get(by_tag.get(tag)), scopes,
                                       scopes.loops.get(tag, ())) for tag in roots}

    def post(node):
        if isinstance(node, tirx.SBlock):
            ann = {**dict(node.annotations), LAYOUT_MAP: layout_map}
            return tirx.SBlock(node.iter_vars, node.reads, node.writes, node.name_hint, node.body, node.init,
                               node.alloc_buffers, node.match_buffers, ann)
        if isinstance(node, tirx.For) and LOOP_TAG in node.annotations:
            ann = dict(node.annotations)
            ann.update(loop_ann[int(ann.pop(LOOP_TAG))])
            return tirx.For(node.loop_var, node.min, node.extent, node.kind, node.body, node.thread_binding, ann,
                            node.step)
        return None

    body = tirx.stmt_functor.ir_transform(func.body, None, post, ["tirx.SBlock", "tirx.For"])
    return func.with_body(body)


class _Scopes:
    """The conditions enclosing each parallel root (by loop tag) and each fragment's first use (by data
    var), and the range of ``threadIdx.x`` they leave: TileLang binds a layout to the thread range of
    the op that infers it (a warp-specialised consumer branch ``if tx >= 128`` gives [128, 256))."""

    def __init__(self, func, threads: int):
        from tilelang import tvm

        self.tirx = tvm.tirx
        self.tvm = tvm
        self.threads = threads
        self.tx, self.launched = None, threads
        for n in nodes(func.body, self.tirx.AttrStmt):
            if n.attr_key == "thread_extent" and str(n.node.thread_tag) == "threadIdx.x":
                self.tx, self.launched = n.node.var, int(n.value.value)
                break
        self.loops: dict[int, tuple] = {}
        self.fragments: dict[Any, tuple] = {}  # data var (hashed by identity) -> conditions
        self._visit(func.body, ())

    def _visit(self, s, conds: tuple) -> None:
        t = self.tirx
        if isinstance(s, t.IfThenElse):
            self._visit(s.then_case, (*conds, s.condition))
            if s.else_case is not None:
                self._visit(s.else_case, (*conds, t.Not(s.condition)))
            return
        if isinstance(s, t.For) and LOOP_TAG in s.annotations:
            self.loops[int(s.annotations[LOOP_TAG])] = conds
        if isinstance(s, (t.Evaluate, t.BufferStore)) or (isinstance(s, t.For) and LOOP_TAG in s.annotations):
            for n in nodes(s, t.BufferLoad, t.BufferStore):
                if n.buffer.scope() == _FRAGMENT and n.buffer.data not in self.fragments:
                    self.fragments[n.buffer.data] = conds
            return  # a tile op or a parallel nest holds no further branch on the thread index
        for attr in ("seq", "body", "block", "init"):
            child = getattr(s, attr, None)
            if child is None:
                continue
            for c in (child if attr == "seq" else [child]):
                self._visit(c, conds)

    def analyzer(self, conds: tuple):
        """An analyzer knowing ``threadIdx.x``'s launch range, and a context entering ``conds``."""
        from contextlib import ExitStack

        analyzer = self.tvm.arith.Analyzer()
        stack = ExitStack()
        if self.tx is not None:
            analyzer.bind(self.tx, self.tvm.ir.Range.from_min_extent(0, self.launched))
            for c in conds:
                stack.enter_context(analyzer.constraint_scope(c))
        return analyzer, stack

    def bounds(self, conds: tuple) -> tuple[int, int]:
        """(start, extent) of ``threadIdx.x`` under ``conds``."""
        if self.tx is None:
            return 0, self.threads
        analyzer, stack = self.analyzer(conds)
        with stack:
            b = analyzer.const_int_bound(self.tx)
        return int(b.min_value), int(b.max_value) - int(b.min_value) + 1

    def of_buffer(self, buf) -> tuple[int, int]:
        return self.bounds(self.fragments.get(buf.data, ()))


def _buffer_layouts(func, walked: Walked, result, scopes: _Scopes) -> dict:
    """Every shared / tensor-memory / fragment TIR buffer of ``func`` over a solved storage -> its TileLang layout;
    a layout the kernel annotates (``T.annotate_layout``) is kept as the same object."""
    from tilelang import tvm

    tirx = tvm.tirx
    written: dict = {}
    for block in nodes(func.body, tirx.SBlock):
        for var, lay in dict(block.annotations.get(LAYOUT_MAP, {})).items():
            written[var] = lay
    seen: dict = {}  # TIR buffers hash by identity; insertion order is program order
    for n in nodes(func.body, tirx.SBlock, tirx.BufferLoad, tirx.BufferStore):
        for buf in (list(n.alloc_buffers) if isinstance(n, tirx.SBlock) else [n.buffer]):
            if buf not in seen and buf.scope() in _LAID_OUT:
                seen[buf] = None
    out: dict = {}
    for buf in seen:
        given = next((lay for var, lay in written.items() if var.same_as(buf.data)), None)
        if given is not None and _same_shape(given, buf):
            out[buf] = given
            continue
        name = walked.name_of(buf)
        if name is None or name not in result.layout_map:
            continue
        lay = result.layout_map[name]
        tl = to_tilelang(lay)
        if isinstance(lay, PartialFragment) and lay.thread_range is not None:  # the threads of its update sites
            _set_thread_range(tl, *lay.thread_range)
        elif isinstance(lay, Fragment):
            _set_thread_range(tl, *scopes.of_buffer(buf))
        out[buf] = tl
    return out


def _same_shape(tl_layout, buf) -> bool:
    return [int(x) for x in tl_layout.get_input_shape()] == [int(getattr(x, "value", -1)) for x in buf.shape]


def _set_thread_range(tl_fragment, start: int, extent: int) -> None:
    """Bind a TileLang fragment this module just built (no one else holds it) to a thread range;
    TileLang's Python API has no ``BindThreadRange``, so the reflected field is set directly."""
    from tilelang import tvm

    fields = {}  # a PartialFragment's own type info lists only its combine size: its bases hold the rest
    for cls in reversed(type(tl_fragment).__mro__):
        info = cls.__dict__.get("__tvm_ffi_type_info__")
        fields.update({f.name: f for f in getattr(info, "fields", ())})
    fields["thread_range"].setter(tl_fragment, tvm.ir.Range.from_min_extent(start, extent))


def _loop_annotations(root, layout: Fragment | None, scopes: _Scopes, conds: tuple) -> dict:
    """The loop layout (bound), predicate and padding guard TileLang's pass writes on ``root``."""
    from tilelang import tvm

    tirx = tvm.tirx
    out: dict = {}
    if root.annotations.get(LOOP_LAYOUT) is not None:
        return out  # a loop layout the kernel pins stays as written
    if layout is None:
        raise LayoutError(f"layoutkit_inference: no loop layout for the parallel loop over {root.loop_var}")
    start, extent = scopes.bounds(conds)
    tl = to_tilelang(layout, shape=_nest_extents(root))
    _set_thread_range(tl, start, extent)
    out[LOOP_LAYOUT] = tl
    accesses = nodes(root, tirx.BufferLoad, tirx.BufferStore)
    fragments = [n for n in accesses if n.buffer.scope() == _FRAGMENT]
    if not fragments:
        out[PADDING_GUARD] = tirx.IntImm("bool", 1)
    if scopes.tx is None:
        return out
    var = scopes.tx
    pred = tirx.And(tirx.LT(var, start + extent), tirx.GE(var, start))
    if layout.thread_extent != extent:
        pred = tirx.And(tirx.LT(var, layout.thread_extent + start), pred)
    stores_fragment = any(isinstance(n, tirx.BufferStore) for n in fragments)
    cross_thread = any(n.buffer.scope() == "global" or n.buffer.scope().startswith("shared") for n in accesses)
    if layout.replicate_size > 1 and cross_thread and not stores_fragment:
        rep = tl.inverse().map_forward_index([0] * len(layout.forward_index) + [var - start])
        rep = rep[-1] if hasattr(rep, "__len__") else rep
        pred = tirx.And(tirx.EQ(rep, 0), pred)
    analyzer, stack = scopes.analyzer(conds)
    with stack:
        pred = analyzer.simplify(pred)
    if not (isinstance(pred, tirx.IntImm) and int(pred.value) == 1):
        out[LOOP_PREDICATE] = pred
    return out
