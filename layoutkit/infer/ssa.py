"""Layout inference over SSA values: every value class gets one layout (``docs/mosaic_gpu.md#the-solver``).

Front ends whose IR gives each SSA value its own layout (vectors in registers, references in shared or
tensor memory) state the problem as *variables* (classes of values that share a layout), *pins* (a
layout fixed by the program) and *constraints* over a few variables.  Layouts are opaque hashable
values here: a constraint brings its own ``check`` (all its variables assigned) and ``propose``
(candidate assignments from a partial one).  The search propagates forced candidates, then tries
proposed ones in constraint order (preferred before ``low`` ones), then each variable's defaults,
backtracking on a failed check; every tried guess costs one unit of ``fuel``.

Law: a returned assignment gives every variable a layout and passes every constraint's ``check``.

>>> p = SsaProblem()
>>> a, b = p.variable("a"), p.variable("b")
>>> p.pin(a, "row", "a = load")
>>> p.add(Constraint((a, b), lambda ls: ls[0] == ls[1], same_as(a, b), "b = exp(a)"))
>>> solve(p, fuel=10)
{0: 'row', 1: 'row'}
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import LayoutConflictError, LimitError

Proposal = tuple[int, Hashable, bool]
"""``(variable, layout, forced)``: a forced proposal is the only layout the constraint allows."""


@dataclass(frozen=True)
class Constraint:
    """A relation among ``variables`` (checked once all are assigned); ``what`` names the op for errors."""

    variables: tuple[int, ...]
    check: Callable[[tuple[Hashable, ...]], bool]
    propose: Callable[[Mapping[int, Hashable]], Iterable[Proposal]] | None = None
    what: str = ""
    early: bool = False
    """Its proposals come before those of the other constraints (a front end's cheapest choices)."""


def same_as(a: int, b: int, forced: bool = False) -> Callable[[Mapping[int, Hashable]], Iterable[Proposal]]:
    """Propose the known side's layout for the unknown side of ``a`` and ``b``."""
    def propose(known: Mapping[int, Hashable]) -> Iterable[Proposal]:
        if a in known and b not in known:
            yield b, known[a], forced
        elif b in known and a not in known:
            yield a, known[b], forced
    return propose


@dataclass
class SsaProblem:
    """Variables, pins, constraints and defaults (see the module docstring)."""

    names: list[str] = field(default_factory=list)
    pins: dict[int, tuple[Hashable, str]] = field(default_factory=dict)
    constraints: list[Constraint] = field(default_factory=list)
    defaults: dict[int, tuple[Hashable, ...]] = field(default_factory=dict)

    def variable(self, name: str) -> int:
        self.names.append(name)
        return len(self.names) - 1

    def pin(self, var: int, layout: Hashable, what: str) -> None:
        old = self.pins.get(var)
        if old is not None and old[0] != layout:
            raise SsaConflictError(f"{self.names[var]} is pinned to {old[0]} by {old[1]} and to {layout} by {what}",
                                   ((old[1], old[0]), (what, layout)))
        self.pins[var] = (layout, what)

    def add(self, constraint: Constraint) -> None:
        self.constraints.append(constraint)

    def default(self, var: int, layouts: Sequence[Hashable]) -> None:
        self.defaults[var] = tuple(layouts)


class SsaConflictError(LayoutConflictError):
    """No assignment satisfies the constraints; ``witness``: the ops and the layouts they demand."""

    def __init__(self, message: str, witness: object = None):
        super().__init__(message)
        self.witness = witness


class SsaFuelError(LimitError):
    """The search ran out of fuel before it found an assignment or proved there is none; ``witness``: the
    constraint that had failed deepest by then and the layouts it saw (None when none had failed)."""

    def __init__(self, message: str, witness: object = None):
        super().__init__(message)
        self.witness = witness


@dataclass
class _Search:
    problem: SsaProblem
    fuel: int
    low: Callable[[Hashable], bool]
    by_var: dict[int, list[int]] = field(default_factory=dict)
    ordered: list[Constraint] = field(default_factory=list)
    deepest: tuple[int, int, tuple[Hashable, ...]] = (-1, -1, ())

    def witness(self) -> tuple[str, dict[int, Hashable]] | None:
        _, ci, layouts = self.deepest
        if ci < 0:
            return None
        c = self.problem.constraints[ci]
        return c.what, dict(zip(c.variables, layouts))

    def hint(self) -> str:
        found = self.witness()
        if found is None:
            return ""
        what, layouts = found
        demands = ", ".join(f"{self.problem.names[v]} = {layout}" for v, layout in layouts.items())
        return f"; the deepest failure so far: {what} cannot hold: {demands}"

    def failing(self, known: Mapping[int, Hashable], touched: Iterable[int]) -> int | None:
        seen: set[int] = set()
        for v in touched:
            for ci in self.by_var.get(v, ()):
                if ci in seen:
                    continue
                seen.add(ci)
                c = self.problem.constraints[ci]
                if all(x in known for x in c.variables):
                    layouts = tuple(known[x] for x in c.variables)
                    if not c.check(layouts):
                        if len(known) > self.deepest[0]:
                            self.deepest = (len(known), ci, layouts)
                        return ci
        return None

    def propagate(self, known: dict[int, Hashable], touched: list[int]) -> bool:
        """Apply forced proposals until none is left; False on a failed check."""
        while True:
            if self.failing(known, touched) is not None:
                return False
            touched = []
            for c in self.problem.constraints:
                if c.propose is None:
                    continue
                for var, layout, forced in c.propose(known):
                    if forced and var not in known:
                        known[var] = layout
                        touched.append(var)
            if not touched:
                return True

    def candidates(self, known: Mapping[int, Hashable]) -> Iterable[tuple[int, Hashable]]:
        late: list[tuple[int, Hashable]] = []
        for c in self.ordered:
            if c.propose is None:
                continue
            for var, layout, _ in c.propose(known):
                if var in known:
                    continue
                if self.low(layout):
                    late.append((var, layout))
                else:
                    yield var, layout
        yield from late
        for var in range(len(self.problem.names)):
            if var not in known:
                for layout in self.problem.defaults.get(var, ()):
                    yield var, layout

    def run(self, known: dict[int, Hashable]) -> dict[int, Hashable] | None:
        if len(known) == len(self.problem.names):
            return known
        tried: set[tuple[int, Hashable]] = set()
        for var, layout in self.candidates(known):
            if (var, layout) in tried:
                continue
            tried.add((var, layout))
            if self.fuel <= 0:
                raise SsaFuelError("layout inference ran out of fuel before it found an assignment; pin more layouts "
                                   f"(layout casts) or raise the fuel{self.hint()}", self.witness())
            self.fuel -= 1
            trial = dict(known)
            trial[var] = layout
            if not self.propagate(trial, [var]):
                continue
            found = self.run(trial)
            if found is not None:
                return found
        return None


def solve(problem: SsaProblem, *, fuel: int, low: Callable[[Hashable], bool] = lambda layout: False
          ) -> dict[int, Hashable]:
    """An assignment of every variable (see the module docstring).  Raises :class:`SsaConflictError` naming
    the constraint that failed deepest in the search and the layouts it saw, :class:`SsaFuelError` when the
    fuel runs out."""
    search = _Search(problem, fuel, low)
    search.ordered = [c for c in problem.constraints if c.early] + [c for c in problem.constraints if not c.early]
    for ci, c in enumerate(problem.constraints):
        for v in set(c.variables):
            search.by_var.setdefault(v, []).append(ci)
    known: dict[int, Hashable] = {v: layout for v, (layout, _) in problem.pins.items()}
    found = search.run(known) if search.propagate(known, list(known)) else None
    if found is None:
        _, ci, layouts = search.deepest
        if ci < 0:
            unknown = [problem.names[v] for v in range(len(problem.names)) if v not in known]
            raise SsaConflictError(f"no candidate layout fits {', '.join(unknown[:4]) or 'the program'}", unknown)
        c = problem.constraints[ci]
        demands = ", ".join(f"{problem.names[v]} = {layout}" for v, layout in zip(c.variables, layouts))
        raise SsaConflictError(f"{c.what} cannot hold: {demands}", (c.what, dict(zip(c.variables, layouts))))
    return found
