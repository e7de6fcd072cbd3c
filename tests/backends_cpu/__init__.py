"""A third target, as a backend folder would hold it: a scalar ``"cpu"`` backend that lays every fragment (and
every loop) out on one thread, row-major in its registers.  It is one class and one registration; inference,
the program builders and the codegen facade find it by target family without knowing it."""

from __future__ import annotations

import math

from layoutkit.backends import Backend, register_backend
from layoutkit.fragment import Fragment
from layoutkit.infer.rules import RuleResult

KINDS = ("copy", "parallel", "fill", "reduce", "gemm", "transpose", "atomic_add")


def one_thread(shape) -> Fragment:
    """Thread 0 holds every element, register ``row-major offset``."""
    shape = tuple(int(n) for n in shape)
    strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
    return Fragment(list(shape), forward_thread_fn=lambda *c: 0 * c[0],
                    forward_index_fn=lambda *c: sum(x * s for x, s in zip(c, strides))).bind_thread_range(0, 1)


def scalar_rule(op, ctx, level) -> RuleResult:
    """Every fragment the op touches and its loop: on one thread (definite at every level)."""
    layouts = {b: one_thread(ctx.shape(b)) for b in op.buffers if ctx.is_fragment(b) and b not in ctx.layouts}
    loop = one_thread(op.loop) if op.loop is not None and op.name not in ctx.loops else None
    return RuleResult(layouts, loop=loop)


class CpuBackend(Backend):
    family = "cpu"
    name = "cpu"

    def rules(self):
        return {kind: scalar_rule for kind in KINDS}

    def thread_range(self, program) -> tuple[int, int]:
        return (0, 1)


def register() -> CpuBackend:
    backend = CpuBackend()
    register_backend(backend)
    return backend
