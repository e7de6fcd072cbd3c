"""Conflict explanations: the minimal set of constraints (ops and annotations) that cannot hold
together, found by deletion (removing any one of them makes the rest satisfiable).

>>> from layoutkit.infer import Program, infer_layouts
>>> import layoutkit as lk
>>> p = Program(threads=128)
>>> A = p.alloc_shared("A", (64, 32), "float16"); B = p.alloc_shared("B", (32, 64), "float16")
>>> C = p.alloc_fragment("C", (64, 64), "float32")
>>> _ = p.clear(C); _ = p.gemm(A, B, C, policy="square"); _ = p.gemm(A, B, C, policy="fullrow")
>>> try:
...     _ = infer_layouts(p)
... except lk.LayoutConflictError as e:
...     print(e.buffer, e.constraints)
C ('gemm#1', 'gemm#2')
"""

from __future__ import annotations

from ..errors import LayoutConflictError, LayoutError

MAX_CONSTRAINTS = 200


class InferenceConflictError(LayoutConflictError):
    """A conflict with ``buffer``, the ``ops`` and ``layouts`` that disagree and ``constraints``: a
    minimal unsatisfiable subset (op names and ``annotate_layout(buf)``)."""

    def __init__(self, message: str, buffer: str, ops, layouts, constraints):
        super().__init__(message)
        self.buffer = buffer
        self.ops = tuple(ops)
        self.layouts = tuple(layouts)
        self.constraints = tuple(constraints)


def _fails(program, ops, annotations, cost_model) -> bool:
    from .engine import Conflict, solve

    try:
        solve(program, ops, annotations, cost_model)
    except Conflict:
        return True
    except LayoutError:
        return False
    return False


def minimal_constraints(program, cost_model="register-count") -> tuple[str, ...]:
    """Deletion-based minimisation over ops and annotations (each removal re-solves)."""
    items = [("op", op) for op in program.ops] + [("ann", k) for k in program.annotations]
    if len(items) > MAX_CONSTRAINTS:
        return tuple(_label(i) for i in items)
    keep = list(items)
    k = 0
    while k < len(keep):
        trial = keep[:k] + keep[k + 1:]
        ops = [x for t, x in trial if t == "op"]
        ann = {x: program.annotations[x] for t, x in trial if t == "ann"}
        if _fails(program, ops, ann, cost_model):
            keep = trial
        else:
            k += 1
    return tuple(_label(i) for i in keep)


def _label(item) -> str:
    kind, x = item
    return x.name if kind == "op" else f"annotate_layout({x})"


def explain(program, err, cost_model="register-count") -> InferenceConflictError:
    constraints = minimal_constraints(program, cost_model)
    msg = f"{err}\n  minimal conflicting constraints: {', '.join(constraints)}"
    return InferenceConflictError(msg, err.buffer, err.ops, err.layouts, constraints)
