"""NVIDIA rules (targets ``sm_*``): ``T.gemm`` through :func:`layoutkit.targets.nv.gemm_layouts`, and
swizzle merging through :func:`layoutkit.targets.nv.merge_swizzles`.

>>> from layoutkit.infer import Program, infer_layouts
>>> p = Program(threads=128, target="sm_80")
>>> A = p.alloc_shared("A_s", (32, 32), "float16"); B = p.alloc_shared("B_s", (32, 32), "float16")
>>> C = p.alloc_fragment("C", (32, 32), "float32")
>>> _ = p.gemm(A, B, C)
>>> print(infer_layouts(p).layout_map["C"].forward_thread)
_j // 16 * 64 + _i // 16 * 32 + _i % 8 * 4 + _j % 8 // 2
"""

from __future__ import annotations

from ...caches import memoized
from ...errors import UnsupportedError
from ...infer.loops import loop_rule
from ...infer.rules import EMPTY, FREE, RuleResult
from ...targets import nv
from ...targets.nv.copy import tma_atomic_add_layout, tma_inferred_layout
from ...targets.nv.tcgen05 import make_tmem_copy_fragment


def gemm_rule(op, ctx, level) -> RuleResult:
    """Definite at every level: A/B swizzles (stage dims pass through), C store fragment, register
    operands load fragments, bound to the consumer thread range (worked out once per solve)."""
    return ctx.once(gemm_rule, (op.uid, ctx.rng), lambda: _gemm_result(op, ctx))


def _gemm_result(op, ctx) -> RuleResult:
    a = op.args
    # a sub-region operand (``A_s[:, 32:64]``) gives M / N / K; its layout still covers the buffer
    operands = tuple((ctx.buffer(a[k]).scope, ctx.shape(a[k]), ctx.buffer(a[k]).dtype,
                      None if a.get(f"{k}_region") is None else tuple(a[f"{k}_region"][1][-2:]))
                     for k in ("A", "B", "C"))
    if a.get("wgmma"):
        _require_wgmma(op, operands, ctx)
    if a.get("tcgen05"):
        _require_tcgen05(op, operands, ctx)
    r = _layouts(operands, a["transpose_A"], a["transpose_B"], ctx.target, a["policy"], ctx.rng,
                 bool(a.get("use_2cta")))
    return RuleResult({a[k]: r[k] for k in ("A", "B", "C") if k in r})


def _require_wgmma(op, operands, ctx) -> None:
    """``T.wgmma_gemm`` is TileLang's GEMM forced onto WGMMA: where ``T.gemm`` would not select one
    (not sm_90, M < 64, a partial warp group, operand dtypes or majors WGMMA lacks) TileLang's
    inference stops with "T.wgmma_gemm() requires Hopper WGMMA lowering"; so does this rule."""
    a = op.args
    inst = nv.select_gemm_instruction(*operands, transpose_A=a["transpose_A"], transpose_B=a["transpose_B"],
                                      threads=ctx.rng[1], arch=ctx.target)
    if inst != "wgmma":
        shapes = ", ".join(f"{k} {ctx.buffer(a[k]).scope} {list(ctx.shape(a[k]))} {ctx.buffer(a[k]).dtype}"
                           for k in ("A", "B", "C"))
        raise UnsupportedError(f"{op.name}: T.wgmma_gemm requires WGMMA lowering (as TileLang's, which stops "
                               f"there); on {ctx.target} with {ctx.rng[1]} threads and {shapes}, T.gemm selects "
                               f"{inst}")


def _require_tcgen05(op, operands, ctx) -> None:
    """``T.tcgen05_gemm`` must lower to TCGEN05 (TileLang stops with "T.tcgen05_gemm() requires Blackwell
    TCGEN5MMA lowering" otherwise); so does this rule."""
    a = op.args
    inst = nv.select_gemm_instruction(*operands, transpose_A=a["transpose_A"], transpose_B=a["transpose_B"],
                                      threads=ctx.rng[1], arch=ctx.target, two_cta=bool(a.get("use_2cta")))
    if inst != "tcgen05":
        shapes = ", ".join(f"{k} {ctx.buffer(a[k]).scope} {list(ctx.shape(a[k]))} {ctx.buffer(a[k]).dtype}"
                           for k in ("A", "B", "C"))
        raise UnsupportedError(f"{op.name}: T.tcgen05_gemm requires TCGEN05 lowering (as TileLang's, which stops "
                               f"there); on {ctx.target} with {shapes}, T.gemm selects {inst}")


@memoized(maxsize=1024)
def _layouts(operands, transpose_A, transpose_B, target, policy, rng, two_cta=False):
    """Layouts are immutable, so one GEMM shape is laid out once per process."""
    return nv.gemm_layouts(*operands, transpose_A=transpose_A, transpose_B=transpose_B, threads=rng[1],
                           arch=target, policy=policy, thread_range=rng, two_cta=two_cta)


def gemm_sp_rule(op, ctx, level) -> RuleResult:
    """``T.gemm_sp`` (``mma.sp``): definite at every level, worked out once per solve at the op's first
    inference (TileLang's ``GemmSP`` is then complete), when a shared A / B that already has a layout (an
    annotation, an earlier op's) is left as it is; E gets none."""
    return ctx.once(gemm_sp_rule, (op.uid, ctx.rng), lambda: _gemm_sp_result(op, ctx))


def _gemm_sp_result(op, ctx) -> RuleResult:
    a = op.args
    operands = tuple((ctx.buffer(a[k]).scope, ctx.shape(a[k]), ctx.buffer(a[k]).dtype,
                      None if a.get(f"{k}_region") is None else tuple(a[f"{k}_region"][1][-2:]))
                     for k in ("A", "E", "B", "C"))
    laid_out = frozenset(k for k in ("A", "B") if a[k] in ctx.layouts and not ctx.is_fragment(a[k]))
    r = _sparse_layouts(operands, a["transpose_A"], a["transpose_B"], a["transpose_E"], ctx.target, a["policy"],
                        ctx.rng, laid_out)
    return RuleResult({a[k]: r[k] for k in ("A", "B", "C") if k in r})


@memoized(maxsize=256)
def _sparse_layouts(operands, transpose_A, transpose_B, transpose_E, target, policy, rng, laid_out):
    return nv.gemm_sp_layouts(*operands, transpose_A=transpose_A, transpose_B=transpose_B, transpose_E=transpose_E,
                              threads=rng[1], arch=target, policy=policy, thread_range=rng, laid_out=laid_out)


def copy_rule(op, ctx, level) -> RuleResult:
    """``T.copy`` on NVIDIA: the instruction TileLang would select decides the rule.  TMA copies
    (sm_90+: stores by default, loads issued by a warp-specialised producer) propose a layout for
    their shared buffer at the free level when it has none and get no loop; every other form is a
    SIMT loop (:func:`layoutkit.infer.loops.loop_rule`)."""
    inst, shared = _copy_instruction(op, ctx)
    if inst in (nv.CopyInstruction.TMEM_LOAD, nv.CopyInstruction.TMEM_STORE):
        return tmem_copy_rule(op, ctx, inst is nv.CopyInstruction.TMEM_LOAD)
    if not inst.is_tma:
        return loop_rule(op, ctx, level)
    if level != FREE or shared in ctx.layouts:
        return EMPTY
    fixed = tuple(range(len(ctx.shape(shared)) - len(ctx.buffer(shared).shape)))
    lay = tma_inferred_layout(inst, ctx.shape(shared), ctx.buffer(shared).dtype, fixed)
    return EMPTY if lay is None else RuleResult({shared: lay})


def tmem_copy_rule(op, ctx, load: bool) -> RuleResult:
    """A ``tcgen05.ld`` (``load``) / ``tcgen05.st`` copy between tensor memory and a fragment, at every
    level: once the TMEM side has a layout and the fragment none, the fragment gets the copy's register
    layout (:func:`layoutkit.targets.nv.tcgen05.make_tmem_copy_fragment`), bound to the op's threads, or
    nothing where no ``tcgen05.ld`` / ``st`` shape plans the tile; no loop (TileLang's ``InferTMemLayout``)."""
    a = op.args
    tmem, reg = (a["src"], a["dst"]) if load else (a["dst"], a["src"])
    t_region, r_region = (a["src_region"], a["dst_region"]) if load else (a["dst_region"], a["src_region"])
    if reg in ctx.layouts or tmem not in ctx.layouts:
        return EMPTY
    try:
        frag = make_tmem_copy_fragment(ctx.layouts[tmem], ctx.buffer(tmem).dtype, tuple(zip(*t_region)),
                                       ctx.shape(reg), tuple(zip(*r_region)), ctx.rng[1])
    except UnsupportedError:  # no tcgen05.ld / st shape plans the tile: TileLang's copy proposes nothing
        return EMPTY
    return RuleResult({reg: frag.bind_thread_range(*ctx.rng)})


def atomic_add_rule(op, ctx, level) -> RuleResult:
    """``T.atomic_add`` on NVIDIA: a TMA reduce-add (``use_tma``) proposes, at the free level, the layout
    :func:`~layoutkit.targets.nv.copy.tma_atomic_add_layout` for its shared source when it has none
    (none for a 1-D region) and gets no loop; every other form is a SIMT loop."""
    a = op.args
    if not a.get("use_tma"):
        return loop_rule(op, ctx, level)
    src = a["src"]
    starts, extents = a["src_region"]
    if level != FREE or src in ctx.layouts or len(extents) == 1:
        return EMPTY
    stage = len(ctx.shape(src)) - len(ctx.buffer(src).shape)  # a stage dim is copied at extent 1
    fixed = tuple(range(stage)) + tuple(stage + d for d, e in enumerate(extents) if e == 1)
    return RuleResult({src: tma_atomic_add_layout(ctx.shape(src), ctx.buffer(src).dtype, fixed)})


def _copy_instruction(op, ctx):
    """``(instruction, the shared side)`` of a copy (worked out once per solve)."""
    return ctx.once(_copy_instruction, (op.uid, ctx.rng), lambda: _select(op, ctx))


def _select(op, ctx):
    a = op.args
    sides = []
    for name, (starts, extents) in ((a["src"], a["src_region"]), (a["dst"], a["dst_region"])):
        buf = ctx.buffer(name)
        sides.append(nv.CopyOperand(buf.scope, buf.dtype, buf.shape, tuple(zip(starts, extents))))
    src, dst = sides
    # warp specialisation turns the pipelined global -> shared copies into TMA loads
    producer = ctx.rng[0] > 0 and a["dst"] in ctx.program.stages and src.is_global()
    return copy_instruction(src, dst, ctx.target, producer), (a["dst"] if dst.is_shared() else a["src"])


@memoized(maxsize=1024)
def copy_instruction(src, dst, target: str, producer: bool):
    """The instruction TileLang selects for ``src -> dst`` (``NORMAL`` when none fits)."""
    try:
        return nv.select_copy_instruction(src, dst, target, is_tma_copy=producer)
    except nv.CopySelectionError:
        return nv.CopyInstruction.NORMAL


RULES = {"gemm": gemm_rule, "gemm_sp": gemm_sp_rule, "copy": copy_rule, "atomic_add": atomic_add_rule}
