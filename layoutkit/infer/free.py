"""Free mode over one connected component (step 3 of ``docs/reference.md#solver-modes``): every root is tried, the
cheapest attempt kept (ties: the earliest root in :func:`~.engine.canonical_order`).

An attempt runs its root, finishes the worklist, then every other op the same way.  When the
component's rules are all *local* (:func:`~.rules.register_rule`), a finished attempt may be checked
by :func:`~.settle.covered_roots`: the roots it covers would end in the same layouts and loop
layouts, hence the same score, and since only a strictly cheaper attempt replaces the kept one,
they are not run.  A chain of ``n`` loops costs ``O(n)`` rule runs instead of ``O(n**2)``; the
result is the one trying every root gives.

The work is bounded by a count, not a time (so the answer never depends on the machine's load): the
rule runs one component's free mode may take, :data:`FREE_RULE_RUNS`.  Where a component's rules are
not all local, or a cost model prices conversions, the attempts grow as roots times converted edges,
and each runs every op; past the budget free mode stops with a
:class:`~layoutkit.errors.ProofBudgetError` that names the component and says what settles it sooner
(``docs/reference.md#solver-modes``).

>>> from layoutkit.infer import Program
>>> from layoutkit.infer.engine import solve
>>> p = Program(threads=128)
>>> f = [p.alloc_fragment(f"f{k}", (64, 64), "float32") for k in range(21)]
>>> for a, b in zip(f, f[1:]):
...     _ = p.parallel((64, 64), writes=[(b, lambda i, j: (i, j))], reads=[(a, lambda i, j: (i, j))])
>>> solve(p).counts["rule runs"] < 10 * len(p.ops)
True
"""

from __future__ import annotations

from dataclasses import dataclass

from ..cost import Operand, Statement, add_costs, conversion_price
from ..errors import ProofBudgetError
from ..fragment.fragment import Fragment
from .conversions import LayoutConversion, conversion_edges
from .result import Derivation
from .rules import FREE, Conflict
from .settle import check_runs, covered_roots
from .state import Context, bfs

MAX_CHECKS = 4
"""Checks of finished attempts per pass over a component (each costs about :func:`.settle.check_runs`)."""
FREE_RULE_RUNS = 20_000
"""Rule runs free mode may spend on one connected component (its attempts and the checks of
:mod:`.settle` together) before it stops with a :class:`~layoutkit.errors.ProofBudgetError` (about 2 s
of work).  The largest components of the TileLang kernels the tests run take under 300, a chain of 150
loops about 1,000 (the roots :mod:`.settle` skips are not run), and a chain of 95 loops about 18,000 when
every root is run."""


@dataclass
class Budget:
    """What one component's free mode has spent of :data:`FREE_RULE_RUNS`: rule runs are read from the
    solve's shared counter, from ``start``; ``attempts`` counts the attempts begun."""

    comp: list
    start: int
    roots: int
    limit: int
    attempts: int = 0

    def check(self, ctx: Context) -> None:
        """Raise the :class:`~layoutkit.errors.ProofBudgetError` once the component has spent its budget."""
        spent = ctx.counts["rule runs"] - self.start
        if spent <= self.limit:
            return
        frags = sorted({b for op in self.comp for b in op.buffers if ctx.needs_layout(b)})
        names = ", ".join(op.name for op in self.comp[:4]) + (", ..." if len(self.comp) > 4 else "")
        example = frags[0] if frags else "?"
        raise ProofBudgetError(
            f"free-mode inference over a component of {len(self.comp)} ops ({names}) stopped undecided after "
            f"{spent} rule runs in {self.attempts} of its {self.roots} possible attempts (every root, plain and "
            f"with each fragment edge converted), past its budget of {self.limit} (FREE_RULE_RUNS); annotate the "
            f"layout of one of its fragments (Program.annotate_layout, e.g. {example}) or a loop's "
            "(Program.annotate_loop) so the strict and common levels settle it, use a cost model that prices no "
            "conversion ('register-count'), or split it into components that share no fragment", self.limit, spent)


def fragments_unsolved(ctx: Context, comp) -> bool:
    """Some fragment of ``comp`` has no layout."""
    return any(ctx.needs_layout(b) and b not in ctx.layouts for op in comp for b in op.buffers)


def statements(ctx: Context, comp) -> list[Statement]:
    """The ops of ``comp`` as :class:`layoutkit.cost.Statement` (loop layout, buffers, index maps)
    for cost models that set ``wants_statements``."""
    out = []
    for op in comp:
        operands = []
        if op.loop is not None:
            for a in op.accesses:
                buf = ctx.buffer(a.buffer)
                # a converted read sees its view's layout
                lay = ctx.views.get((op.uid, a.buffer)) or ctx.layouts.get(a.buffer)
                operands.append(Operand(a.buffer, buf.scope, buf.dtype, ctx.shape(a.buffer), a.is_write, a.indices,
                                        lay))
        else:
            for b in op.buffers:
                buf = ctx.buffer(b)
                operands.append(Operand(b, buf.scope, buf.dtype, ctx.shape(b), b in (op.args.get("C"),
                                        op.args.get("dst")), None, ctx.layouts.get(b)))
        out.append(Statement(op.name, op.kind, op.loop, ctx.loops.get(op.name), tuple(operands)))
    return out


def free_component(ctx: Context, comp, model, users) -> None:
    """Try every root (and, for models that price conversions, every root with one fragment ->
    fragment edge converted); keep the cheapest, the earliest of equals (plain attempts first).
    Models that price no conversion convert only when no plain attempt succeeds."""
    edges = conversion_edges(comp, ctx.is_fragment)
    plain: list[frozenset] = [frozenset()]
    converted = [frozenset([e]) for e in edges]
    if model.prices_conversions():
        passes = [(False, plain + converted), (True, plain + converted)]
    else:
        passes = [(False, plain), (True, plain), (False, converted), (True, converted)]
    best, first_error = None, None
    budget = Budget(comp, ctx.counts["rule runs"], len(comp) * sum(len(group) for _, group in passes),
                    FREE_RULE_RUNS)
    for planning_fills, group in passes:
        for convert in group:
            best, first_error = _roots(ctx, comp, model, users, convert, planning_fills, best, first_error, budget)
        if best is not None:
            break
    if best is None:
        raise first_error or Conflict("no available layout found", "?", [o.name for o in comp], ())
    _keep(ctx, *best)


def _roots(ctx: Context, comp, model, users, convert: frozenset, planning_fills: bool, best, first_error,
           budget: Budget):
    """The attempts from every root of ``comp`` with ``convert``: the new ``(best, first_error)``.
    A finished attempt may be checked (:func:`.settle.covered_roots`, when that costs
    fewer rule runs than the attempts it could save); the roots it covers end where it did, with the
    same score, so none would replace ``best``, and they are not run."""
    comp_set = {op.uid for op in comp}
    covered: set[int] = set()
    checks = 0
    check_cost = None
    for k, root in enumerate(comp):
        if root.uid in covered:
            continue
        runs = ctx.counts["rule runs"]
        budget.attempts += 1
        try:
            trial = attempt(ctx, comp, root, comp_set, users, convert, planning_fills, budget)
        except Conflict as err:
            first_error = first_error or err
            continue
        scored = None if fragments_unsolved(trial, comp) else score(trial, comp, model, convert)
        if scored is not None and (best is None or scored[0] < best[0]):
            best = (*scored, trial)
        if checks < MAX_CHECKS:
            check_cost = check_runs(comp) if check_cost is None else check_cost
            left = sum(1 for op in comp[k + 1:] if op.uid not in covered)
            if check_cost < left * (ctx.counts["rule runs"] - runs):
                checks += 1
                covered |= covered_roots(ctx, trial, comp, planning_fills)
    return best, first_error


def _keep(ctx: Context, score_, conversions, trial: Context) -> None:
    """Absorb the kept attempt: its free-level steps carry the score, its conversions join the map."""
    for b, steps in list(trial.written("derivations").items()):
        d = steps[-1]
        if d.level == "free":
            trial.derivations[b] = steps[:-1] + [Derivation(d.rule, d.level, d.op, d.action, score_)]
    for conv in conversions:
        trial.derivations[conv.buffer] = trial.derivations.get(conv.buffer, []) + [
            Derivation("conversion", "free", conv.op, "converted", conv.cost)]
    ctx.absorb(trial)
    ctx.conversions.extend(conversions)


def attempt(ctx: Context, comp, root, comp_set, users, convert: frozenset, planning_fills: bool,
            budget: Budget | None = None) -> Context:
    """One attempt: ``root`` first, then every other op in order, each followed by the worklist.
    ``planning_fills``: fills and transposes plan layouts like loops (beyond TileLang, where they
    propose nothing); only tried when no TileLang-like attempt lays every fragment out.  ``budget``
    (see :class:`Budget`) is checked after each op's worklist."""
    trial = ctx.attempt(convert)
    trial.fallback = planning_fills
    for op in [root] + [op for op in comp if op is not root]:
        bfs(trial, [op], FREE, comp_set, users)
        if budget is not None:
            budget.check(trial)
    trial.fallback = False
    return trial


def score(trial: Context, comp, model, convert: frozenset):
    """``(score, conversions)`` of a finished attempt, or None when a converted edge is void (the view
    was never set, the buffer has no layout of its own, or the view equals it)."""
    frags = {b: trial.layouts[b] for op in comp for b in op.buffers if b in trial.layouts}
    if model.wants_statements:
        cost = model.cost(frags, trial.program, statements=statements(trial, comp))
    else:
        cost = model.cost(frags, trial.program)
    names = {op.uid: op.name for op in comp}
    conversions = []
    for uid, b in sorted(convert):
        src, dst = trial.layouts.get(b), trial.views.get((uid, b))
        if not isinstance(src, Fragment) or not isinstance(dst, Fragment) or src.is_equal(dst):
            return None
        price, detail = conversion_price(model, src, dst, trial.buffer(b).dtype)
        cost = add_costs(cost, price)
        conversions.append(LayoutConversion(b, names[uid], src, dst, price, detail))
    return cost, conversions
