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

from functools import lru_cache

from ..targets import nv
from .rules import register_merge, register_rule


def gemm_rule(op, ctx, level) -> dict:
    """Definite at every level: A/B swizzles (stage dims pass through), C store fragment, register
    operands load fragments, bound to the consumer thread range."""
    key = ("gemm", op.uid, ctx.rng)
    if key in ctx.memo:
        return ctx.memo[key]
    a = op.args
    operands = tuple((ctx.buffer(a[k]).scope, ctx.shape(a[k]), ctx.buffer(a[k]).dtype) for k in ("A", "B", "C"))
    r = _layouts(operands, a["transpose_A"], a["transpose_B"], ctx.target, a["policy"], ctx.rng)
    out = ctx.memo[key] = {a[k]: r[k] for k in ("A", "B", "C") if k in r}
    return out


@lru_cache(maxsize=1024)
def _layouts(operands, transpose_A, transpose_B, target, policy, rng):
    """Layouts are immutable, so one GEMM shape is laid out once per process."""
    return nv.gemm_layouts(*operands, transpose_A=transpose_A, transpose_B=transpose_B, threads=rng[1],
                           arch=target, policy=policy, thread_range=rng)


def merge_rule(old, new, dtype):
    return nv.merge_swizzles(old, new, dtype)


register_rule("gemm", "sm_*", gemm_rule)
register_merge("sm_*", merge_rule)
