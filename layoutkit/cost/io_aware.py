"""The io-aware model: register cost plus, for every statement touching global memory,
``max(issue_bytes, bandwidth_bytes)`` from the exact thread/vector layout (``docs/reference.md#cost-models``).

A fragment stored row by row (one thread per row, 32 fp32 each) touches one 128-byte segment per
lane per instruction; stored with consecutive threads on consecutive columns it coalesces:

>>> import layoutkit as lk
>>> from layoutkit.algebra.layout import placeholder
>>> i, j = placeholder(0, 32), placeholder(1, 32)
>>> rows = lk.Fragment([32, 32], forward_thread_fn=lambda i, j: i, forward_index_fn=lambda i, j: j)
>>> cols = lk.Fragment([32, 32], forward_thread_fn=lambda i, j: j, forward_index_fn=lambda i, j: i)
>>> def store(L):
...     return Statement("copy#0", "copy", (32, 32), L, (Operand("G", "global", "float32", (32, 32), True, (i, j)),))
>>> m = IOAwareModel()
>>> m.cost({}, None, [store(rows)]).mem, m.cost({}, None, [store(cols)]).mem
(32768, 4096)
>>> print(m.explain({}, None, [store(cols)])[0])
copy#0: store G (float32) vector 1, 32 instructions, 32 segments, 4096 B (issue 4096 B, bandwidth 4096 B)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ..dtypes import element_bits
from ..errors import LayoutError
from .access import SEGMENT, global_traffic
from .attempt import AttemptCost, Operand, Statement, StatementCost, check_statements
from .register_count import RegisterCountModel, spill_rows


def worst_case_bytes(stmt: Statement, op: Operand) -> int:
    """Every element the statement touches in its own 128-byte segment."""
    n = math.prod(stmt.loop) if stmt.loop else math.prod(op.shape)
    return n * max(SEGMENT, element_bits(op.dtype) // 8)


def global_rows(statements: Sequence[Statement], warp_size: int) -> list[StatementCost]:
    """One row per global operand: its modelled traffic with ``warp_size`` threads per instruction."""
    rows = []
    for st in statements:
        for op in st.operands:
            if not op.is_global:
                continue
            what = f"{'store' if op.is_write else 'load'} {op.buffer} ({op.dtype})"
            if st.loop_layout is None or op.indices is None:
                rows.append(StatementCost(st.name, what, worst_case_bytes(st, op), 0,
                                          "worst case: no loop layout to model"))
                continue
            try:
                g = global_traffic(st.loop_layout, tuple(op.indices), tuple(op.shape), op.dtype, warp_size)
            except LayoutError as err:
                rows.append(StatementCost(st.name, what, worst_case_bytes(st, op), 0, f"worst case: {err}"))
                continue
            rows.append(StatementCost(
                st.name, f"{what} vector {g.vector}, {g.instructions} instructions, {g.segments} segments",
                g.bytes, 0, f"issue {g.issue_bytes} B, bandwidth {g.bandwidth_bytes} B"))
    return rows


class IOAwareModel(RegisterCountModel):
    """``mem`` = spilled bytes + modelled global bytes of the component's statements; ``regs`` as
    register-count.  ``warp_size``: the threads that issue one memory instruction together; 32 as on NVIDIA
    unless a target's model sets its own (the NVIDIA backend's sets ``targets.nv.WARP_SIZE``)."""

    name = "io-aware"
    wants_statements = True
    warp_size: int = 32

    def rows(self, layouts: Mapping, program, statements: Sequence[Statement] | None = None) -> list[StatementCost]:
        st = check_statements(statements)
        return spill_rows(st) + global_rows(st, self.warp_size)

    def cost(self, layouts: Mapping, program, statements: Sequence[Statement] | None = None) -> AttemptCost:
        base = super().cost(layouts, program)
        extra = sum(r.bytes for r in self.rows(layouts, program, statements))
        return AttemptCost(base.mem + extra, base.regs)

    def explain(self, layouts: Mapping, program, statements: Sequence[Statement] | None = None) -> list[str]:
        """One line per modelled operand (bytes, wavefronts, worst-case notes), then the total."""
        c = self.cost(layouts, program, statements)
        return [str(r) for r in self.rows(layouts, program, statements)] + [f"total {c}"]
