"""layoutkit as the layout solver of TileLang (0.1.15): read a ``T.prim_func``, solve its layouts,
hand them back as the annotations TileLang's own pipeline honours.

- :func:`from_prim_func` runs TileLang's lowering passes up to (not including) its ``LayoutInference``
  pass, so pipelined shared buffers already carry their stage dim, and reads the kernel into an
  :class:`~layoutkit.infer.Program` (buffers, scopes, tile ops, parallel loops, ``T.annotate_layout``,
  thread count; see :mod:`.tilelang_walk`).
- :func:`solve_prim_func` infers the Program and returns the ``PrimFunc`` with every solved shared /
  fragment layout in the allocating block's ``layout_map`` annotation (what ``T.annotate_layout``
  writes) and every solved parallel-loop layout in the loop's ``parallel_loop_layout`` annotation
  (read by TileLang's ``ParallelOp`` before any inference of its own), so ``tilelang.lower`` /
  ``tilelang.compile`` lower it unchanged otherwise, including kernels TileLang cannot lay out.
- :func:`to_tilelang` / :func:`from_tilelang` convert layouts exactly (see :mod:`.tilelang_exprs`).
- :func:`lower` is ``tilelang.lower`` with layoutkit *as* its LayoutInference pass (TileLang's own
  inference is not run; the :func:`layoutkit_inference` context does the same for ``tilelang.compile`` /
  ``@tilelang.jit``; see "The pass" below).
- :func:`tilelang_inference` runs TileLang's own pass on the same module and times it (for tests and
  benchmarks that compare the two solvers).

TileLang is imported inside these functions (the ``tilelang`` extra); importing this module never
needs it.  Bad input raises a typed error before TileLang sees it: no TileLang installed, a ``func`` that
is not a ``PrimFunc`` or a malformed ``target`` (:class:`UnsupportedError`), a ``result`` that is not an
inference of this kernel's Program (:class:`~layoutkit.errors.CodegenInputError` naming the
buffer); a target TileLang's own lowering rejects is reported as :class:`UnsupportedError` with TVM's
message.  Only CUDA targets are supported (TileLang's HIP and CPU targets are not).

The pass: TileLang 0.1.15's CUDA pipeline with ``tilelang.transform.LayoutInference`` replaced by a pass
that solves the kernel with layoutkit (the reading and solving above) and writes what TileLang's pass
writes, so TileLang's own inference never runs.

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

``target`` is TileLang's target dict (``{"kind": "cuda", "arch": "sm_80"}``) or an arch
string:

>>> _target("sm_90")
{'kind': 'cuda', 'arch': 'sm_90'}
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from math import prod
from typing import Any

from ..algebra.layout import Layout
from ..algebra.nodes import Const, substitute
from ..algebra.shapes import placeholder
from ..backends.checks import check_result
from ..errors import LayoutError, OptionalDependencyError, UnsupportedError
from ..fragment.fragment import Fragment
from ..fragment.partial import PartialFragment
from ..infer import Program, infer_layouts
from ..infer.result import InferenceResult
from .interpose import Interposer, attribute_patch
from .tilelang_exprs import from_tilelang, missing_tilelang, to_tilelang
from .tilelang_gemm import layoutkit_mma_lowering
from .tilelang_ir import allocated_shapes, nodes, thread_extent
from .tilelang_select import Selection, check_selections
from .tilelang_walk import LOOP_TAG, Walked, walk

__all__ = ["COST_MODEL_CONFIG", "LOOP_PREDICATE", "PADDING_GUARD", "PassRecord", "TileLangLoweringError", "TileLangRun",
           "check_selections", "clear_cache", "configured_cost_model", "from_prim_func", "from_tilelang",
           "fuse_parallel_loops", "layoutkit_inference", "lower", "solve_prim_func", "tilelang_error",
           "tilelang_inference", "to_tilelang"]

LAYOUT_MAP = "layout_map"
"""Block annotation of ``T.annotate_layout``: buffer data var -> layout."""
LOOP_LAYOUT = "parallel_loop_layout"
"""For annotation TileLang's ``ParallelOp`` takes as the loop layout (bound to the block's threads)."""


class TileLangLoweringError(UnsupportedError):
    """TileLang's own lowering failed before its LayoutInference pass (or never reached it): there is no
    TileLang answer to compare with and nothing for layoutkit to read."""


class _StopLowering(Exception):
    """Raised inside the hooked LayoutInference pass to end ``tilelang.lower`` there."""


def _target(target) -> dict:
    if isinstance(target, str):
        return {"kind": "cuda", "arch": target}
    if isinstance(target, dict) and "arch" in target:
        return dict(target)
    raise UnsupportedError(f"TileLang target: expected a dict such as {{'kind': 'cuda', 'arch': 'sm_80'}} or an "
                           f"arch string; found {target!r}")


def _tilelang(what: str):
    """The ``tilelang`` module, or :class:`~layoutkit.errors.OptionalDependencyError` saying the optional
    package is missing and which extra installs it."""
    try:
        import tilelang
    except ImportError as err:
        raise OptionalDependencyError(missing_tilelang(what), extra="tilelang") from err
    return tilelang


def _check_func(func, what: str) -> None:
    """Raise :class:`UnsupportedError` unless ``func`` is a TileLang ``PrimFunc`` (``@T.prim_func``); a JIT
    kernel or a Python function would otherwise fail deep inside TileLang with its own error types."""
    tvm = _tilelang(what).tvm
    if not isinstance(func, tvm.tirx.PrimFunc):
        raise UnsupportedError(f"{what}: expected a TileLang PrimFunc (a @T.prim_func kernel); found "
                               f"{type(func).__name__}")


@dataclass
class _Capture:
    before: object = None
    after: object = None
    error: Exception | None = None
    seconds: float | None = None
    threads: int | None = None


def _lower_to_layout_inference(func, target: dict, run_inference: bool = False) -> _Capture:
    """Run ``tilelang.lower`` until LayoutInference; keep the module it would receive (and, with
    ``run_inference``, TileLang's own result and the pass's wall time), and the block's thread count
    as TileLang's ``MaterializeKernelLaunch`` pass fixes it (``T.Kernel`` without ``threads=`` gets the
    CUDA backend's default there; later passes such as warp specialisation may grow ``threadIdx.x``).
    The pass factories are overridden for this thread only (see :func:`layoutkit_inference`)."""
    import tilelang
    from tilelang import tvm

    cap = _Capture()

    def launch(original, *args, **kwargs):
        inner = original(*args, **kwargs)

        def run(mod):
            out = inner(mod)
            cap.threads = thread_extent(_main(out))
            return out

        return run

    def inference(original, *args, **kwargs):
        inner = original(*args, **kwargs)

        def run(mod):
            cap.before = mod
            if run_inference:
                t0 = time.perf_counter()
                try:
                    cap.after = inner(mod)
                except Exception as err:  # TileLang failing to infer is a result here, not an error
                    cap.error = err
                cap.seconds = time.perf_counter() - t0
            raise _StopLowering

        return run

    try:
        with _LAUNCH.override(launch), _INFERENCE.override(inference), tvm.target.Target(target):
            tilelang.lower(func, target=target)
    except _StopLowering:
        pass
    except Exception as err:  # TVM's own error types (a bad target, a kernel its passes reject), made typed
        first = _reason(err)
        raise TileLangLoweringError(f"TileLang's lowering for {target} failed before its LayoutInference pass: "
                               f"{first}") from err
    if cap.before is None:
        raise TileLangLoweringError("TileLang's lowering ended without reaching its LayoutInference pass")
    return cap


def _reason(err: Exception) -> str:
    """The line of a TVM error that says what failed (``Check failed: ...``, ``ValueError: ...``), else its
    last line: TVM appends the offending source with a caret, which alone says nothing.

    >>> _reason(RuntimeError("InternalError: Check failed: a <= b (1 vs. 0)\\n  --> k.py:4\\n 4 | x = y\\n   | ^"))
    'InternalError: Check failed: a <= b (1 vs. 0)'
    """
    lines = [ln.strip() for ln in str(err).strip().splitlines() if ln.strip()]
    told = [ln for ln in lines if "Check failed" in ln or "Error:" in ln or "Fatal:" in ln]
    return (told or lines or [type(err).__name__])[0][:300]


def _main(mod):
    funcs = list(mod.functions.values())
    if len(funcs) != 1:
        raise UnsupportedError(f"expected one PrimFunc in the lowered module; found {len(funcs)}")
    return funcs[0]


# ---- loop tags ------------------------------------------------------------------------------------

def _map_parallel_roots(func, annotate):
    """``func`` with each parallel loop nest root's annotations replaced by ``annotate(k, old, root)``
    (roots numbered in pre-order); inner loops of a nest are left alone."""
    from tilelang import tvm

    tirx = tvm.tirx
    counter = [0]

    def pre(node):
        if not (isinstance(node, tirx.For) and node.kind == tirx.ForKind.PARALLEL):
            return None
        k = counter[0]
        counter[0] += 1
        ann = annotate(k, dict(node.annotations), node)
        return tirx.For(node.loop_var, node.min, node.extent, node.kind, node.body, node.thread_binding, ann,
                        node.step)

    body = tirx.stmt_functor.ir_transform(func.body, pre, None, ["tirx.For"])
    return func.with_body(body)


def _tag_loops(func):
    from tilelang import tvm

    return _map_parallel_roots(func, lambda k, ann, _root: {**ann, LOOP_TAG: tvm.tirx.IntImm("int32", k)})


def _nest_extents(root) -> list | None:
    """The TIR extents of the parallel nest at ``root`` when one is not a constant (a runtime extent,
    laid out over its bound: TileLang's layout of the loop is over these), else None."""
    from tilelang import tvm

    tirx = tvm.tirx
    extents, s = [], root
    while isinstance(s, tirx.For) and s.kind == tirx.ForKind.PARALLEL:
        extents.append(s.extent)
        s = s.body
    return None if all(isinstance(x, tirx.IntImm) for x in extents) else extents


def _walk(func, target, what: str = "from_prim_func") -> Walked:
    tgt = _target(target)
    _check_func(func, what)
    cap = _lower_to_layout_inference(_tag_loops(func), tgt)
    return walk(_main(cap.before), tgt["arch"], allocated_shapes(func), cap.threads)


# ---- public API -----------------------------------------------------------------------------------

def from_prim_func(func, target) -> Program:
    """The :class:`~layoutkit.infer.Program` of a TileLang ``PrimFunc`` as TileLang's LayoutInference
    would see it (after its pipeline passes).  Raises :class:`UnsupportedError` naming a statement
    the Program cannot express, or saying what was expected for a ``func`` that is not a ``PrimFunc``, a
    bad ``target`` or a missing TileLang.

    Needs TileLang (skipped as a doctest), with ``gemm`` a ``@T.prim_func`` GEMM kernel:

    >>> from_prim_func(gemm, "sm_80").threads  # doctest: +SKIP
    128
    """
    return _walk(func, target).program


@dataclass
class TileLangRun:
    """TileLang's own LayoutInference on a kernel, next to the Program layoutkit reads from the same
    module: ``layouts`` by buffer name and ``loop_layouts`` by the Program's parallel op name
    (layoutkit objects, converted exactly), ``seconds`` the pass alone, ``error`` TileLang's message
    when it failed.  ``selections`` are the Program's fragment accesses read with an outer loop
    variable at 0: an inference of ``program`` stands for TileLang's only when it passes
    :func:`check_selections` (``check_selections(run.selections, result.layout_map)``)."""

    program: Program
    layouts: dict[str, Layout] = field(default_factory=dict)
    loop_layouts: dict[str, Fragment] = field(default_factory=dict)
    seconds: float = 0.0
    error: str | None = None
    selections: list[Selection] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.error is not None


def tilelang_error(func, target) -> str | None:
    """TileLang's own LayoutInference on ``func`` alone, layoutkit not involved: ``None`` when it lays the
    kernel out, else the first line of its error (what a kernel the adapter refuses would get from
    TileLang; :func:`tilelang_inference` reads the kernel before it looks at TileLang's answer).

    Needs TileLang (skipped as a doctest), with ``gemm`` a ``@T.prim_func`` GEMM kernel:

    >>> tilelang_error(gemm, "sm_80") is None  # doctest: +SKIP
    True
    """
    _tilelang("tilelang_error")
    _check_func(func, "tilelang_error")
    cap = _lower_to_layout_inference(_tag_loops(func), _target(target), run_inference=True)
    if cap.error is None:
        return None
    return str(cap.error).strip().splitlines()[0][:300] if str(cap.error).strip() else type(cap.error).__name__


def tilelang_inference(func, target) -> TileLangRun:
    """Run TileLang's LayoutInference on ``func`` (timed, the pass alone) and read its answer back; TileLang
    failing to infer is reported in ``error``, not raised.

    Needs TileLang (skipped as a doctest), with ``gemm`` a ``@T.prim_func`` GEMM kernel:

    >>> run = tilelang_inference(gemm, "sm_80")  # doctest: +SKIP
    >>> run.failed, sorted(run.layouts)[:2]  # doctest: +SKIP
    (False, ['A_shared', 'B_shared'])
    """
    tvm = _tilelang("tilelang_inference").tvm

    tirx = tvm.tirx
    tgt = _target(target)
    _check_func(func, "tilelang_inference")
    cap = _lower_to_layout_inference(_tag_loops(func), tgt, run_inference=True)
    walked = walk(_main(cap.before), tgt["arch"], allocated_shapes(func), cap.threads)
    run = TileLangRun(walked.program, seconds=cap.seconds or 0.0, selections=list(walked.selections))
    if cap.error is not None:
        run.error = str(cap.error).strip().splitlines()[0][:300] if str(cap.error).strip() else type(cap.error).__name__
        return run
    by_tag: dict[int, Fragment] = {}
    # loops with a runtime extent: TileLang's layout has a symbolic input shape, read over the bound
    bound = {tag: op.loop for op in walked.program.ops for name, tag in walked.loop_tags.items()
             if op.name == name and op.args.get("dynamic")}
    for node in nodes(_main(cap.after).body, tirx.SBlock, tirx.For):
        if isinstance(node, tirx.SBlock) and LAYOUT_MAP in node.annotations:
            for key, lay in node.annotations[LAYOUT_MAP].items():
                # the pass's output keys by Buffer (views of one storage apart), its input by data var
                name = walked.name_of(key) if hasattr(key, "data") else next(
                    (n for n, v in walked.data_vars.items() if v.same_as(key)), None)
                if name is not None and name not in run.layouts:
                    run.layouts[name] = from_tilelang(lay)
        if isinstance(node, tirx.For) and LOOP_LAYOUT in node.annotations and LOOP_TAG in node.annotations:
            tag = int(node.annotations[LOOP_TAG])
            if tag not in by_tag:
                by_tag[tag] = from_tilelang(node.annotations[LOOP_LAYOUT], bound.get(tag))
    loops = {op.name: op.loop for op in walked.program.ops if op.kind == "parallel"}
    run.loop_layouts = {op: _unfused(by_tag[tag], loops.get(op)) for op, tag in walked.loop_tags.items()
                        if tag in by_tag}
    return run


def _unfused(layout: Fragment, loop: tuple | None) -> Fragment:
    """TileLang's layout of a parallel nest it fused (one loop over the product: nests that touch no
    fragment are fused before inference) over the source nest's loops, which layoutkit reads; the
    fused index is row-major over them, so this is an exact reshape.

    >>> import layoutkit as lk
    >>> f = lk.Fragment([64], forward_thread_fn=lambda i: i // 2, forward_index_fn=lambda i: i % 2)
    >>> _unfused(f, (8, 8)).input_shape
    (8, 8)
    """
    if loop is None or len(layout.input_shape) != 1 or len(loop) < 2 or layout.input_shape[0] != prod(loop):
        return layout
    return layout.reshape(loop)


def solve_prim_func(func, target, cost_model="register-count", *, result: InferenceResult | None = None):
    """``func`` with layoutkit's layouts attached: shared / fragment layouts in the allocating block's
    ``layout_map`` (user annotations kept as written) and parallel-loop layouts in
    ``parallel_loop_layout``.  Lower it with ``tilelang.lower`` / ``tilelang.compile`` as usual.
    ``result`` reuses an inference already run on ``from_prim_func(func, target)``.  Raises
    :class:`UnsupportedError` when a fragment layout leaves (thread, register) slots empty or the
    result converts a fragment, which TileLang cannot lower (see :func:`_check_lowerable`), and
    :class:`~layoutkit.errors.CodegenInputError` naming the buffer when ``result`` is not an
    inference of this kernel's Program.

    Needs TileLang (skipped as a doctest), with ``gemm`` a ``@T.prim_func`` GEMM kernel:

    >>> import tilelang  # doctest: +SKIP
    >>> kernel = tilelang.compile(solve_prim_func(gemm, "sm_80"), target="cuda")  # doctest: +SKIP
    """
    walked = _walk(func, target, "solve_prim_func")
    program = walked.program
    if result is None:
        result = infer_layouts(program, cost_model=cost_model)
    else:  # a result of another kernel would annotate layouts of the wrong shapes, found only by TileLang
        check_result(program, result, "solve_prim_func")
    check_selections(walked.selections, result.layout_map)
    _check_lowerable(result, program)
    # TileLang objects are built here, not inside the IR callbacks (see tilelang_ir.nodes)
    tag_layout: dict[int, Fragment] = {}
    for op, tag in walked.loop_tags.items():
        if op in result.loop_layouts and tag not in tag_layout:
            tag_layout[tag] = result.loop_layouts[op]
    built = {tag: to_tilelang(lay) for tag, lay in tag_layout.items()}

    def annotate_loop(k, ann, root):
        ann.pop(LOOP_TAG, None)
        if k in tag_layout and LOOP_LAYOUT not in ann:  # a loop layout the kernel pins stays as written
            extents = _nest_extents(root)
            ann[LOOP_LAYOUT] = built[k] if extents is None else to_tilelang(tag_layout[k], shape=extents)
        return ann

    out = _map_parallel_roots(func, annotate_loop)
    return _annotate_blocks(out, program, result)


def lower(func, target, cost_model: str | None = None, fallback: bool = True, lower_gemm: bool = True, **kwargs):
    """``tilelang.lower(func, target=...)`` with layoutkit's solver substituted for TileLang's
    LayoutInference pass (TileLang's own is not run); the same artifact (and, where both solve, the same
    CUDA text).  A kernel layoutkit refuses is handed to TileLang's own pass (``fallback=True``) or raises
    the typed error.  ``cost_model`` None follows TileLang's ``tl.layout_cost_model`` pass config;
    ``lower_gemm=False`` keeps TileLang's own ``T.gemm`` lowering instead of layoutkit's (see
    :func:`layoutkit_inference`).  Returns TileLang's ``CompiledArtifact`` (``kernel_source`` the CUDA
    text); ``target`` as for :func:`from_prim_func`; ``kwargs`` go to ``tilelang.lower``.

    Needs TileLang (skipped as a doctest), with ``gemm`` a ``@T.prim_func`` GEMM kernel:

    >>> "__global__" in lower(gemm, "sm_80").kernel_source  # doctest: +SKIP
    True
    """
    tilelang = _tilelang("lower")
    tgt = _target(target)
    with layoutkit_inference(cost_model, fallback, lower_gemm), tilelang.tvm.target.Target(tgt):
        return tilelang.lower(func, target=tgt, **kwargs)


def _check_lowerable(result: InferenceResult, program: Program) -> None:
    """TileLang 0.1.15 lowers a fragment through the inverse of its layout, so every (thread, register)
    slot must hold an element; a layout with empty slots (a ragged tail tile) would fail deep inside
    its lowering, so it is refused here with the numbers.  So is a layout conversion (a fragment read
    by one op through another layout): TileLang annotations have no way to say it."""
    for conv in getattr(result, "conversions", ()):
        raise UnsupportedError(f"solve_prim_func: inference converts fragment {conv.buffer} for {conv.op} "
                               f"(read as {conv.dst} while laid out as {conv.src}); TileLang annotations cannot "
                               f"express a conversion: infer with a cost model that does not convert")
    for name, lay in result.layout_map.items():
        if not (isinstance(lay, Fragment) and name in program.buffers and program.buffers[name].is_fragment):
            continue
        slots = lay.thread_extent * lay.local_size
        held = lay.size * lay.replicate_size
        if slots != held:
            raise UnsupportedError(f"solve_prim_func: fragment {name} {lay.input_shape} is laid out over "
                                   f"{lay.thread_extent} threads x {lay.local_size} registers = {slots} slots for "
                                   f"{held} elements; TileLang 0.1.15 lowers only fragments that fill every slot: "
                                   f"{lay}")


def _annotate_blocks(func, program: Program, result: InferenceResult):
    """Add the solved layouts of each block's allocated buffers to its ``layout_map``."""
    from tilelang import tvm

    tirx = tvm.tirx
    # a reducer is not annotated: TileLang derives its partial from the (annotated) update loops again, where
    # an annotated partial would be a strict pin deriving those loops instead
    theirs = {name: to_tilelang(_for_source_shape(lay, program, name)) for name, lay in result.layout_map.items()
              if name in program.buffers and program.buffers[name].scope not in ("global", "local.reducer")}

    def post(node):
        if not isinstance(node, tirx.SBlock) or not len(node.alloc_buffers):
            return None
        old = dict(node.annotations.get(LAYOUT_MAP, {}))
        new = dict(old)
        for buf in node.alloc_buffers:
            if not any(buf.data.same_as(k) for k in old) and buf.name in theirs:
                new[buf.data] = theirs[buf.name]
        if len(new) == len(old):
            return None
        ann = {**dict(node.annotations), LAYOUT_MAP: new}
        return tirx.SBlock(node.iter_vars, node.reads, node.writes, node.name_hint, node.body, node.init,
                           node.alloc_buffers, node.match_buffers, ann)

    return func.with_body(tirx.stmt_functor.ir_transform(func.body, None, post, ["tirx.SBlock"]))


def _for_source_shape(layout: Layout, program: Program, name: str) -> Layout:
    """A pipelined buffer's layout as the source kernel declares it, one stage, when the staged layout
    is that expanded over the stage dim (TileLang's pipeline pass expands an annotation again).
    Otherwise the staged layout itself: the pipeline pass leaves an annotation whose shape is not the
    source buffer's alone, and LayoutInference then finds it matching the staged buffer.

    >>> from layoutkit.infer import Program
    >>> p = Program(); _ = p.alloc_shared("s", (4, 4), "float16"); p.stages["s"] = 2
    >>> _for_source_shape(Layout([2, 4, 4], lambda s, i, j: (s, j, i)), p, "s").input_shape
    (4, 4)
    >>> _for_source_shape(Layout([2, 4, 4], lambda s, i, j: (s, (i + s) % 4, j)), p, "s").input_shape
    (2, 4, 4)
    """
    if program.stages.get(name, 1) == 1 or isinstance(layout, Fragment):
        return layout
    base = _stage_slice(layout)
    if base is None or not base.expand([layout.input_shape[0]]).is_equal(layout):
        return layout
    return base


def _stage_slice(layout: Layout) -> Layout | None:
    """Stage 0 of ``layout`` without its leading stage output, or None when the first output is not
    the stage index alone."""
    fv = layout.forward_vars
    exprs = layout.forward_index
    if len(exprs) < 2 or exprs[0] != fv[0]:
        return None
    shape = layout.input_shape[1:]
    mapping = {fv[0]: Const(0), **{v: placeholder(d, n) for d, (v, n) in enumerate(zip(fv[1:], shape))}}
    try:
        return Layout.from_exprs(shape, [substitute(e, mapping) for e in exprs[1:]])
    except LayoutError:
        return None


# ==== layoutkit as TileLang's LayoutInference pass =====================================================

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
    """One :func:`layoutkit_inference` block: its settings, its record (updated under ``lock``: a block
    carried into other threads by ``contextvars.copy_context`` is shared by them) and the typed refusal
    that ended a lowering in it."""

    cost_model: str | None
    fallback: bool
    record: PassRecord
    error: LayoutError | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True)
class _Launch:
    """What one lowering's ``MaterializeKernelLaunch`` saw: the source buffers' shapes (before pipelining
    adds stage dims) and the block's thread count; read by the same lowering's LayoutInference."""

    source_shapes: dict
    threads: int | None


_LAUNCHED: ContextVar[_Launch | None] = ContextVar("layoutkit.tilelang.launched", default=None)
"""The launch facts of the lowering running in this context (a thread lowers one kernel at a time)."""

_INFERENCE: Interposer = Interposer("tilelang.transform.LayoutInference",
                                    attribute_patch("tilelang.transform", "LayoutInference"))
_LAUNCH: Interposer = Interposer("tilelang.transform.MaterializeKernelLaunch",
                                 attribute_patch("tilelang.transform", "MaterializeKernelLaunch"))
"""TileLang's pass factories, overridden per thread / context (see :mod:`.interpose`)."""


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
    cover are lowered by TileLang); ``False`` keeps TileLang's inside this block, even within an outer one.

    Threads: the block holds for the thread (the :mod:`contextvars` context) that opens it.  Any number
    of threads may open blocks at once, nest them and leave them in any order; each lowering reads its
    own launch facts and reports to the innermost block of its own thread.  A thread with no block of
    its own (a worker of a thread pool started inside a block) lowers with TileLang's own pass; to carry
    a block into a worker, open the block in the worker or run it in ``contextvars.copy_context()``.
    TileLang's pass factories and its ``cuda.mma`` GEMM entry are patched once, while any block is open
    in the process, and TileLang's own objects are back when the last one closes, also on an error.

    Needs TileLang (skipped as a doctest), with ``gemm`` a ``@T.prim_func`` GEMM kernel:

    >>> with layoutkit_inference() as record:  # doctest: +SKIP
    ...     kernel = tilelang.compile(gemm, target="cuda")
    >>> record.solved, record.fallbacks  # doctest: +SKIP
    (1, [])
    """
    _tilelang("layoutkit_inference")
    state = _State(cost_model, fallback, PassRecord())

    def launch(original, *args, **kwargs):
        inner = original(*args, **kwargs)

        def run(mod):
            # the module the pipeline starts from still has the source shapes (no stage dims yet)
            funcs = list(mod.functions.values())
            shapes = allocated_shapes(funcs[0]) if len(funcs) == 1 else {}
            out = inner(mod)
            funcs = list(out.functions.values())
            _LAUNCHED.set(_Launch(shapes, thread_extent(funcs[0]) if len(funcs) == 1 else None))
            return out

        return run

    def inference(original, *_args, **_kwargs):
        return _make_pass(state, original)

    try:
        with _LAUNCH.override(launch), _INFERENCE.override(inference), \
                layoutkit_mma_lowering(enabled=lower_gemm):
            yield state.record
    except Exception as err:
        # TVM wraps an exception raised inside a Python pass in its own RuntimeError: give back ours
        if state.error is not None and not isinstance(err, LayoutError):
            raise state.error from None
        raise


# ---- the pass -------------------------------------------------------------------------------------

def _make_pass(state: _State, original):
    from tilelang import tvm

    def run(func, mod, ctx):
        t0 = time.perf_counter()
        launched = _LAUNCHED.get() or _Launch({}, None)
        try:
            out = _solve_cached(func, launched, state.cost_model or configured_cost_model())
            fell_back = None
        except LayoutError as err:  # layoutkit's typed refusals
            if not state.fallback:
                state.error = err
                raise
            fell_back = f"{type(err).__name__}: {err}"
            out = _main(original()(tvm.IRModule({"main": func})))
        with state.lock:
            if fell_back is None:
                state.record.solved += 1
            else:
                state.record.fallbacks.append(fell_back)
            state.record.seconds += time.perf_counter() - t0
        return out

    return tvm.tirx.transform.prim_func_pass(run, opt_level=0, name="layoutkit.LayoutInference")


_CACHE_SIZE = 64
_cache: OrderedDict[tuple, tuple[Any, Any]] = OrderedDict()
"""Solved functions: ``(structural hash, cost model, source shapes, threads) -> (input, output)``."""
_cache_lock = threading.Lock()
"""Held while ``_cache`` is read or changed (lowerings in several threads share it; solving is outside)."""


def clear_cache() -> None:
    """Forget every function the pass has solved (see :func:`_solve_cached`)."""
    with _cache_lock:
        _cache.clear()


def _solve_cached(func, launched: _Launch, cost_model: str):
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
               tuple(sorted(launched.source_shapes.items())), launched.threads)
    except Exception:  # noqa: BLE001 - an IR node without a structural hash: solve without the cache
        return _solve(func, launched, cost_model)
    with _cache_lock:
        hit = _cache.get(key)
    if hit is not None and _same_params(hit[0], func) and tvm.ir.structural_equal(hit[0], func,
                                                                                  map_free_vars=True):
        with _cache_lock:
            if key in _cache:
                _cache.move_to_end(key)
        return hit[1]
    out = _solve(func, launched, cost_model)
    with _cache_lock:
        _cache[key] = (func, out)
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return out


def _same_params(a, b) -> bool:
    """The two functions take the very same parameter vars and buffers."""
    if len(a.params) != len(b.params) or not all(x.same_as(y) for x, y in zip(a.params, b.params)):
        return False
    return all(p in b.buffer_map and a.buffer_map[p].same_as(b.buffer_map[p]) for p in a.params if p in a.buffer_map)


def _solve(func, launched: _Launch, cost_model: str):
    arch = str(func.attrs["target"].attrs["arch"]) if func.attrs and "target" in func.attrs else "sm_80"
    tagged = _tag_loops(fuse_parallel_loops(func))
    walked = walk(tagged, arch, launched.source_shapes, launched.threads)
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
