"""The tile-program IR layout inference works on.

A :class:`Program` holds buffers (global tensors, shared memory, register fragments, per-thread
locals) and a list of tile operations over them: copies between regions, GEMMs, parallel loops with
read/write index functions, reductions, fills, atomic adds and transposes.  ``pipelined(num_stages)``
multi-versions the shared buffers written inside it (a leading stage dim, as TileLang's pipeline
pass does before layout inference).  Programs round-trip through JSON (:mod:`.serialize`); the values
they are made of (:class:`Buffer`, :class:`Region`, :class:`Access`, :class:`Op`) are in :mod:`.ops`.

The program's target (:mod:`.target`) decides its scopes, how copies and GEMMs are checked, and which
extra op builders it has (Ascend: ``p.mad``, ``p.dual_copy``, ``with p.simt_vf(...)``, ``p.set_atomic``):
they are looked up by name in the target registry, so this module knows no target.

>>> p = Program(threads=128, target="sm_80")
>>> A = p.tensor("A", (1024, 1024), "float16")
>>> A_s = p.alloc_shared("A_shared", (32, 32), "float16")
>>> with p.pipelined(num_stages=2):
...     _ = p.copy(A[0:32, 0:32], A_s)
>>> p.shape_of(A_s)
(2, 32, 32)
>>> Program.from_json(p.to_json()).to_json() == p.to_json()
True
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace

from ..algebra.layout import Layout
from ..algebra.shapes import check_shape
from ..dtypes import canonical_dtype
from ..errors import ScopeError, ShapeError
from ..fragment.fragment import Fragment
from ..scopes import FRAGMENT, LOCAL, REDUCER, SHARED_DYN
from . import validate
from .library import TILE_OPS
from .ops import Buffer, Op, Region, as_region
from .reducers import check_op
from .serialize import program_from_json, program_to_dict, program_to_json
from .soundness import fragment_violation
from .target import get_builder, get_target


class Program:
    """A kernel body for layout inference (see the module doc)."""

    def __init__(self, threads: int = 128, target: str = "sm_80"):
        self.threads = validate.positive(threads, "Program threads")
        if not isinstance(target, str) or not target:
            raise ShapeError(f"Program target must be a target name such as 'sm_80'; found {type(target).__name__} "
                             f"{target!r}")
        self.target = target
        self.buffers: dict[str, Buffer] = {}
        self.ops: list[Op] = []
        self.annotations: dict[str, Layout] = {}
        self.loop_annotations: dict[str, Fragment] = {}
        """Loop layouts the kernel pins (:meth:`annotate_loop`), by op name."""
        self.stages: dict[str, int] = {}
        self._stage: int | None = None
        self.next_uid = 0
        """The uid the next op gets (passes that insert ops take uids from it)."""
        self.regions: dict[int, list[Op]] = {}
        self._region_stack: list[list[Op]] = []
        self.modes: dict[str, Op] = {}
        """Builder state of the target's extra ops (e.g. the Ascend atomic store mode in force)."""
        self._bounds: tuple[int, int] | None = None
        self.reducer_ops: dict[str, str] = {}
        """The combine op of each reducer (``alloc_reducer``'s ``op``)."""

    @property
    def hooks(self):
        """The :class:`~layoutkit.infer.target.Target` of this program's target string."""
        return get_target(self.target)

    @property
    def pipeline_stage(self) -> int | None:
        """The stage count of the open :meth:`pipelined` block (None outside one): a builder gives the
        shared buffers it writes a leading stage dim of this extent."""
        return self._stage

    def __getattr__(self, name: str):
        """The tile ops' builders (:mod:`.library`: ``p.copy``, ``p.gemm``, ...; ops registered with
        :func:`~layoutkit.infer.register_op`) and the target's extra builders (``p.mad(...)`` on Ascend), bound
        to this program."""
        if name.startswith("_"):
            raise AttributeError(name)
        fn = TILE_OPS.builder(name) or get_builder(name, self.target)
        if fn is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return fn.__get__(self)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(TILE_OPS.builder_names()))

    # ---- buffers --------------------------------------------------------------------------------
    def _add(self, name: str, shape, dtype, scope: str, alias_of: str | None = None) -> Buffer:
        if not isinstance(name, str) or not name:
            raise ShapeError(f"buffer name must be a non-empty string; found {type(name).__name__} {name!r}")
        if name in self.buffers:
            raise ShapeError(f"buffer {name!r} is already declared")
        scopes = self.hooks.scopes_of(self.target)
        if scope not in scopes:
            raise ScopeError(f"buffer {name!r}: target {self.target!r} has no scope {scope!r}; expected one of "
                             f"{scopes}", str(name), str(scope), self.target, scopes)
        buf = Buffer(str(name), check_shape(shape, f"buffer {name} shape"), canonical_dtype(dtype), scope, alias_of)
        self.buffers[buf.name] = buf
        return buf

    def tensor(self, name: str, shape, dtype) -> Buffer:
        return self._add(name, shape, dtype, self.hooks.global_scope)

    def alloc(self, name: str, shape, dtype, scope: str) -> Buffer:
        """Any scope of the target (Ascend: ``gm``, ``ub``, ``l1``, ``l0a``, ``l0b``, ``l0c``)."""
        return self._add(name, shape, dtype, scope)

    def alloc_shared(self, name: str, shape, dtype, scope: str = SHARED_DYN) -> Buffer:
        """Shared memory, in the scope the target maps it to (Ascend: the vector unified buffer ``ub``)."""
        return self._add(name, shape, dtype, self.hooks.shared_scope(scope))

    def alloc_fragment(self, name: str, shape, dtype) -> Buffer:
        return self._add(name, shape, dtype, FRAGMENT)

    def alloc_local(self, name: str, shape, dtype) -> Buffer:
        return self._add(name, shape, dtype, LOCAL)

    def alloc_reducer(self, name: str, shape, dtype, op: str = "sum") -> Buffer:
        """A reducer (``T.alloc_reducer``, combine ``op``): laid out by a PartialFragment, see :mod:`.reducers`."""
        buf = self._add(name, shape, dtype, REDUCER)
        self.reducer_ops[buf.name] = check_op(name, op)
        return buf

    def alias(self, name: str, base: Buffer, shape=None, dtype=None) -> Buffer:
        """A view of ``base``'s storage (same scope); layouts are copied to it after inference,
        rescaled by the element-width ratio."""
        if not isinstance(base, Buffer):
            raise ShapeError(f"alias {name!r}: base must be a Buffer of this program; found {type(base).__name__} "
                             f"{base!r}")
        self.own(base)
        root = base.alias_of or base.name
        return self._add(name, base.shape if shape is None else shape, dtype or base.dtype, base.scope, root)

    def shape_of(self, buf: Buffer | str) -> tuple[int, ...]:
        """The buffer's shape as layout inference sees it (pipeline stage dim included)."""
        key = buf if isinstance(buf, str) else buf.name if isinstance(buf, Buffer) else None
        if key not in self.buffers:
            raise ShapeError(f"shape_of: expected a Buffer of this program or its name; found {type(buf).__name__} "
                             f"{buf!r}")
        b = self.buffers[key]
        s = self.stages.get(b.name) or self.stages.get(b.alias_of or "", 1)
        return ((s,) + b.shape) if s > 1 else b.shape

    def own(self, x: Buffer | Region) -> Region:
        """``x`` as a region, checked to belong to this program."""
        r = as_region(x)
        if self.buffers.get(r.buffer.name) != r.buffer:
            raise ShapeError(f"buffer {r.buffer.name!r} does not belong to this program")
        return r

    # ---- ops ------------------------------------------------------------------------------------
    def emit(self, kind: str, args: dict, loop=None, accesses=()) -> Op:
        """Append an op (into the open region, if any) with the next uid."""
        validate.text(kind, "emit: op kind", "emit")
        validate.mapping(args, f"emit {kind}: args", "emit")
        named = TILE_OPS.buffer_args(kind)
        names = tuple(dict.fromkeys([a.buffer for a in accesses] + [v for k, v in args.items()
                                                                      if k in named and isinstance(v, str)]
                                    + [u["buffer"] for u in args.get("updates") or ()]))

        if self._bounds is not None:
            args = {**args, "thread_range": list(self._bounds)}
        op = Op(kind, self.next_uid, args, loop, tuple(accesses), names)
        self.next_uid += 1
        (self._region_stack[-1] if self._region_stack else self.ops).append(op)
        return op

    def select(self, op: Op, buffer: Buffer, dims: Sequence[int]) -> Op:
        """Declare that loop op ``op`` (a parallel loop or a copy) indexes fragment ``buffer`` in
        ``dims`` by a variable from outside its loop, read at a fixed value: the loop rule then refuses
        every layout of ``buffer`` whose thread depends on those dims (for TileLang, which keeps the
        variable symbolic, no layout of the loop holds for all its values).  An access whose every
        index is then a constant (``x[k]`` read at ``k = 0``) still counts as a non-constant one: the
        strict level does not replicate ``x`` for it, and a loop laid out from an ``x`` whose thread
        depends on those dims is refused (:class:`~layoutkit.errors.UnsupportedError`).  Returns the
        op that replaces ``op`` (its ``args["selected"]`` maps buffer names to dims).

        >>> p = Program(threads=128)
        >>> x = p.alloc_fragment("x", (4, 128), "float32"); y = p.alloc_fragment("y", (128,), "float32")
        >>> op = p.select(p.parallel((128,), writes=[(y, "lambda j: (j,)")], reads=[(x, "lambda j: (0, j)")]), x, [0])
        >>> op.args["selected"]
        {'x': [0]}
        """
        what = f"select {getattr(op, 'name', op)!r}"
        self.own(buffer)
        if not isinstance(op, Op) or op.loop is None or not any(a.buffer == buffer.name for a in op.accesses):
            raise validate.OpValidationError(f"{what}: expected a loop op of this program accessing {buffer.name}",
                                             what, buffer.name)
        ok = isinstance(dims, (list, tuple)) and all(isinstance(d, int) and not isinstance(d, bool) for d in dims)
        picked = sorted(set(dims)) if ok else []
        if not picked or picked[0] < 0 or picked[-1] >= len(buffer.shape):
            raise validate.OpValidationError(f"{what}: expected dims of {buffer.name} (rank {len(buffer.shape)}); "
                                             f"found {list(dims)}", what, buffer.name)
        selected = {**op.args.get("selected", {}), buffer.name: picked}
        new = replace(op, args={**op.args, "selected": selected})
        for ops in (self.ops, *self.regions.values(), *self._region_stack):
            for k, o in enumerate(ops):
                if o is op:
                    ops[k] = new
        return new

    def annotate_layout(self, mapping: dict) -> None:
        """``{buffer: Layout}``: strict layouts inference can never override.  Each is checked against its
        buffer first: the same input shape, and for a register fragment a :class:`Fragment` on the
        program's threads with one element per (thread, register) slot; anything else raises
        :class:`~layoutkit.infer.OpValidationError` naming the buffer.

        >>> import layoutkit as lk
        >>> p = Program(threads=32)
        >>> x = p.alloc_fragment("x", (8,), "float32")
        >>> try:
        ...     p.annotate_layout({x: lk.Fragment([8], forward_thread_fn=lambda i: i % 4, forward_index_fn=[0])})
        ... except validate.OpValidationError as e:
        ...     print(e.buffer, "|", e)
        x | annotate_layout: the fragment for x puts two elements on one thread register: (0,) and (4,) are \
both in thread 0, register 0
        """
        if not isinstance(mapping, Mapping):
            raise validate.OpValidationError(f"annotate_layout expects a {{buffer: layout}} mapping; found "
                                             f"{type(mapping).__name__}", "annotate_layout")
        for buf, layout in mapping.items():
            name = self.own(buf).buffer.name
            if not isinstance(buf, Buffer):
                # a region would annotate part of a buffer, which no layout describes
                raise validate.OpValidationError(f"annotate_layout: the key for {name} must be the buffer itself; "
                                                 f"found {type(buf).__name__} {buf!r}", "annotate_layout", name)
            if not isinstance(layout, Layout):
                raise validate.OpValidationError(f"annotate_layout: {name} needs a Layout or Fragment; found "
                                                 f"{type(layout).__name__}", "annotate_layout", name)
            why = self._annotation_problem(name, layout)
            if why is not None:
                raise validate.OpValidationError(f"annotate_layout: {why}", "annotate_layout", name)
            self.annotations[name] = layout

    def annotate_loop(self, op: Op, layout: Fragment) -> None:
        """Pin the loop layout of ``op`` (a parallel loop, or a copy / fill / atomic add lowered to one):
        TileLang's ``T.Parallel(..., loop_layout=)`` / ``T.copy(..., loop_layout=)``.  Inference takes it
        as the loop's layout before any fragment could propose one, completes the fragments the loop
        lays out from it and checks those already laid out against it.  It must lay out the loop's
        shape on the program's threads, one element per (thread, register) slot.

        >>> import layoutkit as lk
        >>> p = Program(threads=4)
        >>> x = p.alloc_fragment("x", (4, 2), "float32")
        >>> op = p.parallel((4, 2), writes=[(x, lambda i, j: (i, j))])
        >>> p.annotate_loop(op, lk.Fragment([4, 2], forward_thread_fn=lambda i, j: i, forward_index_fn=lambda i, j: j))
        >>> from layoutkit.infer import infer_layouts
        >>> str(infer_layouts(p).layout_map["x"].forward_thread)
        '_i'
        """
        what = "annotate_loop"
        mine = {o.name for o in self.ops} | {o.name for body in self.regions.values() for o in body}
        if not isinstance(op, Op) or op.name not in mine or op.loop is None:
            raise validate.OpValidationError(f"{what}: expected a loop op of this program; found "
                                             f"{type(op).__name__} {op!r:.80}", what)
        if not isinstance(layout, Fragment):
            raise validate.OpValidationError(f"{what}: {op.name} needs a Fragment; found {type(layout).__name__}",
                                             op.name)
        why = fragment_violation(layout, op.loop, self.threads)
        if why is not None:
            raise validate.OpValidationError(f"{what}: the loop layout of {op.name} {why}", op.name)
        self.loop_annotations[op.name] = layout

    def _annotation_problem(self, name: str, layout: Layout) -> str | None:
        """Why ``layout`` cannot be ``name``'s annotation, or None."""
        shape = self.shape_of(name)
        if tuple(layout.input_shape) != shape:
            return (f"{name} has shape {list(shape)}; the layout's input shape is {list(layout.input_shape)} "
                    f"({layout.describe()})")
        if self.buffers[name].scope != FRAGMENT:
            return None
        if not isinstance(layout, Fragment):
            return f"{name} is a register fragment and needs a Fragment; found a plain {layout.describe()}"
        why = fragment_violation(layout, shape, self.threads)
        return None if why is None else f"the fragment for {name} {why}"

    @contextmanager
    def region(self, kind: str, args: dict, label: str = "") -> Iterator[None]:
        """Ops built inside go into the body of one ``kind`` op (``program.regions[uid]``), which rules see
        as one op over the body's buffers (a target's vector regions); ``label`` names it in errors."""
        validate.text(kind, "region kind", "region")
        validate.mapping(args, f"{kind} region args", "region")
        if self._region_stack:
            raise ShapeError(f"{label or kind + ':'} regions do not nest")
        body: list[Op] = []
        self._region_stack.append(body)
        try:
            yield
        finally:
            self._region_stack.pop()
        uid = self.next_uid
        self.next_uid += 1
        self.regions[uid] = body
        names = tuple(dict.fromkeys(b for op in body for b in op.buffers))
        bounds = {} if self._bounds is None else {"thread_range": list(self._bounds)}
        self.ops.append(Op(kind, uid, {**args, **bounds}, None, (), names))

    @contextmanager
    def thread_bounds(self, start: int, extent: int) -> Iterator[Program]:
        """Ops built inside run on threads ``[start, start + extent)`` of the block only (TileLang's ops
        under ``if tx < 128``): they record ``args["thread_range"]`` and their rules lay out over those
        threads.  The whole block (``(0, threads)``) records nothing.

        >>> p = Program(threads=256)
        >>> x = p.alloc_fragment("x", (128, 8), "float32")
        >>> with p.thread_bounds(128, 128):
        ...     op = p.fill(x, 0.0)
        >>> op.args["thread_range"]
        [128, 128]
        """
        ok = all(isinstance(v, int) and not isinstance(v, bool) for v in (start, extent))
        if not ok or start < 0 or extent <= 0 or start + extent > self.threads:
            raise ShapeError(f"thread_bounds: expected threads [start, start + extent) inside the block's "
                             f"{self.threads}; found start {start!r}, extent {extent!r}")
        old, self._bounds = self._bounds, (None if (start, extent) == (0, self.threads) else (start, extent))
        try:
            yield self
        finally:
            self._bounds = old

    @contextmanager
    def pipelined(self, num_stages: int = 2) -> Iterator[Program]:
        """Shared buffers written inside get a leading stage dim of ``num_stages`` (when > 1)."""
        old, self._stage = self._stage, validate.positive(num_stages, "num_stages")
        try:
            yield self
        finally:
            self._stage = old

    # ---- JSON (:mod:`.serialize`) ----------------------------------------------------------------
    def to_dict(self) -> dict:
        return program_to_dict(self)

    def to_json(self) -> str:
        return program_to_json(self)

    @classmethod
    def from_json(cls, text: str | bytes) -> Program:
        """Rebuild a program; index expressions are parsed by the safe parser."""
        return program_from_json(text, cls)

