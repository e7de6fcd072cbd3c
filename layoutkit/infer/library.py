"""The built-in tile ops: their builders (the :class:`~layoutkit.infer.Program` methods ``copy``, ``fill``,
``clear``, ``parallel``, ``transpose``, ``reduce``, ``gemm``, ``gemm_sp``, ``atomic_add`` / ``atomic_max`` /
``atomic_min``, ``reducer_init``, ``finalize_reducer``), their definitions (:class:`~.tileop.TileOp`) and the
one registry, :data:`TILE_OPS`, that inference, the JSON form and the backends look op kinds up in.  A target
adds rules and ops through :func:`register_rule` / :func:`register_op` (its backend does, when registered); so
may any code outside the package (see ``docs/design.md``, "Recipe: add a tile op").

>>> from layoutkit.infer import Program
>>> p = Program(threads=64)
>>> x = p.alloc_fragment("x", (8, 8), "float32")
>>> p.fill(x, 1.0).kind, get_op("fill").required, "clear" in TILE_OPS.builder_names()
('fill', ('dst', 'value'), True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import deferred
from ..algebra.shapes import check_shape
from ..errors import ProgramFormatError
from ..scopes import is_shared
from . import schema, validate
from .atomics import build_atomic
from .gemm_sp import build_gemm_sp, operand_regions
from .loops import loop_rule
from .ops import Access, Buffer, Op, Region, region_access, transpose_access
from .reduce import reduce_rule
from .reducers import check_reducer, finalize_args, finalize_rule, init_rule
from .rules import Rule
from .tileop import OpRegistry, TileOp


def reducer_init(p, acc: Buffer) -> Op:
    """Open the reducer's epoch (``T.reducer_init``); proposes no layout."""
    check_reducer(p, acc, "reducer_init")
    return p.emit("reducer_init", {"dst": acc.name})


def finalize_reducer(p, acc: Buffer, dst: Buffer) -> Op:
    """Complete the reduction into fragment ``dst`` of the same shape (``T.finalize_reducer(acc, dst)``)."""
    return p.emit("finalize_reducer", finalize_args(p, acc, dst, f"finalize_reducer#{p.next_uid}"))


def copy(p, src: Buffer | Region, dst: Buffer | Region) -> Op:
    s, d = p.own(src), p.own(dst)
    op = p.hooks.build_copy(p, s, d)
    if op is not None:
        return op
    sr, dr, loop = validate.copy_regions(s, d, f"copy#{p.next_uid}")
    if p.pipeline_stage and is_shared(d.buffer.scope):
        p.stages[d.buffer.name] = p.pipeline_stage
    accesses = (region_access(s.buffer, sr, loop, False), region_access(d.buffer, dr, loop, True))
    return p.emit("copy", {"src": s.buffer.name, "dst": d.buffer.name, "src_region": sr,
                               "dst_region": dr, "cast": s.buffer.dtype != d.buffer.dtype}, loop, accesses)


def gemm(p, A: Buffer | Region, B: Buffer | Region, C: Buffer, transpose_A: bool = False,
         transpose_B: bool = False, policy: str = "square", clear_accum: bool = False) -> Op:
    """``T.gemm``; A and B may be regions of shared buffers (``A_s[:, 32:64]``, ``B_s[b, :, :]``):
    M / N / K come from the regions' last two extents, the layouts cover the whole buffers (as
    TileLang's).  Such a GEMM records ``A_region`` / ``B_region`` (starts, extents).  A target may add
    builders of its own GEMM forms (NVIDIA: ``p.wgmma_gemm``, ``p.tcgen05_gemm``) through :func:`gemm_args`.

    >>> from layoutkit.infer import Program
    >>> p = Program(threads=128)
    >>> A = p.alloc_shared("A_s", (64, 64), "float16"); B = p.alloc_shared("B_s", (32, 64), "float16")
    >>> C = p.alloc_fragment("C", (64, 64), "float32")
    >>> p.gemm(A[0:64, 32:64], B, C).args["A_region"]
    ((0, 32), (64, 32))
    """
    return p.emit("gemm", gemm_args(p, A, B, C, transpose_A, transpose_B, policy, clear_accum))


def gemm_args(p, A: Buffer | Region, B: Buffer | Region, C: Buffer, transpose_A: bool = False,
              transpose_B: bool = False, policy: str = "square", clear_accum: bool = False,
              options: Mapping[str, bool] | None = None) -> dict:
    """The checked arguments of a GEMM op of ``p`` (what :func:`gemm` emits); ``options``: a target's own
    flags, recorded where true (a target builder such as NVIDIA's ``wgmma_gemm`` passes them)."""
    what = f"gemm#{p.next_uid}"
    _, regions = operand_regions(p, {"A": A, "B": B, "C": C}, what, tmem_a=True)
    A, B = (x.buffer if isinstance(x, Region) else x for x in (A, B))
    args = {"A": A.name, "B": B.name, "C": C.name, "transpose_A": validate.flag(transpose_A, "transpose_A", what),
            "transpose_B": validate.flag(transpose_B, "transpose_B", what),
            "policy": validate.text(policy, "gemm policy", what).lower(),
            "clear_accum": validate.flag(clear_accum, "clear_accum", what), **regions}
    for key, value in (options or {}).items():
        if validate.flag(value, key, what):
            args[key] = True
    p.hooks.check_gemm(A, B, C, args, what)
    return args


def gemm_sp(p, A: Buffer | Region, E: Buffer | Region, B: Buffer | Region, C: Buffer, transpose_A: bool = False,
            transpose_B: bool = False, transpose_E: bool = False, policy: str = "square",
            clear_accum: bool = False) -> Op:
    """``T.gemm_sp``: a 2:4 structured-sparse GEMM of the compressed A (``[M, K/2]``) with metadata E
    (:mod:`.gemm_sp`); A / E / B may be regions of shared buffers, as for :meth:`gemm`."""
    return build_gemm_sp(p, A, E, B, C, transpose_A, transpose_B, transpose_E, policy, clear_accum)


def parallel(p, shape: Sequence[int], writes=(), reads=(), compute: str | None = None,
             dynamic: bool = False, align: Mapping[str, int] | None = None,
             vector_cap: int | None = None, updates=(), inner: Mapping | None = None) -> Op:
    """A ``T.Parallel`` loop nest of ``shape``; ``writes`` / ``reads`` are ``(buffer, fn)`` pairs
    where ``fn(i, j, ...)`` returns the buffer indices (or expression text ``"lambda i, j: ..."``).
    ``dynamic``: the outermost extent is a runtime value at most ``shape[0]`` (``T.Parallel(T.min(n,
    512))``; the loop is laid out over the bound, planned as TileLang plans the symbolic loop, and
    touches no fragment, as TileLang requires).  ``align`` maps a buffer to the multiple its
    addresses are known to be only up to, beyond what the indices show (TileLang vectorises no wider
    than it can prove aligned); ``vector_cap`` bounds the loop's vector width (an element atomic
    with no wider instruction, an inner loop TileLang keeps scalar).  ``updates``: ``(reducer, fn)``
    or ``(reducer, fn, flags)`` items, each a ``T.reducer_update(acc[fn(i, ...)], value)`` (see
    :func:`.reducers.update_args`).  ``inner``: loops the body nests around its accesses, as
    TileLang's vectoriser sees them (see :mod:`.inner`)."""
    loop = check_shape(shape, "parallel loop shape")
    what = f"parallel#{p.next_uid}"
    accesses = []
    args: dict = {} if compute is None else {"compute": compute}
    if compute is not None:
        validate.text(compute, f"{what} compute", what)
    dynamic = validate.flag(dynamic, "parallel dynamic", what)
    if align:
        validate.mapping(align, f"{what} align", what)
        for name, a in align.items():
            if name not in p.buffers:
                raise validate.OpValidationError(f"{what} align: {name!r} is no buffer of this program", what)
            validate.positive(a, f"{what} align of {name}")
        args["align"] = {name: int(a) for name, a in align.items()}
    if vector_cap is not None:
        args["vector_cap"] = validate.positive(vector_cap, f"{what} vector_cap")
    for is_write, group, label in ((True, writes, "writes"), (False, reads, "reads")):
        for buf, fn in validate.access_pairs(group, f"{what} {label}", what):
            p.own(buf)
            if not isinstance(buf, Buffer):
                raise validate.OpValidationError(f"{what} {label}: index functions address whole buffers; "
                                                 f"found a region of {buf.buffer.name}", what, buf.buffer.name)
            accesses.append(Access(buf.name, validate.loop_indices(buf, fn, loop, what), is_write))
            if dynamic and buf.is_fragment:
                raise validate.OpValidationError(f"{what}: a loop with a dynamic extent touches fragment "
                                                 f"{buf.name}; expected shared / global / local buffers only",
                                                 what, buf.name)
    if dynamic:
        args["dynamic"] = True
    if updates:
        from .reducers import update_args

        args["updates"] = update_args(p, updates, loop, what)
    if inner is not None:
        from .inner import inner_args

        args["inner"] = inner_args(inner, loop, [p.buffers[a.buffer] for a in accesses], what)
    return p.emit("parallel", args, loop, accesses)


def fill(p, buf: Buffer | Region, value: float = 0.0) -> Op:
    r = p.own(buf)
    what = f"fill#{p.next_uid}"
    number = validate.scalar(value, f"{what} value", what, r.buffer.name)
    ext = r.extents if r.extents is not None else r.buffer.shape
    validate.region_bounds(r.buffer, r.starts, ext, what)
    acc = region_access(r.buffer, (r.starts, tuple(ext)), tuple(ext), True)
    args = {"dst": r.buffer.name, "value": number}
    args.update(p.hooks.fill_args(tuple(r.starts), tuple(ext)))
    return p.emit("fill", args, tuple(ext), (acc,))


def clear(p, buf: Buffer | Region) -> Op:
    return p.fill(buf, 0.0)


def reduce(p, src: Buffer, dst: Buffer, dim: int = -1, kind: str = "sum", clear: bool = True) -> Op:
    what = f"reduce#{p.next_uid}"
    whole(p, what, src, dst)
    d = validate.reduce(src, dst, dim, kind, what)
    return p.emit("reduce", {"src": src.name, "dst": dst.name, "dim": d, "kind": kind,
                                 "clear": validate.flag(clear, "reduce clear", what)})


def whole(p, what: str, *bufs: Buffer) -> None:
    """Each of ``bufs`` is a whole buffer of this program (ops that take no regions)."""
    for b in bufs:
        p.own(b)
        if not isinstance(b, Buffer):
            raise validate.OpValidationError(f"{what}: expected whole buffers; found a region of {b.buffer.name}",
                                             what, b.buffer.name)


def transpose(p, src: Buffer | Region, dst: Buffer | Region) -> Op:
    """``T.transpose(src, dst)``: ``dst`` takes ``src`` with its last two axes swapped, at any rank >= 2,
    over whole buffers or regions (unit dims of the src region add no loop; see
    :func:`.validate.transpose_regions`).  Its accesses constrain no layout of their own (TileLang's
    transpose proposes none)."""
    what = f"transpose#{p.next_uid}"
    s, d = p.own(src), p.own(dst)
    sr, dr, loop = validate.transpose_regions(s, d, what)
    acc = (region_access(s.buffer, sr, loop, False), transpose_access(d.buffer, dr[0], sr[1], loop))
    return p.emit("transpose", {"src": s.buffer.name, "dst": d.buffer.name, "src_region": sr,
                                    "dst_region": dr}, loop, acc)


def atomic_add(p, dst: Buffer | Region, src: Buffer | Region | float, return_prev: bool = False,
               use_tma: bool = False) -> Op:
    """Tile form ``atomic_add(dst_region, src_region)``, scalar form ``atomic_add(dst[point], value,
    return_prev=...)`` (only it may return the previous value) or a scalar into every element of a
    region.  ``use_tma`` (tile form, a shared source): TileLang's TMA reduce-add, which lays out its
    shared source and runs no loop (see :mod:`.atomics`)."""
    return build_atomic(p, "atomic_add", dst, src, return_prev, use_tma)


def check_reduce_dim(args: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]], path: str) -> None:
    """A loaded reduce's ``dim`` is a dim of its source."""
    rank = len(shapes[args["src"]])
    if not 0 <= args["dim"] < rank:
        raise ProgramFormatError(f"{path}.args.dim", f"a dim of {args['src']} in [0, {rank})", str(args["dim"]))


def check_atomic_form(args: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]], path: str) -> None:
    """A loaded atomic add is the tile form (``src``) or the scalar form (``starts``)."""
    if "src" not in args and "starts" not in args:
        raise ProgramFormatError(f"{path}.args", "'src' (tile form) or 'starts' (scalar form)", "neither")


def atomic_max(p, dst: Buffer | Region, src: Buffer | Region | float) -> Op:
    """TileLang's tile ``T.atomic_max(dst, src)`` (``src`` a region or a scalar), which proposes no layout."""
    return build_atomic(p, "atomic_max", dst, src)


def atomic_min(p, dst: Buffer | Region, src: Buffer | Region | float) -> Op:
    """TileLang's tile ``T.atomic_min(dst, src)`` (as :func:`atomic_max`)."""
    return build_atomic(p, "atomic_min", dst, src)


_REGION = schema.nullable(schema.region)

BUILTIN_OPS = (
    TileOp("copy", (("copy", copy),), required=("src", "dst", "src_region", "dst_region"),
           argument_types=(("src_region", _REGION), ("dst_region", _REGION), ("cast", schema.boolean)),
           rule=loop_rule, local=True),
    TileOp("fill", (("fill", fill), ("clear", clear)), required=("dst", "value"),
           argument_types=(("value", schema.number),), rule=loop_rule, local=True),
    TileOp("parallel", (("parallel", parallel),),
           argument_types=(("compute", schema.NAME), ("dynamic", schema.boolean)), rule=loop_rule, local=True),
    TileOp("transpose", (("transpose", transpose),), required=("src", "dst"),
           argument_types=(("src_region", _REGION), ("dst_region", _REGION)), rule=loop_rule, local=True),
    TileOp("atomic_add", (("atomic_add", atomic_add),), required=("dst",), check_document=check_atomic_form,
           argument_types=(("src_region", _REGION), ("dst_region", _REGION), ("return_prev", schema.boolean),
                           ("starts", schema.array(schema.integer(0, schema.MAX_EXTENT), 1, 64))),
           rule=loop_rule, local=True),
    TileOp("atomic_max", (("atomic_max", atomic_max),), required=("dst",),
           argument_types=(("src_region", _REGION), ("dst_region", _REGION)), rule=loop_rule, local=True),
    TileOp("atomic_min", (("atomic_min", atomic_min),), required=("dst",),
           argument_types=(("src_region", _REGION), ("dst_region", _REGION)), rule=loop_rule, local=True),
    TileOp("reduce", (("reduce", reduce),), rule=reduce_rule, local=True, check_document=check_reduce_dim,
           required=("src", "dst", "dim", "kind", "clear"),
           argument_types=(("dim", schema.integer(-64, 63)), ("kind", schema.NAME), ("clear", schema.boolean))),
    TileOp("gemm", (("gemm", gemm),), required=("A", "B", "C", "transpose_A", "transpose_B", "policy", "clear_accum"),
           argument_types=(("A_region", _REGION), ("B_region", _REGION), ("transpose_A", schema.boolean),
                           ("transpose_B", schema.boolean), ("clear_accum", schema.boolean),
                           ("policy", schema.NAME), ("k_align", schema.integer(1, schema.MAX_EXTENT)))),
    TileOp("gemm_sp", (("gemm_sp", gemm_sp),),
           required=("A", "E", "B", "C", "transpose_A", "transpose_B", "transpose_E", "policy", "clear_accum"),
           argument_types=(("A_region", _REGION), ("B_region", _REGION), ("E_region", _REGION),
                           ("transpose_A", schema.boolean), ("transpose_B", schema.boolean),
                           ("transpose_E", schema.boolean), ("clear_accum", schema.boolean),
                           ("policy", schema.NAME))),
    TileOp("reducer_init", (("reducer_init", reducer_init),), rule=init_rule, local=True, required=("dst",)),
    TileOp("finalize_reducer", (("finalize_reducer", finalize_reducer),), rule=finalize_rule, required=("src", "dst")),
)
"""The built-in tile ops (the NVIDIA and Ascend backends add their rules, and Ascend its own ops)."""

TILE_OPS = OpRegistry(BUILTIN_OPS)
"""The registry of tile ops inference, programs and backends use."""


def register_op(definition: TileOp) -> None:
    """Make ``definition`` a tile op of every program: its builders become :class:`~layoutkit.infer.Program`
    methods, its arguments are checked in JSON documents, its rule lays it out."""
    TILE_OPS.register(definition)


def unregister_op(kind: str) -> None:
    """Remove op ``kind`` (its definition, builders and target rules) from :data:`TILE_OPS`."""
    TILE_OPS.unregister(kind)


def get_op(kind: str) -> TileOp | None:
    """The definition of ``kind`` (a target's own ops once its backend is registered), or None."""
    if TILE_OPS.get(kind) is None:
        deferred.load()
    return TILE_OPS.get(kind)


def register_rule(op_kind: str, target_family: str, fn: Rule, *, local: bool = False) -> None:
    """Register ``fn`` as the layout rule of ``op_kind`` on targets matching ``target_family`` (a glob; the most
    specific family wins over the op definition's target-free rule).  ``local``: the rule reads only the layouts
    of the op's own buffers, its own loop layout, the level, the thread range and ``fallback`` (never
    :meth:`~.rules.RuleContext.once` or another op's loop) and proposes layouts only for the op's own buffers, so
    free mode may skip the attempts it would repeat (:mod:`.free`)."""
    TILE_OPS.register_rule(op_kind, target_family, fn, local=local)


def unregister_rule(op_kind: str, target_family: str) -> None:
    """Forget the rule ``target_family`` registered for ``op_kind`` (see :func:`register_rule`)."""
    TILE_OPS.unregister_rule(op_kind, target_family)


def get_rule(op_kind: str, target: str) -> Rule:
    """The rule for ``op_kind`` on ``target`` (its backend's, most specific family first, else the op's own);
    :class:`~layoutkit.errors.UnsupportedError` when there is none."""
    deferred.load(target)
    return TILE_OPS.rule(op_kind, target)


def rule_is_local(op_kind: str, target: str) -> bool:
    """Whether the rule :func:`get_rule` picks for ``op_kind`` on ``target`` is local (see :func:`register_rule`).

    >>> rule_is_local("parallel", "sm_80"), rule_is_local("finalize_reducer", "sm_80")
    (True, False)
    """
    deferred.load(target)
    return TILE_OPS.rule_is_local(op_kind, target)
