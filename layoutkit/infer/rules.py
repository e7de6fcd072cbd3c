"""What a layout rule sees and returns: the levels, :class:`RuleContext`, :class:`RuleResult` and the
conflicts a rule or the solver raises.

A rule is a pure function ``fn(op, ctx, level) -> RuleResult`` (``level``: :data:`STRICT`, :data:`COMMON` or
:data:`FREE`): it reads the solver state through the read-only :class:`RuleContext` and returns the layouts
it proposes, the op's loop layout and guard; the engine commits them.  (A plain ``{buffer: Layout}`` mapping
is accepted as the layouts alone.)  Which rule an op kind has on a target is the tile-op registry's answer
(:mod:`.tileop`).

>>> def noop(op, ctx, level):
...     return EMPTY
>>> noop(None, None, STRICT).layouts
{}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..errors import LayoutError
from ..scopes import FRAGMENT, REDUCER
from .guards import Predicate

STRICT, COMMON, FREE = 2, 1, 0
LEVEL_NAMES = {STRICT: "strict", COMMON: "common", FREE: "free"}


@dataclass(frozen=True)
class RuleResult:
    """What a rule proposes for one op: ``layouts`` (buffer -> Layout), the op's ``loop`` layout (loop ops),
    ``loops`` of other ops it solved (a region's inner ops), and ``predicate``: the guard the loop runs under
    (partial tiles, replicas) or a note on the op (reductions over idle threads), a
    :class:`~layoutkit.infer.guards.Predicate`."""

    layouts: Mapping[str, Any] = field(default_factory=dict)
    loop: Any = None
    loops: Mapping[str, Any] = field(default_factory=dict)
    predicate: Predicate | None = None


EMPTY = RuleResult()
"""The result of a rule that proposes nothing."""


_MISSING = object()


class RuleConflict(LayoutError):
    """Raised by a rule when the layouts it sees cannot be reconciled (the engine turns it into a
    :class:`~layoutkit.errors.LayoutConflictError` or discards a free-mode attempt)."""

    def __init__(self, message: str, op: str, buffer: str | None = None):
        super().__init__(message)
        self.op = op
        self.buffer = buffer


class Conflict(LayoutError):
    """Two proposals for one buffer cannot be reconciled (the solver's; :func:`~.engine.infer_layouts`
    explains it as a :class:`~layoutkit.errors.LayoutConflictError`)."""

    def __init__(self, message: str, buffer: str, ops: Sequence[str], layouts: Sequence[Any]):
        super().__init__(message)
        self.buffer = buffer
        self.ops = tuple(ops)
        self.layouts = tuple(layouts)


class ProgramView:
    """Read-only lookups of a solver state's program by buffer name (shared by the solver's context and the
    read-only :class:`RuleContext` rules see)."""

    __slots__ = ()
    program: Any

    def buffer(self, name: str):
        return self.program.buffers[name]

    def shape(self, name: str) -> tuple[int, ...]:
        return self.program.shape_of(name)

    def is_fragment(self, name: str) -> bool:
        return self.program.buffers[name].scope == FRAGMENT

    def is_reducer(self, name: str) -> bool:
        return self.program.buffers[name].scope == REDUCER

    def needs_layout(self, name: str) -> bool:
        """A register buffer inference must lay out: a fragment or a reducer."""
        return self.program.buffers[name].scope in (FRAGMENT, REDUCER)


class RuleContext(ProgramView):
    """The solver state a rule sees, read-only: the program, target (its string, and its ``hooks``: the
    :class:`~layoutkit.infer.target.Target` a rule may ask for target facts) and thread range, the layouts and
    loop layouts so far, whether fills plan layouts (``fallback``), and :meth:`once`, a per-solve memo."""

    __slots__ = ("program", "target", "hooks", "rng", "layouts", "loops", "fallback", "_memo")

    def __init__(self, program, rng: tuple[int, int], layouts: Mapping, loops: Mapping, fallback: bool, memo: dict):
        self.program = program
        self.target = program.target
        self.hooks = program.hooks
        self.rng = rng
        self.layouts = MappingProxyType(layouts)
        self.loops = MappingProxyType(loops)
        self.fallback = fallback
        self._memo = memo

    def once(self, rule: Callable, key, compute: Callable[[], Any]):
        """``compute()`` the first time ``rule`` asks for ``key`` in this solve, the same value after
        (for results of a whole program that no cache can key, e.g. a region's sub-solve)."""
        full = (rule, key)
        hit = self._memo.get(full, _MISSING)
        if hit is _MISSING:
            hit = self._memo[full] = compute()
        return hit


def op_range(op, rng: tuple[int, int]) -> tuple[int, int]:
    """The ``(min, extent)`` of the threads ``op`` runs on: its ``thread_range`` (recorded inside
    :meth:`~layoutkit.infer.Program.thread_bounds`), else the program's ``rng``.

    >>> from layoutkit.infer.ops import Op
    >>> op_range(Op("fill", 0, {"thread_range": [128, 128]}), (0, 256)), op_range(Op("fill", 1), (0, 256))
    ((128, 128), (0, 256))
    """
    bounds = op.args.get("thread_range") if op.args else None
    return rng if bounds is None else (int(bounds[0]), int(bounds[1]))


Rule = Callable[..., RuleResult]
"""``rule(op, ctx, level) -> RuleResult``: an op's layout rule (see the module doc)."""
