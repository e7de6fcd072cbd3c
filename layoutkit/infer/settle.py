"""Whether one finished free-mode attempt stands for the attempts from every other root.

Free mode (:mod:`.free`) runs a component once per root.  Let ``S`` be the state one attempt ends in
and ``W`` what it wrote: layouts of buffers and loop layouts of ops that had none before the attempt
(it must not have changed a layout set before it).  For an op ``o`` let ``N(o)`` be its entries in
``W`` (its buffers' layouts, its loop layout).  When every op of the component has a *local* rule
(:func:`~.rules.register_rule`: its result depends only on the entries of its own buffers and loop),
:func:`settled` runs each op's rule on every *view* of ``S`` restricted to ``N(o)`` that an attempt
can show it (any subset of its buffers, its loop hidden; and the whole of ``N(o)``) and asks:

(a) the rule raises nothing, proposes entries only for its own buffers and loop, each equal to ``S``'s;
(b) a run that adds something (its *effect*) completes ``N(o)``; a run that adds nothing is *silent*;
(c) with every buffer shown and the loop hidden, the run is not silent;
(d) silence is closed under hiding more: non-silent on a view, non-silent on any larger non-full one;
(e) no nonempty set ``M`` of ``W``'s buffers is *stuck*: every op touching ``M`` silent on the view
    that hides exactly ``M`` (the greatest such set is found by deletion, valid by (d)).

Then every attempt, from any root, ends with the layouts and loop layouts of ``S``.  By (a), and
induction over the rule runs, an attempt's state stays inside ``S`` (each run sees a view of ``S``,
proposes ``S``'s entries, and a commit of an equal entry changes nothing) and nothing conflicts.  A
loop entry is set only by its op's run, which by (b) completes ``N(o)``, so only the enumerated views
arise.  For completeness, let ``G`` be the end state: every op runs at least once, and a change to a
buffer re-queues every other user, so each op's last run saw ``G``'s view of it; an op that ran with
effect completed ``N(o)``, so an op still missing entries was silent on ``G``'s view.  If only loops
were missing, (c) contradicts it; otherwise the missing buffers form a stuck set, which (e) rules
out.  Equal layouts give an equal score, and free mode keeps the earliest of equal scores, so the
other roots cannot change the result.

>>> from layoutkit.infer import Program
>>> from layoutkit.infer.engine import solve
>>> p = Program(threads=128)
>>> a = p.alloc_fragment("a", (64, 64), "float32"); b = p.alloc_fragment("b", (64, 64), "float32")
>>> _ = p.parallel((64, 64), writes=[(b, lambda i, j: (i, j))], reads=[(a, lambda i, j: (i, j))])
>>> _ = p.parallel((64, 64), writes=[(a, lambda i, j: (i, j))], reads=[(b, lambda i, j: (i, j))])
>>> solve(p).counts["rule runs"]   # strict 2, common 2, the first attempt 3, 5 views of each op
17
"""

from __future__ import annotations

from collections.abc import Mapping

from .conversions import MaskedLayouts
from .rules import FREE, RuleContext, RuleResult, get_rule, rule_is_local
from .state import Context

MAX_ENTRIES = 6
"""An op with more written buffers than this is not checked (``2**n`` views)."""

_LOOP = object()  # the op's own loop layout among its entries


def settled(base: Context, trial: Context, comp, fallback: bool) -> bool:
    """True when every root's plain attempt over ``comp`` from ``base`` (fills planning layouts when
    ``fallback``) ends with ``trial``'s layouts and loop layouts (see the module doc)."""
    layouts, loops = trial.written("layouts"), trial.written("loops")
    touched = {b for op in comp for b in op.buffers}
    if any(not rule_is_local(op.kind, base.target) for op in comp) or any(b in base.siblings for b in touched):
        return False
    if any(k in base.layouts for k in layouts) or any(k in base.loops for k in loops):
        return False
    if not set(layouts) <= touched or not set(loops) <= {op.name for op in comp}:
        return False
    silent: dict[int, dict[frozenset, bool]] = {}
    for op in comp:
        table = _views(trial, op, layouts, op.name in loops, fallback)
        if table is None:
            return False
        silent[op.uid] = table
    return not _stuck(comp, silent, layouts)


def _entries(op, written: Mapping) -> tuple[str, ...]:
    return tuple(b for b in dict.fromkeys(op.buffers) if b in written)


def _views(trial: Context, op, written: Mapping, has_loop: bool, fallback: bool) -> dict[frozenset, bool] | None:
    """Shown buffers -> whether ``op`` is silent there (its loop hidden when it is an entry), or None
    when a condition (a)-(d) fails."""
    entries = _entries(op, written)
    if len(entries) > MAX_ENTRIES:
        return None
    full = frozenset(entries) | ({_LOOP} if has_loop else frozenset())
    table: dict[frozenset, bool] = {}
    for mask in range(1 << len(entries)):
        shown = frozenset(b for k, b in enumerate(entries) if mask >> k & 1)
        effect = _effect(trial, op, entries, shown, not has_loop, fallback)
        if effect is None or (effect and shown | effect != full):
            return None
        table[shown] = not effect
    if has_loop:  # (c), and the whole view adds nothing
        if table[frozenset(entries)] or _effect(trial, op, entries, frozenset(entries), True, fallback) != set():
            return None
    for shown, quiet in table.items():
        for b in entries:
            bigger = shown | {b}
            if not quiet and b not in shown and (has_loop or bigger != full) and table[bigger]:
                return None
    return table


def _effect(trial: Context, op, entries, shown: frozenset, loop_shown: bool, fallback: bool) -> set | None:
    """What ``op``'s rule adds to the view of ``trial`` showing ``shown`` of ``entries`` (and its loop
    when ``loop_shown``), or None when it raises or proposes anything ``trial`` does not hold."""
    hidden = {b: None for b in entries if b not in shown}
    layouts = MaskedLayouts(trial.layouts, hidden) if hidden else trial.layouts
    loops = trial.loops if loop_shown else MaskedLayouts(trial.loops, {op.name: None})
    view = RuleContext(trial.program, trial.rng, layouts, loops, fallback, trial.memo)
    trial.counts["rule runs"] += 1
    try:
        res = get_rule(op.kind, trial.target)(op, view, FREE)
    except Exception:  # noqa: BLE001  (a view no attempt reaches may fail any way; it only means "unproved")
        return None
    if not isinstance(res, RuleResult):
        res = RuleResult(res)
    if res.loops:
        return None
    effect: set = set()
    for name, lay in res.layouts.items():
        if name not in op.buffers or not _same(lay, trial.layouts.get(name)):
            return None
        if name in hidden:
            effect.add(name)
    if res.loop is not None:
        if not _same(res.loop, trial.loops.get(op.name)):
            return None
        if not loop_shown:
            effect.add(_LOOP)
    return effect


def _same(new, held) -> bool:
    """``new`` is what the state holds: the entry a commit would leave unchanged, tag included."""
    return held is not None and (new is held or (new == held and new.tag == held.tag))


def _stuck(comp, silent: dict[int, dict[frozenset, bool]], written: Mapping) -> bool:
    """Condition (e) fails: some nonempty set of written buffers is stuck (greatest one by deletion)."""
    users: dict[str, list] = {}
    for op in comp:
        entries = _entries(op, written)
        for b in entries:
            users.setdefault(b, []).append((op.uid, entries))
    missing = set(written)
    queue = list(written)
    while queue:
        b = queue.pop()
        if b not in missing:
            continue
        if all(silent[uid][frozenset(x for x in entries if x not in missing)] for uid, entries in users[b]):
            continue
        missing.discard(b)
        queue.extend(x for _uid, entries in users[b] for x in entries if x in missing)
    return bool(missing)
