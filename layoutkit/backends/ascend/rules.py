"""Ascend rules (target ``"ascend"``): the cube GEMM (MAD), copies between the fractal scopes, and vector
regions (``docs/reference.md#mad-operand-rule``).

* MAD: A MajorK unless transposed (then MajorMN); B MajorK when transposed, else MajorMN; C the L0C
  layout; ``k_align`` (block-scaled GEMM) requires the K extent to be a multiple.  The reduce-K axis always
  lands on the C0 axis.
* copy: between two fractal scopes (l1, l0a, l0b, l0c) of equal shape the known layout passes to the other
  side; GM and UB are ND and take no layout.
* vf: a vector region is opaque to the outer worklist; its ops are solved on their own, with the region's
  lanes as the thread scope.

>>> from layoutkit.infer import Program, infer_layouts
>>> p = Program(target="ascend")
>>> A = p.alloc("A_l1", (128, 64), "float16", "l1"); A0 = p.alloc("A_l0", (128, 64), "float16", "l0a")
>>> B0 = p.alloc("B_l0", (64, 32), "float16", "l0b"); C = p.alloc("C", (128, 32), "float32", "l0c")
>>> _ = p.copy(A, A0); _ = p.mad(A0, B0, C)
>>> r = infer_layouts(p)
>>> [r.layout_map[n].fractal.kind.name for n in ("A_l1", "A_l0", "B_l0", "C")]
['MAJOR_K', 'MAJOR_K', 'MAJOR_MN', 'L0C']
"""

from __future__ import annotations

import copy as _copy

from ...errors import LayoutError
from ...infer.engine import solve
from ...infer.rules import EMPTY, STRICT, RuleResult
from ...infer.validate import OpValidationError
from ...targets import ascend
from .program import check_end, check_gemm
from .scopes import FRACTAL_SCOPES


def mad_rule(op, ctx, level) -> RuleResult:
    """Definite at every level (the MAD operand and accumulator layouts).  The operands' scopes are checked
    first (:func:`.program.check_gemm`: A in l0a / l1, B in l0b / l1, C in l0c), as ``p.mad`` does: a GEMM
    no Ascend builder checked (one re-targeted from NVIDIA, or read from JSON) would otherwise get fractal
    layouts for its register fragments."""
    a = op.args
    check_gemm(ctx.buffer(a["A"]), ctx.buffer(a["B"]), ctx.buffer(a["C"]), a, op.name)
    k_align = int(a.get("k_align", 1))
    out = {}
    try:
        for key, operand in (("A", "A"), ("B", "B")):
            name = a[key]
            out[name] = ascend.make_ascend_operand_layout(operand, ctx.shape(name), ctx.buffer(name).dtype,
                                                          transposed=a[f"transpose_{key}"], k_align=k_align)
        out[a["C"]] = ascend.make_ascend_l0c_layout(ctx.shape(a["C"]))
    except OpValidationError:
        raise
    except LayoutError as err:  # the constructors' typed errors, re-raised naming the op
        raise OpValidationError(f"{op.name}: {err}", op.name, a["C"]) from None
    return RuleResult(out)


def copy_rule(op, ctx, level) -> RuleResult:
    """Fractal <-> fractal copies of equal shape share the layout; ND scopes (gm, ub) take none."""
    src, dst = op.args["src"], op.args["dst"]
    bs, bd = ctx.buffer(src), ctx.buffer(dst)
    if bs.scope not in FRACTAL_SCOPES or bd.scope not in FRACTAL_SCOPES:
        return EMPTY
    if ctx.shape(src) != ctx.shape(dst) or bs.dtype != bd.dtype:
        return EMPTY
    if src in ctx.layouts and dst not in ctx.layouts:
        return RuleResult({dst: ctx.layouts[src]})
    if dst in ctx.layouts and src not in ctx.layouts:
        return RuleResult({src: ctx.layouts[dst]})
    return EMPTY


def none_rule(op, ctx, level) -> RuleResult:
    return EMPTY


def set_atomic_rule(op, ctx, level) -> RuleResult:
    """No layouts; at the strict level, a kernel that ends in atomic mode is rejected (naming the op)."""
    if level == STRICT:
        check_end(ctx.program)
    return EMPTY


def vf_rule(op, ctx, level) -> RuleResult:
    """Solve the region's ops alone, with the region's lanes (``threads`` product) as the thread scope;
    their loop layouts are returned under the inner op names (solved once per solve)."""
    return ctx.once(vf_rule, op.uid, lambda: _solve_region(op, ctx.program))


def _solve_region(op, program) -> RuleResult:
    body = program.regions.get(op.uid, [])
    sub = _copy.copy(program)
    lanes = 1
    for t in op.args["threads"]:
        lanes *= int(t)
    sub.threads = lanes
    inner = solve(sub, ops=body, annotations={k: v for k, v in program.annotations.items()})
    names = {b for o in body for b in o.buffers}
    return RuleResult({b: inner.layouts[b] for b in names if b in inner.layouts}, loops=dict(inner.loops))


RULES = {"gemm": mad_rule, "copy": copy_rule, "set_atomic": set_atomic_rule, "vf": vf_rule,
         "dual_copy": none_rule, "scatter": none_rule, "post_copy": none_rule}
