"""The score of one free-mode attempt, the statements a model may look at, and the model protocol.

>>> AttemptCost(0, 8) < AttemptCost(0, 16) < AttemptCost(1, 0)
True
>>> AttemptCost(0, 8, (3,)) < AttemptCost(0, 8, (4,))
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..algebra.layout import Layout
from ..errors import LayoutError
from ..fragment.fragment import Fragment
from ..scopes import GLOBAL, is_shared

REGISTER_LIMIT = 255
"""32-bit registers one thread may hold before the rest spills to local memory (NVIDIA: 255)."""


class CostModelError(LayoutError):
    """A cost model was given something it cannot score (bad statement, bad registration)."""


@dataclass(frozen=True, order=True)
class AttemptCost:
    """Compared lexicographically: ``mem`` (modelled memory bytes: spills, plus global / shared traffic
    for the io- and shared-memory-aware models) first, then ``regs`` (register slots), then ``extra``
    (a tuple of further keys a custom model may add)."""

    mem: int
    regs: int
    extra: tuple = ()

    def __str__(self) -> str:
        tail = f", extra={self.extra}" if self.extra else ""
        return f"AttemptCost(mem={self.mem}, regs={self.regs}{tail})"


@dataclass(frozen=True)
class Operand:
    """One buffer access of a statement.  ``indices``: expressions over the loop placeholders
    ``_i, _j, ...`` (None when the statement has no loop); ``shape``: the buffer's shape as
    inference sees it (a pipeline stage dim first when it has one); ``layout``: the buffer's layout
    in the attempt (None for global memory or when unknown)."""

    buffer: str
    scope: str
    dtype: str
    shape: tuple[int, ...]
    is_write: bool
    indices: tuple | None = None
    layout: Layout | None = None

    @property
    def is_global(self) -> bool:
        return self.scope == GLOBAL

    @property
    def is_shared(self) -> bool:
        return is_shared(self.scope)


@dataclass(frozen=True)
class Statement:
    """One op of a component as the cost models see it: its ``loop`` shape and ``loop_layout``
    (the Fragment that maps every loop point to a thread and a register, None when the op has no
    parallel loop, e.g. a GEMM) and its ``operands``."""

    name: str
    kind: str
    loop: tuple[int, ...] | None = None
    loop_layout: Fragment | None = None
    operands: tuple[Operand, ...] = field(default=())

    @property
    def touches_global(self) -> bool:
        return any(o.is_global for o in self.operands)


class CostModel:
    """The base of cost models: ``cost(layouts, program) -> AttemptCost``, and the hooks the solver reads.

    * ``wants_statements``: when True, ``cost`` (and ``explain``) are called with ``statements=`` the
      component's :class:`Statement` s;
    * ``conversion_cost(src, dst, dtype)``: None, or a method pricing a layout conversion (an object with
      ``bytes``); a model that has one lets free mode weigh conversions against re-rooting.

    Any object with a ``cost`` method is accepted as a model (:func:`adapt` reads its hooks once).

    >>> CostModel().wants_statements, CostModel().prices_conversions()
    (False, False)
    """

    name = "custom"
    wants_statements: bool = False
    conversion_cost = None

    def cost(self, layouts: Mapping[str, Layout], program, statements=None) -> AttemptCost:
        raise NotImplementedError(f"{type(self).__name__}.cost")

    def prices_conversions(self) -> bool:
        return self.conversion_cost is not None


class _Adapted(CostModel):
    """A duck-typed model (an object with ``cost``) behind the declared hooks."""

    def __init__(self, model):
        self.model = model
        self.name = getattr(model, "name", "custom")
        self.wants_statements = bool(getattr(model, "wants_statements", False))
        self.conversion_cost = getattr(model, "conversion_cost", None)

    def cost(self, layouts, program, statements=None) -> AttemptCost:
        if self.wants_statements:
            return self.model.cost(layouts, program, statements=statements)
        return self.model.cost(layouts, program)

    def __getattr__(self, name: str):  # explain(), rows() and the model's own attributes
        if name == "model":
            raise AttributeError(name)
        return getattr(self.model, name)


def adapt(model) -> CostModel:
    """``model`` itself when it is a :class:`CostModel`, else a :class:`CostModel` delegating to it."""
    return model if isinstance(model, CostModel) else _Adapted(model)


@dataclass(frozen=True)
class StatementCost:
    """One line of :meth:`explain`: what a model charged for one statement."""

    statement: str
    what: str
    bytes: int = 0
    wavefronts: int = 0
    note: str = ""

    def __str__(self) -> str:
        parts = [f"{self.statement}: {self.what}", f"{self.bytes} B"]
        if self.wavefronts:
            parts.append(f"{self.wavefronts} wavefronts")
        return ", ".join(parts) + (f" ({self.note})" if self.note else "")


def add_costs(a: AttemptCost, b: AttemptCost) -> AttemptCost:
    """``a + b`` field by field (``extra`` kept from ``a``).

    >>> add_costs(AttemptCost(1, 2, (3,)), AttemptCost(10, 20))
    AttemptCost(mem=11, regs=22, extra=(3,))
    """
    return AttemptCost(a.mem + b.mem, a.regs + b.regs, a.extra)


def conversion_price(model, src: Fragment, dst: Fragment, dtype: str) -> tuple[AttemptCost, object]:
    """What converting a fragment from ``src`` to ``dst`` adds to an attempt under ``model``: the
    converted copy's register slots, plus, when the model prices conversions
    (``model.conversion_cost(src, dst, dtype)`` returning an object with ``bytes``), those bytes
    as ``mem``.  Returns the cost and the model's figures (None when it prices none).

    >>> import layoutkit as lk
    >>> f = lk.Fragment([8, 8], forward_thread_fn=lambda i, j: i, forward_index_fn=lambda i, j: j)
    >>> conversion_price(CostModel(), f, f, "float32")
    (AttemptCost(mem=0, regs=8, extra=()), None)
    """
    price = adapt(model).conversion_cost
    if price is None:
        return AttemptCost(0, dst.local_size), None
    detail = price(src, dst, dtype)
    return AttemptCost(int(detail.bytes), dst.local_size), detail


def fragments_of(layouts: Mapping[str, Layout]) -> dict[str, Fragment]:
    return {k: v for k, v in layouts.items() if isinstance(v, Fragment)}


def check_statements(statements: Sequence[Statement] | None) -> tuple[Statement, ...]:
    if statements is None:
        return ()
    out = tuple(statements)
    for s in out:
        if not isinstance(s, Statement):
            raise CostModelError(f"a cost model takes layoutkit.cost.Statement objects; found {type(s).__name__}")
    return out
