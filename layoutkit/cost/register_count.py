"""The default model: spilled bytes first, then register slots (REFERENCE section 6).

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
from .attempt import REGISTER_LIMIT, AttemptCost, CostModelError, Statement, StatementCost, fragments_of


def _registers(name: str, slots: int, program) -> int:
    """32-bit registers of ``slots`` elements of buffer ``name`` (64-bit elements take two)."""
    try:
        bits = element_bits(program.buffers[name].dtype)
    except (AttributeError, KeyError, LayoutError):
        bits = 32
    return slots * max(1, bits // 32)


class RegisterCountModel:
    """``mem`` = 4 bytes per 32-bit register a thread needs beyond ``budget``; ``regs`` = register
    slots of every fragment of the component."""

    name = "register-count"

    def __init__(self, budget: int = REGISTER_LIMIT):
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
            raise CostModelError(f"register budget must be a non-negative int; found {budget!r}")
        self.budget = budget

    def rows(self, layouts: Mapping, program) -> list[StatementCost]:
        rows = []
        for name, frag in sorted(fragments_of(layouts).items()):
            rows.append(StatementCost(name, f"{frag.local_size} register slots", 0, 0,
                                      f"{_registers(name, frag.local_size, program)} x 32-bit"))
        return rows

    def cost(self, layouts: Mapping, program, statements: Sequence[Statement] | None = None) -> AttemptCost:
        frags = fragments_of(layouts)
        slots = sum(f.local_size for f in frags.values())
        regs32 = sum(_registers(n, f.local_size, program) for n, f in frags.items())
        return AttemptCost(max(0, regs32 - self.budget) * 4, slots)

    def explain(self, layouts: Mapping, program, statements: Sequence[Statement] | None = None) -> list[str]:
        """One line per fragment, then the total."""
        c = self.cost(layouts, program)
        return [str(r) for r in self.rows(layouts, program)] + [f"spilled {c.mem} B, {c.regs} slots "
                                                                f"(budget {self.budget})"]
