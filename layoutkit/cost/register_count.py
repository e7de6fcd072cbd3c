"""The default model: spilled bytes first, then register slots (``docs/reference.md#cost-models``).

>>> import layoutkit as lk
>>> f = lk.Fragment([64, 64], forward_thread_fn=lambda i, j: i, forward_index_fn=lambda i, j: j)
>>> RegisterCountModel().cost({"x": f}, None)
AttemptCost(mem=0, regs=64, extra=())
>>> RegisterCountModel(budget=32).cost({"x": f}, None).mem
128
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..dtypes import element_bits
from ..errors import LayoutError
from ..fragment.fragment import Fragment
from ..scopes import FRAGMENT
from .attempt import (
    REGISTER_LIMIT,
    AttemptCost,
    CostModel,
    CostModelError,
    Statement,
    StatementCost,
    check_statements,
    fragments_of,
)
from .spill import spilled_bytes


def _registers(name: str, slots: int, program) -> int:
    """32-bit registers of ``slots`` elements of buffer ``name`` (64-bit elements take two)."""
    try:
        bits = element_bits(program.buffers[name].dtype)
    except (AttributeError, KeyError, LayoutError):
        bits = 32
    return slots * max(1, bits // 32)


def spill_rows(statements: Sequence[Statement]) -> list[StatementCost]:
    """Fragments a statement's loop indexes by the thread (demoted to local memory, see
    :mod:`.spill`): one row each with the bytes charged."""
    rows = []
    for st in statements:
        if st.loop_layout is None:
            continue
        for op in st.operands:
            if op.scope != FRAGMENT or not isinstance(op.layout, Fragment) or op.indices is None:
                continue
            b = spilled_bytes(st.loop_layout, op.layout, tuple(op.indices), op.dtype)
            if b:
                rows.append(StatementCost(st.name, f"{op.buffer} register array indexed by the thread", b, 0,
                                          "demoted to local memory"))
    return rows


class RegisterCountModel(CostModel):
    """``mem`` = 4 bytes per 32-bit register a thread needs beyond ``budget``, plus (given the
    statements) the local-memory traffic of register arrays a loop indexes by the thread, as
    TileLang's ``CountSpilledBytes``; ``regs`` = register slots of every fragment of the component."""

    name = "register-count"
    wants_statements = True

    def __init__(self, budget: int = REGISTER_LIMIT):
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
            raise CostModelError(f"register budget must be a non-negative int; found {budget!r}")
        self.budget = budget

    def rows(self, layouts: Mapping, program, statements: Sequence[Statement] | None = None) -> list[StatementCost]:
        rows = []
        for name, frag in sorted(fragments_of(layouts).items()):
            rows.append(StatementCost(name, f"{frag.local_size} register slots", 0, 0,
                                      f"{_registers(name, frag.local_size, program)} x 32-bit"))
        return rows + spill_rows(check_statements(statements))

    def cost(self, layouts: Mapping, program, statements: Sequence[Statement] | None = None) -> AttemptCost:
        frags = fragments_of(layouts)
        slots = sum(f.local_size for f in frags.values())
        regs32 = sum(_registers(n, f.local_size, program) for n, f in frags.items())
        spill = sum(r.bytes for r in spill_rows(check_statements(statements)))
        return AttemptCost(max(0, regs32 - self.budget) * 4 + spill, slots)

    def explain(self, layouts: Mapping, program, statements: Sequence[Statement] | None = None) -> list[str]:
        """One line per fragment (and per thread-indexed register array), then the total."""
        c = self.cost(layouts, program, statements)
        return [str(r) for r in RegisterCountModel.rows(self, layouts, program, statements)] + [
            f"spilled {c.mem} B, {c.regs} slots (budget {self.budget})"]
