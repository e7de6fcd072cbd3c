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
  inference is not run; see :mod:`.tilelang_pass`, whose ``layoutkit_inference()`` context does the
  same for ``tilelang.compile`` / ``@tilelang.jit``).
- :func:`tilelang_inference` runs TileLang's own pass on the same module and times it (for tests and
  benchmarks that compare the two solvers).

TileLang is imported inside these functions (the ``tilelang`` extra); importing this module never
needs it.  Bad input raises a typed error before TileLang sees it: no TileLang installed, a ``func`` that
is not a ``PrimFunc`` or a malformed ``target`` (:class:`UnsupportedError`), a ``result`` that is not an
inference of this kernel's Program (:class:`~layoutkit.codegen.checks.CodegenInputError` naming the
buffer); a target TileLang's own lowering rejects is reported as :class:`UnsupportedError` with TVM's
message.  Only CUDA targets are supported (TileLang's HIP and CPU targets are not).

``target`` is TileLang's target dict (``{"kind": "cuda", "arch": "sm_80"}``) or an arch
string:

>>> _target("sm_90")
{'kind': 'cuda', 'arch': 'sm_90'}
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from math import prod

from ..algebra.layout import Layout
from ..algebra.nodes import Const, substitute
from ..algebra.shapes import placeholder
from ..codegen.checks import check_result
from ..errors import LayoutError, UnsupportedError
from ..fragment.fragment import Fragment
from ..infer import Program, infer_layouts
from ..infer.result import InferenceResult
from .tilelang_exprs import from_tilelang, to_tilelang
from .tilelang_ir import allocated_shapes, nodes, thread_extent
from .tilelang_select import Selection, check_selections
from .tilelang_walk import LOOP_TAG, Walked, walk

__all__ = ["TileLangLoweringError", "TileLangRun", "check_selections", "from_prim_func", "from_tilelang", "lower",
           "solve_prim_func", "tilelang_error", "tilelang_inference", "to_tilelang"]

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
    """The ``tilelang`` module, or :class:`UnsupportedError` saying the optional package is missing.

    >>> _missing_message("from_prim_func")[:55]
    'from_prim_func: expected the tilelang package (0.1.15, '
    """
    try:
        import tilelang
    except ImportError as err:
        raise UnsupportedError(_missing_message(what)) from err
    return tilelang


def _missing_message(what: str) -> str:
    return (f"{what}: expected the tilelang package (0.1.15, the 'tilelang' extra) to be installed; found no "
            "importable tilelang")


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
    The pass factories ``tilelang.transform.LayoutInference`` and ``MaterializeKernelLaunch`` are
    swapped for the call and always restored; two threads lowering at once would see each other's
    hooks, so callers serialise."""
    import tilelang
    import tilelang.transform as tl_transform
    from tilelang import tvm

    cap = _Capture()
    original = tl_transform.LayoutInference
    original_launch = tl_transform.MaterializeKernelLaunch

    def hooked_launch(*args, **kwargs):
        inner = original_launch(*args, **kwargs)

        def run(mod):
            out = inner(mod)
            cap.threads = thread_extent(_main(out))
            return out

        return run

    def hooked(*args, **kwargs):
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

    tl_transform.LayoutInference = hooked
    tl_transform.MaterializeKernelLaunch = hooked_launch
    try:
        with tvm.target.Target(target):
            tilelang.lower(func, target=target)
    except _StopLowering:
        pass
    except Exception as err:  # TVM's own error types (a bad target, a kernel its passes reject), made typed
        first = _reason(err)
        raise TileLangLoweringError(f"TileLang's lowering for {target} failed before its LayoutInference pass: "
                               f"{first}") from err
    finally:
        tl_transform.LayoutInference = original
        tl_transform.MaterializeKernelLaunch = original_launch
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
    :class:`~layoutkit.codegen.checks.CodegenInputError` naming the buffer when ``result`` is not an
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


def lower(func, target, cost_model: str | None = None, fallback: bool = True, **kwargs):
    """``tilelang.lower(func, target=...)`` with layoutkit's solver substituted for TileLang's
    LayoutInference pass; the same artifact (and, where both solve, the same CUDA text).  A kernel
    layoutkit refuses is handed to TileLang's own pass (``fallback=True``) or raises the typed error.
    ``cost_model`` None follows TileLang's ``tl.layout_cost_model`` pass config; ``lower_gemm=False``
    (a keyword) keeps TileLang's own ``T.gemm`` lowering instead of layoutkit's.  See
    :func:`layoutkit.frontends.tilelang_pass.lower`.

    Needs TileLang (skipped as a doctest), with ``gemm`` a ``@T.prim_func`` GEMM kernel:

    >>> "__global__" in lower(gemm, "sm_80").kernel_source  # doctest: +SKIP
    True
    """
    from . import tilelang_pass

    return tilelang_pass.lower(func, target, cost_model, fallback, **kwargs)


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
